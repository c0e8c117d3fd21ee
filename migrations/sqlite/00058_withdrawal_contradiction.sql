-- +goose Up
-- The provider's last word that contradicted the one on a withdrawal's
-- row (its "failed" after "transferred", or its "not found" after "in
-- progress" or "transferred"), kept while unknown_since counts it: the
-- admin's page offers "close as failed" after a "failed", never after a
-- "not found" (withdrawal.FailMayGo). '' for none, and for rows
-- contradicted before this migration until the worker's next check. As
-- on PostgreSQL (its 00058), with the same CHECK.
ALTER TABLE withdrawals ADD COLUMN contradiction TEXT NOT NULL DEFAULT ''
    CHECK (contradiction IN ('', 'failed', 'not_found'));

-- +goose Down
ALTER TABLE withdrawals DROP COLUMN contradiction;
