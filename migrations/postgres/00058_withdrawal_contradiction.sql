-- +goose NO TRANSACTION
-- +goose Up
-- The provider's last word that contradicted the one on a withdrawal's
-- row (its "failed" after "transferred", or its "not found" after "in
-- progress" or "transferred"), kept while unknown_since counts it: the
-- admin's page offers "close as failed" after a "failed", never after a
-- "not found" (withdrawal.FailMayGo). '' for none, and for rows
-- contradicted before this migration until the worker's next check.
-- A constant default adds the column without a rewrite; its CHECK is
-- added NOT VALID (the ALTER's ACCESS EXCLUSIVE lock held for no scan),
-- then validated under a lock that lets writes go on. Each ALTER waits at
-- most 5 s for its lock, never queuing every writer behind a long
-- reader; every statement is safe to run again.
SET lock_timeout = '5s';
ALTER TABLE withdrawals ADD COLUMN IF NOT EXISTS contradiction TEXT NOT NULL DEFAULT '';
ALTER TABLE withdrawals
    DROP CONSTRAINT IF EXISTS withdrawals_contradiction_check,
    ADD CONSTRAINT withdrawals_contradiction_check CHECK (contradiction IN ('', 'failed', 'not_found')) NOT VALID;
ALTER TABLE withdrawals VALIDATE CONSTRAINT withdrawals_contradiction_check;
RESET lock_timeout;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE withdrawals DROP COLUMN IF EXISTS contradiction;
RESET lock_timeout;
