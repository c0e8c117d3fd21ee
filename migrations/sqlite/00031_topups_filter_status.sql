-- +goose Up
-- The admin list's capped counts per status under a filter (see the
-- PostgreSQL migration of the same number): each count of "status = X
-- and amount / card's last 4 / gateway" is one range of an index.
CREATE INDEX topups_amount_status_created_idx ON topups (amount_rials, status, created_at, id);
CREATE INDEX topups_card_status_created_idx ON topups (substr(card_pan_masked, -4), status, created_at, id) WHERE card_pan_masked <> '';
CREATE INDEX topups_gateway_status_created_idx ON topups (gateway, status, created_at, id);

-- +goose Down
DROP INDEX topups_gateway_status_created_idx;
DROP INDEX topups_card_status_created_idx;
DROP INDEX topups_amount_status_created_idx;
