-- +goose NO TRANSACTION
-- +goose Up
-- A user's open payments, newest first (the wallet page's "in progress"
-- list, payment.Service.OpenForUser). payments_user_idx (user_id, id)
-- walks every payment of the user and filters on status: a user with
-- thousands of credited payments read them all on every wallet page.
-- Partial on exactly OpenForUser's statuses, so it stays as small as the
-- set of open payments and SQLite (which uses a partial index only when
-- the query names its condition) reads it too. Built CONCURRENTLY (no
-- transaction). A CONCURRENTLY build that was interrupted leaves an
-- INVALID index of this name, which IF NOT EXISTS would keep for good:
-- it is dropped first, so a re-run builds a valid one.
DROP INDEX CONCURRENTLY IF EXISTS payments_user_open_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'needs_review');

-- +goose Down
DROP INDEX IF EXISTS payments_user_open_idx;
