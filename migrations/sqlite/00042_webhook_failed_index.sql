-- +goose Up
-- The webhook deliveries that gave up, counted by the metrics at every
-- scrape and per endpoint on the admin's webhooks page: a partial index of
-- the failed ones alone, as on PostgreSQL (its 00042).
CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (endpoint_id) WHERE status = 'failed';

-- +goose Down
DROP INDEX webhook_deliveries_failed_idx;
