-- +goose Up
-- When reconciliation last looked at a payment (asked the bank about it,
-- or found nothing to ask). Its lists of a gateway's payments are read
-- least recently looked at first, so a day with more of them than one
-- run takes is covered over the runs instead of the newest ones asked
-- every run and the rest never.
ALTER TABLE topups ADD COLUMN reconciled_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE topups DROP COLUMN reconciled_at;
