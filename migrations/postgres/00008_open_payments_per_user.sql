-- +goose NO TRANSACTION
-- +goose Up
-- A user's open payments, newest first (the wallet page's "in progress"
-- list, payment.Service.OpenForUser). payments_user_idx (user_id, id)
-- walks every payment of the user and filters on status: a user with
-- thousands of credited payments read them all on every wallet page.
-- Partial on the open statuses (those of payments_open_created_idx), so it
-- stays as small as the set of open payments. Built CONCURRENTLY (no
-- transaction; IF NOT EXISTS makes a re-run after an interruption safe).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');

-- +goose Down
DROP INDEX IF EXISTS payments_user_open_idx;
