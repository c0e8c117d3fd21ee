-- +goose Up
-- The token an API request's effect is created with, kept with its key's
-- record, as on PostgreSQL (its 00052).
ALTER TABLE idempotency_keys ADD COLUMN form_token TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN form_token;
