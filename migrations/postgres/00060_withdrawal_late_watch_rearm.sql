-- +goose NO TRANSACTION
-- +goose Up
-- Paid withdrawals whose dense watch (WITHDRAWAL_WATCH_PAID) ended before
-- the worker's sparse tail existed (withdrawal.LateWatchEvery until
-- LateWatchHorizon, 30 days, after payment) had their next_check_at
-- cleared, and nothing arms it again: a payout failed by hand on day 10
-- (Jibit's MANUALLY_FAILED) would never be noticed. Each one still inside
-- that tail is made due now; the worker's next round asks about it and
-- then keeps it at the tail's pace, or clears it (its provider no longer
-- fails late, or is gone) without a call.
--
-- Whose provider may fail late is the provider's capability, known in
-- Go only (Capabilities.LateFailure), but each row keeps it: watch_until
-- is set exactly when the withdrawal became paid under such a provider
-- (withdrawal Service.watchPaid), and the worker watches no paid row
-- without it. The tail ends at the later of paid_at + 30 days and
-- watch_until (withdrawal.watchEnd). A row with a check scheduled is left
-- alone, so running this again changes nothing it had not; the scan is of
-- paid rows once (withdrawals_status_idx). The UPDATE waits at most 5 s
-- for its locks (a row claimed by a worker): past that it fails, changing
-- nothing, and is run again.
SET lock_timeout = '5s';
UPDATE withdrawals SET next_check_at = now()
WHERE status = 'paid'
  AND next_check_at IS NULL
  AND watch_until IS NOT NULL
  AND (paid_at > now() - interval '30 days' OR watch_until > now());
RESET lock_timeout;

-- +goose Down
-- Nothing: a re-armed check is the worker's to clear, at the tail's end.
SELECT 1;
