-- +goose Up
-- PostgreSQL's 00041 checks Σ = 0 per statement instead of per posting at
-- commit. SQLite has no such trigger (the store reads the sum back in the
-- same transaction, internal/ledger): nothing changes in its schema.
SELECT 1;

-- +goose Down
SELECT 1;
