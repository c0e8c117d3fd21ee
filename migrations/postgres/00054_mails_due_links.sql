-- +goose NO TRANSACTION
-- +goose Up
-- The due mails that carry a link with a time limit (a password reset, an
-- address confirmation), read before the rest at every round: a flood of
-- receipts must not hold a reset link in the queue until it expires. The
-- query names status = 'queued' as a literal, so that a generic plan of
-- the prepared statement still matches this partial index. Built
-- CONCURRENTLY: mails are queued inside credit transactions. A build
-- interrupted half-way leaves an invalid index of this name, which IF NOT
-- EXISTS would keep for good: dropped first, as the other CONCURRENTLY
-- builds do.
DROP INDEX CONCURRENTLY IF EXISTS mails_due_links_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS mails_due_links_idx ON mails (next_attempt_at, id)
    WHERE status = 'queued' AND expires_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS mails_due_links_idx;
