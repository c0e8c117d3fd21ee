-- +goose NO TRANSACTION
-- +goose Up
-- The webhook deliveries that gave up, counted by the metrics at every
-- scrape (kifpool_webhook_failed_deliveries, in every instance) and per endpoint on
-- the admin's webhooks page. The table grows with every movement of money
-- (a transfer queues one delivery to each side's endpoints) until
-- retention deletes it, and no index named its failed rows: each count
-- read the whole table, or an endpoint's whole log. A partial index holds
-- only the failed ones, so each count reads those alone. Built
-- CONCURRENTLY (no transaction); an interrupted build leaves an INVALID
-- index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_failed_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_failed_idx ON webhook_deliveries (endpoint_id) WHERE status = 'failed';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_failed_idx;
