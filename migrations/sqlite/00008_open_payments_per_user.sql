-- +goose Up
-- A user's open payments, newest first (the wallet page): the plain
-- equivalent of PostgreSQL's partial index.
CREATE INDEX payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');

-- +goose Down
DROP INDEX payments_user_open_idx;
