-- +goose NO TRANSACTION
-- +goose Up
-- The admin dashboard's reads at millions of payments (internal/paymentread,
-- measured by make bench-admin), answered from indexes alone:
-- * the worker's backlog counts the due payments and finds the longest
--   wait by status, next check and opening time: payments_due_idx gains
--   opened_at (the worker's claim still reads its leading columns), so no
--   open payment's row is visited (it was: ~240 ms for 20,000 open ones);
-- * the bank's latency reads the last day's calls with their operation
--   and duration: gateway_calls_started_idx gains both as INCLUDE columns
--   (it was an index scan plus a visit of every call's row).
-- Each replacement is built first, then the old index dropped, so the
-- worker and retention always have one. Built CONCURRENTLY (no
-- transaction); an interrupted build leaves an INVALID index, which is
-- dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS payments_due_opened_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_due_opened_idx ON payments (status, next_check_at, opened_at);
DROP INDEX CONCURRENTLY IF EXISTS payments_due_idx;
DROP INDEX CONCURRENTLY IF EXISTS gateway_calls_started_cover_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS gateway_calls_started_cover_idx ON gateway_calls (started_at) INCLUDE (operation, duration_ms);
DROP INDEX CONCURRENTLY IF EXISTS gateway_calls_started_idx;

-- +goose Down
CREATE INDEX IF NOT EXISTS gateway_calls_started_idx ON gateway_calls (started_at);
DROP INDEX IF EXISTS gateway_calls_started_cover_idx;
CREATE INDEX IF NOT EXISTS payments_due_idx ON payments (status, next_check_at);
DROP INDEX IF EXISTS payments_due_opened_idx;
