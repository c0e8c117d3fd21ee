-- +goose Up
-- The database's own time of each row's insert, on the four tables the
-- mail scans read by a cursor (internal/notify): a scan never passes a row
-- inserted after the start of a transaction that wrote to the table and
-- is still open, whose lower id may commit later. Added without a default
-- first (no rewrite of a large table), then given one for new rows; rows
-- from before are NULL, all committed (the ALTER waited for their writers).
-- Each ALTER takes its table's strongest lock for a moment; queued behind
-- a long reader (a dump, a report), it would stop every credit and
-- transfer behind it: past 5 s of waiting the migration fails instead,
-- changing nothing, and is run again.
SET LOCAL lock_timeout = '5s';
ALTER TABLE topup_events ADD COLUMN inserted_at TIMESTAMPTZ;
ALTER TABLE topup_events ALTER COLUMN inserted_at SET DEFAULT clock_timestamp();
ALTER TABLE transfers ADD COLUMN inserted_at TIMESTAMPTZ;
ALTER TABLE transfers ALTER COLUMN inserted_at SET DEFAULT clock_timestamp();
ALTER TABLE card_refund_events ADD COLUMN inserted_at TIMESTAMPTZ;
ALTER TABLE card_refund_events ALTER COLUMN inserted_at SET DEFAULT clock_timestamp();
ALTER TABLE withdrawal_events ADD COLUMN inserted_at TIMESTAMPTZ;
ALTER TABLE withdrawal_events ALTER COLUMN inserted_at SET DEFAULT clock_timestamp();

-- +goose Down
ALTER TABLE withdrawal_events DROP COLUMN inserted_at;
ALTER TABLE card_refund_events DROP COLUMN inserted_at;
ALTER TABLE transfers DROP COLUMN inserted_at;
ALTER TABLE topup_events DROP COLUMN inserted_at;
