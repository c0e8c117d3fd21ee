-- +goose Up
-- The periodic reconciliation's turn per gateway, as on PostgreSQL (its
-- 00055).
CREATE TABLE reconcile_turns (
    gateway TEXT PRIMARY KEY,
    next_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE reconcile_turns;
