-- +goose Up
-- The state machine's log: one row per status change of a payment, written
-- in the same transaction as the change (append-only; nothing updates or
-- deletes it). actor is who took the edge; reason is a code the pages and
-- the admin console translate (never a Go error string).
CREATE TABLE payment_events (
    id           BIGSERIAL PRIMARY KEY,
    payment_id   BIGINT NOT NULL REFERENCES payments (id),
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('submit', 'callback', 'worker', 'reconcile', 'admin')),
    reason       TEXT NOT NULL DEFAULT '',
    gateway_code INTEGER,
    admin_id     BIGINT REFERENCES users (id),
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX payment_events_payment_idx ON payment_events (payment_id, id);

-- When the bank was last asked about the payment (verify or inquiry), by
-- anyone: callbacks within PENDING_RECHECK_AFTER of it are answered from
-- the row. opened_at is when the payment last became open (its creation,
-- or a reopen to ask the bank again): the worker's deadlines count from it.
ALTER TABLE payments ADD COLUMN last_checked_at TIMESTAMPTZ;
ALTER TABLE payments ADD COLUMN opened_at TIMESTAMPTZ;
UPDATE payments SET opened_at = created_at;

-- Admin actions now also record a check that did not run (another actor
-- held the payment) and a reopen.
ALTER TABLE admin_actions DROP CONSTRAINT admin_actions_action_check;
ALTER TABLE admin_actions ADD CONSTRAINT admin_actions_action_check
    CHECK (action IN ('recheck', 'recheck_skipped', 'close_failed'));

-- +goose Down
ALTER TABLE admin_actions DROP CONSTRAINT admin_actions_action_check;
ALTER TABLE admin_actions ADD CONSTRAINT admin_actions_action_check CHECK (action IN ('recheck', 'close_failed'));
ALTER TABLE payments DROP COLUMN opened_at;
ALTER TABLE payments DROP COLUMN last_checked_at;
DROP TABLE payment_events;
