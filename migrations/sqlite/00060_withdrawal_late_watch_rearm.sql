-- +goose Up
-- Paid withdrawals whose dense watch (WITHDRAWAL_WATCH_PAID) ended before
-- the worker's sparse tail existed (withdrawal.LateWatchEvery until
-- LateWatchHorizon, 30 days, after payment) had their next_check_at
-- cleared: each one still inside that tail is made due now. Its provider
-- may fail late exactly when watch_until is set (withdrawal
-- Service.watchPaid); the tail ends at the later of paid_at + 30 days and
-- watch_until. A row with a check scheduled is left alone: safe to run
-- again. Times are compared with julianday (whatever the stored text's
-- precision), and written as the store writes them. As on PostgreSQL
-- (its 00060).
UPDATE withdrawals SET next_check_at = strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')
WHERE status = 'paid'
  AND next_check_at IS NULL
  AND watch_until IS NOT NULL
  AND (julianday(paid_at) > julianday('now', '-30 days') OR julianday(watch_until) > julianday('now'));

-- +goose Down
-- Nothing: a re-armed check is the worker's to clear, at the tail's end.
SELECT 1;
