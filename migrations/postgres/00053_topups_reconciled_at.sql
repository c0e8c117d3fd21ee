-- +goose Up
-- When reconciliation last looked at a payment (asked the bank about it,
-- or found nothing to ask). Its lists of a gateway's payments are read
-- least recently looked at first, so a day with more of them than one
-- run takes is covered over the runs instead of the newest ones asked
-- every run and the rest never.
ALTER TABLE topups ADD COLUMN reconciled_at TIMESTAMPTZ;

-- Each gateway's newest report (the metrics read it at every scrape): by
-- index, not a walk back through every gateway's reports.
CREATE INDEX IF NOT EXISTS reconcile_reports_gateway_idx ON reconcile_reports (gateway, id);

-- +goose Down
DROP INDEX IF EXISTS reconcile_reports_gateway_idx;
ALTER TABLE topups DROP COLUMN reconciled_at;
