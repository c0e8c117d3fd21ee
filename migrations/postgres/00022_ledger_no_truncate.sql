-- +goose Up
-- Postings and transactions are append-only (00019): their row triggers
-- refuse UPDATE and DELETE, but row triggers never fire for TRUNCATE,
-- which would empty the ledger in one statement. A statement trigger
-- refuses it too, with the same function and message.
CREATE TRIGGER ledger_postings_no_truncate BEFORE TRUNCATE ON ledger_postings
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- +goose Down
DROP TRIGGER ledger_transactions_no_truncate ON ledger_transactions;
DROP TRIGGER ledger_postings_no_truncate ON ledger_postings;
