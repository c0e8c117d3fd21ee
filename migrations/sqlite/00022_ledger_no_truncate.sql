-- +goose Up
-- PostgreSQL's 00022 refuses TRUNCATE of the ledger's append-only tables.
-- SQLite has no TRUNCATE: its "DELETE FROM t" without WHERE is a DELETE,
-- which 00019's triggers already refuse. Nothing to change; the migration
-- keeps both dialects' versions equal.
SELECT 1;

-- +goose Down
SELECT 1;
