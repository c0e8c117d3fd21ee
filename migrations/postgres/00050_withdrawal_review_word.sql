-- +goose Up
-- A withdrawal the provider said it transferred for another amount than
-- ours went to review (status_reason amount_disagrees) without that word
-- on its row; it is now kept (provider_state transferred), and only then
-- is "close as failed" refused and "close as paid" offered. Rows already
-- in review for that reason got there by that very word.
UPDATE withdrawals SET provider_state = 'transferred'
    WHERE status = 'needs_review' AND status_reason = 'amount_disagrees';

-- +goose Down
-- The word stays: the rows are as the worker writes them today.
SELECT 1;
