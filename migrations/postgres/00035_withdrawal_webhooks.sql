-- +goose Up
-- Webhook deliveries of a withdrawal's events (withdrawal.paid,
-- withdrawal.failed, withdrawal.returned) name their withdrawal instead
-- of a top-up or a transfer; exactly one subject per row. A withdrawal's
-- pending events are delivered in order, as a top-up's are.
ALTER TABLE webhook_deliveries ADD COLUMN withdrawal_id BIGINT REFERENCES withdrawals (id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_one_subject;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_subject
    CHECK ((topup_id IS NOT NULL)::int + (transfer_id IS NOT NULL)::int + (withdrawal_id IS NOT NULL)::int = 1);
CREATE INDEX webhook_deliveries_withdrawal_order_idx ON webhook_deliveries (endpoint_id, withdrawal_id, id)
    WHERE status = 'pending' AND withdrawal_id IS NOT NULL;

-- +goose Down
DELETE FROM webhook_deliveries WHERE withdrawal_id IS NOT NULL;
DROP INDEX webhook_deliveries_withdrawal_order_idx;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_one_subject;
ALTER TABLE webhook_deliveries DROP COLUMN withdrawal_id;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_subject
    CHECK ((topup_id IS NULL) <> (transfer_id IS NULL));
