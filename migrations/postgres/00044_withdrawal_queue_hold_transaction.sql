-- +goose NO TRANSACTION
-- +goose Up
-- Found with the 10M bench's withdrawals (issue 32):
-- - the admin's queues list withdrawals of one status newest first
--   (status = ? ORDER BY id DESC): (status, created_at) could not give that
--   order, so PostgreSQL walked the whole primary key backwards, filtering
--   by status, to find the few under review. (status, id) gives the order
--   within one status; (status, created_at) served nothing else.
-- - kifpool check's rule hold_captured_once counts the holds a captured
--   hold's transaction ended, once per captured hold: with no index on
--   ledger_holds (transaction_id) each count read every hold, a square of
--   their number (a million withdrawals, a trillion rows).
-- - the withdraw form and each withdrawal's write sum the user's
--   withdrawals created today (the daily limit): (user_id, id) read every
--   withdrawal the user ever made to find today's (a payer with 10,000:
--   286 ms cold, inside the write's transaction). (user_id, created_at),
--   with the amount and status included, reads today's alone.
-- Built CONCURRENTLY (no transaction); an interrupted build leaves an
-- INVALID index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_status_id_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS withdrawals_status_id_idx ON withdrawals (status, id);
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_status_idx;
DROP INDEX CONCURRENTLY IF EXISTS ledger_holds_transaction_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS ledger_holds_transaction_idx ON ledger_holds (transaction_id) WHERE transaction_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_user_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS withdrawals_user_created_idx ON withdrawals (user_id, created_at) INCLUDE (amount_rials, status);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_user_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS ledger_holds_transaction_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS withdrawals_status_idx ON withdrawals (status, created_at);
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_status_id_idx;
