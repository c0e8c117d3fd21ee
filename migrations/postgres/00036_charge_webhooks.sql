-- +goose Up
-- Webhook deliveries of a charge's events (charge.succeeded, …,
-- charge.refunded; issue 33 §2) name their charge instead of a top-up, a
-- transfer or a withdrawal; exactly one subject per row. A charge's
-- pending events are delivered in order. After 00035 (withdrawals'), whose
-- CHECK it widens.
ALTER TABLE webhook_deliveries ADD COLUMN charge_id BIGINT REFERENCES charges (id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_one_subject;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_subject
    CHECK ((topup_id IS NOT NULL)::int + (transfer_id IS NOT NULL)::int + (withdrawal_id IS NOT NULL)::int
        + (charge_id IS NOT NULL)::int = 1);
CREATE INDEX webhook_deliveries_charge_order_idx ON webhook_deliveries (endpoint_id, charge_id, id)
    WHERE status = 'pending' AND charge_id IS NOT NULL;

-- +goose Down
DELETE FROM webhook_deliveries WHERE charge_id IS NOT NULL;
DROP INDEX webhook_deliveries_charge_order_idx;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_one_subject;
ALTER TABLE webhook_deliveries DROP COLUMN charge_id;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_subject
    CHECK ((topup_id IS NOT NULL)::int + (transfer_id IS NOT NULL)::int + (withdrawal_id IS NOT NULL)::int = 1);
