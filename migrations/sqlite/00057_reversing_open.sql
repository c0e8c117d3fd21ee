-- +goose Up
-- A reversing payment (00056) is still open: the partial indexes of open
-- payments (the admin list's and the wallet page's, last rebuilt by
-- 00018) take reversing, as on PostgreSQL (its 00057). SQLite uses a
-- partial index only when the query names its condition, and the queries
-- (internal/topupread) name the new lists.
DROP INDEX IF EXISTS topups_open_created_idx;
CREATE INDEX topups_open_created_idx ON topups (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review');
DROP INDEX IF EXISTS topups_user_open_idx;
CREATE INDEX topups_user_open_idx ON topups (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'reversing', 'needs_review');

-- +goose Down
DROP INDEX IF EXISTS topups_open_created_idx;
CREATE INDEX topups_open_created_idx ON topups (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX IF EXISTS topups_user_open_idx;
CREATE INDEX topups_user_open_idx ON topups (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');
