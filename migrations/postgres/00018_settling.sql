-- +goose NO TRANSACTION
-- +goose Up
-- A payment the bank verified whose settle is not done yet (Mellat) has a
-- status of its own: settling (ARCHITECTURE §3). payments.status's CHECK
-- (inline in 00001, so PostgreSQL named it payments_status_check) takes it.
-- The swap is one ALTER TABLE (atomic); the new CHECK is added NOT VALID,
-- so the statement holds its ACCESS EXCLUSIVE lock for no scan, and is
-- validated next under a lock that lets writes go on. Built without a
-- transaction for the CONCURRENTLY index builds below; every statement is
-- safe to run again after an interruption.
ALTER TABLE payments
    DROP CONSTRAINT IF EXISTS payments_status_check,
    ADD CONSTRAINT payments_status_check CHECK (status IN
        ('created', 'awaiting_payment', 'pending_verification', 'settling',
         'credited', 'failed', 'needs_review')) NOT VALID;
ALTER TABLE payments VALIDATE CONSTRAINT payments_status_check;

-- Payments verified before this version whose settle is unknown were kept
-- as pending_verification with reason settle_unknown: they are settling.
-- Each gets its event (the chain of events ends in the status), at the
-- time the payment last changed, in the same statement as the change. One
-- held by an actor right now is left: its next check verifies (43) and
-- moves it to settling.
WITH moved AS (
    UPDATE payments SET status = 'settling'
     WHERE status = 'pending_verification' AND status_reason = 'settle_unknown' AND lease_until IS NULL
    RETURNING id, updated_at
)
INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'pending_verification', 'settling', 'worker', 'settle_unknown', updated_at FROM moved ORDER BY id;

-- The partial indexes of open payments take settling too: the admin
-- list's (00007) and the wallet page's (00008); the queries meant to read
-- them name exactly these lists (internal/paymentread). Each is built
-- under a new name, the old one dropped, the new one renamed, so one is
-- always there; an interrupted build's INVALID index is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS payments_open_created_new_idx;
CREATE INDEX CONCURRENTLY payments_open_created_new_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS payments_open_created_idx;
ALTER INDEX payments_open_created_new_idx RENAME TO payments_open_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS payments_user_open_new_idx;
CREATE INDEX CONCURRENTLY payments_user_open_new_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS payments_user_open_idx;
ALTER INDEX payments_user_open_new_idx RENAME TO payments_user_open_idx;

-- +goose Down
-- Settling payments go back to the old spelling (pending_verification,
-- settle_unknown: the old code verifies, 43, and settles again), with
-- their event, before the CHECK loses settling.
WITH moved AS (
    UPDATE payments SET status = 'pending_verification', status_reason = 'settle_unknown'
     WHERE status = 'settling'
    RETURNING id, updated_at
)
INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'settling', 'pending_verification', 'worker', 'settle_unknown', updated_at FROM moved ORDER BY id;
ALTER TABLE payments
    DROP CONSTRAINT IF EXISTS payments_status_check,
    ADD CONSTRAINT payments_status_check CHECK (status IN
        ('created', 'awaiting_payment', 'pending_verification',
         'credited', 'failed', 'needs_review'));
DROP INDEX IF EXISTS payments_user_open_idx;
CREATE INDEX payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'needs_review');
DROP INDEX IF EXISTS payments_open_created_idx;
CREATE INDEX payments_open_created_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');
