-- +goose Up
-- When reconciliation last looked at a payment, and each gateway's
-- newest report by index, as on PostgreSQL (its 00053).
ALTER TABLE topups ADD COLUMN reconciled_at DATETIME;
CREATE INDEX IF NOT EXISTS reconcile_reports_gateway_idx ON reconcile_reports (gateway, id);

-- +goose Down
DROP INDEX IF EXISTS reconcile_reports_gateway_idx;
ALTER TABLE topups DROP COLUMN reconciled_at;
