-- +goose NO TRANSACTION
-- +goose Up
-- Payout reconciliation compares a provider's withdrawals asked for, first
-- sent or paid within its lookback (seven days): one paid days after it
-- was asked for (a review over a holiday, a provider short of balance) is
-- compared for seven days after its payment, so a late manual failure is
-- still seen. Each time is indexed by provider, for a bitmap OR of the
-- three with (provider, created_at).
-- Built CONCURRENTLY (no transaction); an interrupted build leaves an
-- INVALID index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_provider_submitted_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS withdrawals_provider_submitted_idx ON withdrawals (provider, submitted_at) WHERE submitted_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_provider_paid_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS withdrawals_provider_paid_idx ON withdrawals (provider, paid_at) WHERE paid_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_provider_paid_idx;
DROP INDEX CONCURRENTLY IF EXISTS withdrawals_provider_submitted_idx;
