-- +goose NO TRANSACTION
-- +goose Up
-- The admin console finds a charge by its order id alone (issue 33: "finds
-- charges by id, order id and e-mail"), without knowing the merchant. The
-- only index with order_id led with merchant_user_id, so that search read
-- the whole of charges_merchant_order_key. Built CONCURRENTLY (no
-- transaction); an interrupted build leaves an INVALID index, dropped
-- before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS charges_order_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS charges_order_idx ON charges (order_id, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS charges_order_idx;
