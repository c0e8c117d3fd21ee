-- +goose Up
-- The periodic reconciliation's turn, per gateway: an instance runs a
-- gateway's reconciliation only once it has moved next_at forward by a
-- conditional UPDATE (or inserted the gateway's first row), so that
-- instances looking at the same moment, or while another's run is still
-- asking the bank (its report is stored only at its end), do not all ask.
CREATE TABLE reconcile_turns (
    gateway TEXT PRIMARY KEY,
    next_at TIMESTAMPTZ NOT NULL
);

-- The card refunds under review, oldest first (the admin dashboard's list
-- and the metrics' count): by index, not a walk through every refund. The
-- queries name the status as a literal, so that a generic plan still
-- matches the partial index. The table is small (refunds are rare), so a
-- plain build inside the transaction is brief.
CREATE INDEX card_refunds_review_idx ON card_refunds (created_at, id) WHERE status = 'needs_review';

-- +goose Down
DROP INDEX IF EXISTS card_refunds_review_idx;
DROP TABLE reconcile_turns;
