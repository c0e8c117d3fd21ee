-- +goose Up
-- The callback data a gateway's verify needs (SEP's RefNum, Mellat's
-- SaleReferenceId), kept with the payment so that the worker can verify
-- and settle without the payer's browser (issue 17). Unique per gateway:
-- SEP verifies a RefNum again and again, so a receipt another payment
-- holds is a replayed callback, refused (like ref_id).
ALTER TABLE payments ADD COLUMN receipt TEXT CHECK (receipt IS NULL OR length(receipt) BETWEEN 1 AND 64);
CREATE UNIQUE INDEX payments_gateway_receipt_key ON payments (gateway, receipt) WHERE receipt IS NOT NULL;

-- +goose Down
DROP INDEX payments_gateway_receipt_key;
ALTER TABLE payments DROP COLUMN receipt;
