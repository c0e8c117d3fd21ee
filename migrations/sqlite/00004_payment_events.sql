-- +goose Up
-- The state machine's log: one row per status change of a payment, written
-- in the same transaction as the change (append-only; nothing updates or
-- deletes it). actor is who took the edge; reason is a code the pages and
-- the admin console translate (never a Go error string).
CREATE TABLE payment_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id   BIGINT NOT NULL REFERENCES payments (id),
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('submit', 'callback', 'worker', 'reconcile', 'admin')),
    reason       TEXT NOT NULL DEFAULT '',
    gateway_code INTEGER,
    admin_id     BIGINT REFERENCES users (id),
    created_at   DATETIME NOT NULL
);
CREATE INDEX payment_events_payment_idx ON payment_events (payment_id, id);

-- When the bank was last asked about the payment (verify or inquiry), by
-- anyone: callbacks within PENDING_RECHECK_AFTER of it are answered from
-- the row (returned_at marks the first callback, which is checked at once).
-- opened_at is when the payment last became open (its creation,
-- or a reopen to ask the bank again): the worker's deadlines count from it.
ALTER TABLE payments ADD COLUMN last_checked_at DATETIME;
ALTER TABLE payments ADD COLUMN opened_at DATETIME;
ALTER TABLE payments ADD COLUMN returned_at DATETIME;
UPDATE payments SET opened_at = created_at;

-- admin_actions becomes the audit log of every admin action, not only those
-- on a payment: payment_id and target_user_id are optional, result says what
-- the action did (e.g. a check that did not run because another actor held
-- the payment). The set of actions is Go's (internal/audit); rows are only
-- ever inserted.
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
INSERT INTO admin_actions_new (id, admin_id, action, payment_id, note, from_status, to_status, result, created_at)
    SELECT id, admin_id, action, payment_id, note, from_status, to_status, 'done', created_at FROM admin_actions;
DROP TABLE admin_actions;
ALTER TABLE admin_actions_new RENAME TO admin_actions;
CREATE INDEX admin_actions_payment_idx ON admin_actions (payment_id, id);
CREATE INDEX admin_actions_admin_idx ON admin_actions (admin_id, id);
CREATE INDEX admin_actions_created_idx ON admin_actions (created_at, id);

-- Reconciliation reports say how many items its budget did not reach.
ALTER TABLE reconcile_reports ADD COLUMN unreached INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE reconcile_reports DROP COLUMN unreached;
DROP TABLE payment_events;
ALTER TABLE payments DROP COLUMN returned_at;
ALTER TABLE payments DROP COLUMN opened_at;
ALTER TABLE payments DROP COLUMN last_checked_at;
