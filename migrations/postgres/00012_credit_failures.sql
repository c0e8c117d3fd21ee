-- +goose Up
-- How many times the credit of a bank-verified payment failed (rolled
-- back). After a few (payment.Config.MaxCreditFailures) the payment goes
-- to needs_review (credit_failed) instead of being retried, and the bank
-- asked, forever (issue 16 N6). A constant default: no table rewrite.
ALTER TABLE payments ADD COLUMN credit_failures INTEGER NOT NULL DEFAULT 0 CHECK (credit_failures >= 0);

-- +goose Down
ALTER TABLE payments DROP COLUMN credit_failures;
