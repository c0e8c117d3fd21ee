-- +goose NO TRANSACTION
-- +goose Up
-- The admin list's capped counts per status under a filter (issue 32,
-- make bench-admin at 10,000,000 top-ups): "status = X and <filter>,
-- newest first, at most 1,001" for each of the six statuses. With the
-- filter's index alone (amount, card's last 4, gateway) each count walked
-- every top-up the filter matches and read its row for the status: six
-- times over, for a rare status to the end. Each of these indexes makes a
-- count one range, read from the index alone, that stops at its cap.
-- The list itself still walks the filter's own index in created_at order.
-- Built CONCURRENTLY (no transaction); an interrupted build leaves an
-- INVALID index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS topups_amount_status_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS topups_amount_status_created_idx ON topups (amount_rials, status, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS topups_card_status_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS topups_card_status_created_idx ON topups (right(card_pan_masked, 4), status, created_at, id)
    INCLUDE (card_pan_masked) WHERE card_pan_masked <> '';
DROP INDEX CONCURRENTLY IF EXISTS topups_gateway_status_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS topups_gateway_status_created_idx ON topups (gateway, status, created_at, id);

-- +goose Down
DROP INDEX IF EXISTS topups_gateway_status_created_idx;
DROP INDEX IF EXISTS topups_card_status_created_idx;
DROP INDEX IF EXISTS topups_amount_status_created_idx;
