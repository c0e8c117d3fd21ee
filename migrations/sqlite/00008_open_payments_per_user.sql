-- +goose Up
-- A user's open payments, newest first (the wallet page): the plain
-- equivalent of PostgreSQL's partial index. SQLite uses a partial index
-- only when the query names its condition as written, so the condition
-- is exactly OpenForUser's.
CREATE INDEX payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'needs_review');

-- +goose Down
DROP INDEX payments_user_open_idx;
