-- +goose NO TRANSACTION
-- +goose Up
-- A payment the bank verified that cannot be credited (another amount, no
-- reference, a receipt verified on its own, a reference another payment
-- holds, a settle refused) is reversed by the worker (ARCHITECTURE §3):
-- status reversing, and the reverse's intent, written before its one
-- call (reverse_sent_at). The column is added without a default (no
-- rewrite). topups.status's CHECK (payments_status_check in 00018, renamed
-- by 00023) takes reversing: the swap is one ALTER TABLE (atomic), the new
-- CHECK added NOT VALID so the statement holds its ACCESS EXCLUSIVE lock
-- for no scan, then validated under a lock that lets writes go on. Each
-- ALTER waits at most 5 s for its lock (queued behind a long reader it
-- would stop every credit behind it): past that the migration fails,
-- changing nothing, and is run again; every statement is safe to repeat.
SET lock_timeout = '5s';
ALTER TABLE topups ADD COLUMN IF NOT EXISTS reverse_sent_at TIMESTAMPTZ;
ALTER TABLE topups
    DROP CONSTRAINT IF EXISTS topups_status_check,
    ADD CONSTRAINT topups_status_check CHECK (status IN
        ('created', 'awaiting_payment', 'pending_verification', 'settling', 'reversing',
         'credited', 'failed', 'needs_review')) NOT VALID;
ALTER TABLE topups VALIDATE CONSTRAINT topups_status_check;
RESET lock_timeout;

-- +goose Down
-- Reversing payments go to review (a person looks at the bank), with
-- their event, before the CHECK loses reversing. One whose reverse was
-- sent (reverse_sent_at, dropped below) says its outcome is unknown
-- (unknown_too_long), never "window closed", which reads as not sent:
-- an admin who refunded it by hand would pay the payer twice.
SET lock_timeout = '5s';
WITH moved AS (
    UPDATE topups SET status = 'needs_review',
           status_reason = CASE WHEN reverse_sent_at IS NULL THEN 'reverse_window_closed' ELSE 'unknown_too_long' END,
           lease_until = NULL, lease_owner = ''
     WHERE status = 'reversing'
    RETURNING id, status_reason, updated_at
)
INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'reversing', 'needs_review', 'worker', status_reason, updated_at FROM moved ORDER BY id;
ALTER TABLE topups
    DROP CONSTRAINT IF EXISTS topups_status_check,
    ADD CONSTRAINT topups_status_check CHECK (status IN
        ('created', 'awaiting_payment', 'pending_verification', 'settling',
         'credited', 'failed', 'needs_review'));
ALTER TABLE topups DROP COLUMN IF EXISTS reverse_sent_at;
RESET lock_timeout;
