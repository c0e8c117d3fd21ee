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

-- +goose Down
DROP TABLE reconcile_turns;
