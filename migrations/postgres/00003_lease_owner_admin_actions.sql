-- +goose Up
-- Who holds a payment's verification lease: transitions made under a lease
-- only apply while the lease is still theirs.
ALTER TABLE payments ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';

-- Every change an admin makes to a payment, with who and why.
CREATE TABLE admin_actions (
    id          BIGSERIAL PRIMARY KEY,
    payment_id  BIGINT NOT NULL REFERENCES payments (id),
    admin_id    BIGINT NOT NULL REFERENCES users (id),
    action      TEXT NOT NULL CHECK (action IN ('recheck', 'close_failed')),
    note        TEXT NOT NULL DEFAULT '',
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX admin_actions_payment_idx ON admin_actions (payment_id, id);

-- +goose Down
DROP TABLE admin_actions;
ALTER TABLE payments DROP COLUMN lease_owner;
