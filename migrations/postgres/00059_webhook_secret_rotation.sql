-- +goose NO TRANSACTION
-- +goose Up
-- A webhook endpoint's signing secret rotated by its owner (webhook
-- Service.Rotate): secret_enc takes the new secret, previous_secret_enc
-- the one it had (sealed as secret_enc is: AES-256-GCM bound to the
-- owner's id), and until previous_secret_until the sender signs each
-- delivery with both (two v1= in Kifpool-Signature); past it, with the
-- new one only. NULL both: never rotated. Nullable columns without a
-- default are added without a rewrite. Each ALTER waits at most 5 s for
-- its lock (never queuing every writer behind a long reader): past that
-- the migration fails, changing nothing, and is run again; every
-- statement is safe to repeat.
SET lock_timeout = '5s';
ALTER TABLE webhook_endpoints ADD COLUMN IF NOT EXISTS previous_secret_enc TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN IF NOT EXISTS previous_secret_until TIMESTAMPTZ;
RESET lock_timeout;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS previous_secret_until;
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS previous_secret_enc;
RESET lock_timeout;
