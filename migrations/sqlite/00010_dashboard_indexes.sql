-- +goose Up
-- The admin dashboard's reads from indexes alone (see the PostgreSQL
-- migration of the same number): the worker's backlog by status, next
-- check and opening time; the bank's latency by start time, operation and
-- duration (SQLite has no INCLUDE: they are key columns).
CREATE INDEX payments_due_opened_idx ON payments (status, next_check_at, opened_at);
DROP INDEX payments_due_idx;
CREATE INDEX gateway_calls_started_cover_idx ON gateway_calls (started_at, operation, duration_ms);
DROP INDEX gateway_calls_started_idx;

-- +goose Down
CREATE INDEX gateway_calls_started_idx ON gateway_calls (started_at);
DROP INDEX gateway_calls_started_cover_idx;
CREATE INDEX payments_due_idx ON payments (status, next_check_at);
DROP INDEX payments_due_opened_idx;
