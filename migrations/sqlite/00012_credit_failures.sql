-- +goose Up
-- How many times the credit of a bank-verified payment failed (rolled
-- back); see the PostgreSQL migration (issue 16 N6).
ALTER TABLE payments ADD COLUMN credit_failures INTEGER NOT NULL DEFAULT 0 CHECK (credit_failures >= 0);

-- +goose Down
ALTER TABLE payments DROP COLUMN credit_failures;
