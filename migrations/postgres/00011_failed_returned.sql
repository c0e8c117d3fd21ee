-- +goose NO TRANSACTION
-- +goose Up
-- The worker asks again about payments it failed at the authority's
-- lifetime whose payer came back from the bank within the verify window
-- (payment.Worker, issue 16 N1). Partial on exactly that condition, so it
-- holds only such payments and the worker's claim reads a short range of
-- it, never the failed payments at large. Built CONCURRENTLY; an
-- interrupted build's INVALID index is dropped first (see 00008).
DROP INDEX CONCURRENTLY IF EXISTS payments_failed_returned_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_failed_returned_idx ON payments (returned_at)
    WHERE status = 'failed' AND status_reason = 'not_paid_after_lifetime';

-- +goose Down
DROP INDEX IF EXISTS payments_failed_returned_idx;
