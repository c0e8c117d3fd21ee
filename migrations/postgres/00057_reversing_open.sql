-- +goose NO TRANSACTION
-- +goose Up
-- A reversing payment (00056: verified at the bank, not creditable, its
-- reverse on the way) is still open: the wallet shows it in progress, the
-- payer's "open" filter and the admin's unresolved list name it, and the
-- top-up limits count its amount as open. The partial indexes of open
-- payments (00007's, the admin list; 00008's, the wallet page; both last
-- rebuilt by 00018) take reversing, so the queries that name the new
-- lists (internal/topupread) still read them. Each is built under a new
-- name, the old one dropped, the new one renamed, so one is always
-- there; an interrupted build's INVALID index is dropped first.
DROP INDEX CONCURRENTLY IF EXISTS topups_open_created_new_idx;
CREATE INDEX CONCURRENTLY topups_open_created_new_idx ON topups (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS topups_open_created_idx;
ALTER INDEX topups_open_created_new_idx RENAME TO topups_open_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS topups_user_open_new_idx;
CREATE INDEX CONCURRENTLY topups_user_open_new_idx ON topups (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS topups_user_open_idx;
ALTER INDEX topups_user_open_new_idx RENAME TO topups_user_open_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS topups_open_created_new_idx;
CREATE INDEX CONCURRENTLY topups_open_created_new_idx ON topups (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS topups_open_created_idx;
ALTER INDEX topups_open_created_new_idx RENAME TO topups_open_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS topups_user_open_new_idx;
CREATE INDEX CONCURRENTLY topups_user_open_new_idx ON topups (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX CONCURRENTLY IF EXISTS topups_user_open_idx;
ALTER INDEX topups_user_open_new_idx RENAME TO topups_user_open_idx;
