-- +goose Up
-- The periodic reconciliation's turn per gateway, and the card refunds
-- under review by index, as on PostgreSQL (its 00055).
CREATE TABLE reconcile_turns (
    gateway TEXT PRIMARY KEY,
    next_at DATETIME NOT NULL
);
CREATE INDEX card_refunds_review_idx ON card_refunds (created_at, id) WHERE status = 'needs_review';

-- +goose Down
DROP INDEX IF EXISTS card_refunds_review_idx;
DROP TABLE reconcile_turns;
