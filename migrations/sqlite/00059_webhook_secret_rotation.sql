-- +goose Up
-- A webhook endpoint's signing secret rotated by its owner (webhook
-- Service.Rotate): secret_enc takes the new secret, previous_secret_enc
-- the one it had, and until previous_secret_until the sender signs each
-- delivery with both; past it, with the new one only. NULL both: never
-- rotated. As on PostgreSQL (its 00059).
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_enc TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_until DATETIME;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_until;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_enc;
