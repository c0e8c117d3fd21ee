-- +goose Up
-- The admin console's search of charges by order id alone, as on
-- PostgreSQL (its 00043).
CREATE INDEX charges_order_idx ON charges (order_id, id);

-- +goose Down
DROP INDEX charges_order_idx;
