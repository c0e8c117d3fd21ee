-- +goose Up
-- Payments failed at the authority's lifetime, by the time their payer
-- came back from the bank: the worker asks again about those returned
-- within the verify window (issue 16 N1). The condition is written
-- exactly as the worker's claim names it (SQLite uses a partial index
-- only then).
CREATE INDEX payments_failed_returned_idx ON payments (returned_at)
    WHERE status = 'failed' AND status_reason = 'not_paid_after_lifetime';

-- +goose Down
DROP INDEX payments_failed_returned_idx;
