-- +goose Up
-- Where a payment's kept receipt (SEP's RefNum, Mellat's SaleReferenceId)
-- came from (issue 31): 'callback', the payer's word, until the bank ties
-- it to this payment; 'bank', named by the bank's own record of our token
-- (SEP's receipt of the token) or confirmed by a verify for this payment.
-- Only a receipt the bank confirmed is verified on its own, and one held
-- unconfirmed gives way to the real callback of the payment the bank
-- confirms it for. Receipts kept before this migration count as the
-- callback's.
ALTER TABLE payments ADD COLUMN receipt_source TEXT CHECK (receipt_source IS NULL OR receipt_source IN ('callback', 'bank'));
UPDATE payments SET receipt_source = 'callback' WHERE receipt IS NOT NULL;

-- +goose Down
ALTER TABLE payments DROP COLUMN receipt_source;
