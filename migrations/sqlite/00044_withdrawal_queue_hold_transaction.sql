-- +goose Up
-- The admin's withdrawal queues by status newest first, kifpool check's
-- count of the holds a transaction ended, and a user's withdrawals of
-- today (the daily limit), as on PostgreSQL (its 00044).
CREATE INDEX withdrawals_status_id_idx ON withdrawals (status, id);
DROP INDEX withdrawals_status_idx;
CREATE INDEX ledger_holds_transaction_idx ON ledger_holds (transaction_id) WHERE transaction_id IS NOT NULL;
CREATE INDEX withdrawals_user_created_idx ON withdrawals (user_id, created_at, amount_rials, status);

-- +goose Down
DROP INDEX withdrawals_user_created_idx;
DROP INDEX ledger_holds_transaction_idx;
CREATE INDEX withdrawals_status_idx ON withdrawals (status, created_at);
DROP INDEX withdrawals_status_id_idx;
