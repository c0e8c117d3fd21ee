-- +goose Up
-- An admin's one-time enrolment code, as a hash (see the PostgreSQL
-- migration of the same number).
ALTER TABLE users ADD COLUMN totp_enrol_hash TEXT NOT NULL DEFAULT '';
-- Actions from the command line have no admin: admin_id becomes optional
-- (SQLite rebuilds the table to change a column).
CREATE TABLE admin_actions_new (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    admin_id       BIGINT REFERENCES users (id),
    action         TEXT NOT NULL CHECK (action <> ''),
    payment_id     BIGINT REFERENCES payments (id),
    target_user_id BIGINT REFERENCES users (id),
    note           TEXT NOT NULL DEFAULT '',
    from_status    TEXT NOT NULL DEFAULT '',
    to_status      TEXT NOT NULL DEFAULT '',
    result         TEXT NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL
);
INSERT INTO admin_actions_new (id, admin_id, action, payment_id, target_user_id, note, from_status, to_status, result, created_at)
    SELECT id, admin_id, action, payment_id, target_user_id, note, from_status, to_status, result, created_at FROM admin_actions;
DROP TABLE admin_actions;
ALTER TABLE admin_actions_new RENAME TO admin_actions;
CREATE INDEX admin_actions_payment_idx ON admin_actions (payment_id, id);
CREATE INDEX admin_actions_admin_idx ON admin_actions (admin_id, id);
CREATE INDEX admin_actions_created_idx ON admin_actions (created_at, id);

-- +goose Down
DELETE FROM admin_actions WHERE admin_id IS NULL;
CREATE TABLE admin_actions_new (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    admin_id       BIGINT NOT NULL REFERENCES users (id),
    action         TEXT NOT NULL CHECK (action <> ''),
    payment_id     BIGINT REFERENCES payments (id),
    target_user_id BIGINT REFERENCES users (id),
    note           TEXT NOT NULL DEFAULT '',
    from_status    TEXT NOT NULL DEFAULT '',
    to_status      TEXT NOT NULL DEFAULT '',
    result         TEXT NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL
);
INSERT INTO admin_actions_new SELECT id, admin_id, action, payment_id, target_user_id, note, from_status, to_status, result, created_at FROM admin_actions;
DROP TABLE admin_actions;
ALTER TABLE admin_actions_new RENAME TO admin_actions;
CREATE INDEX admin_actions_payment_idx ON admin_actions (payment_id, id);
CREATE INDEX admin_actions_admin_idx ON admin_actions (admin_id, id);
CREATE INDEX admin_actions_created_idx ON admin_actions (created_at, id);
ALTER TABLE users DROP COLUMN totp_enrol_hash;
