-- +goose Up
-- Payout reconciliation compares withdrawals asked for, first sent or paid
-- within its lookback, as on PostgreSQL (its 00046).
CREATE INDEX withdrawals_provider_submitted_idx ON withdrawals (provider, submitted_at) WHERE submitted_at IS NOT NULL;
CREATE INDEX withdrawals_provider_paid_idx ON withdrawals (provider, paid_at) WHERE paid_at IS NOT NULL;

-- +goose Down
DROP INDEX withdrawals_provider_paid_idx;
DROP INDEX withdrawals_provider_submitted_idx;
