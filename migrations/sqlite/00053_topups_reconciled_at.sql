-- +goose Up
-- When reconciliation last looked at a payment, as on PostgreSQL (its
-- 00053).
ALTER TABLE topups ADD COLUMN reconciled_at DATETIME;

-- +goose Down
ALTER TABLE topups DROP COLUMN reconciled_at;
