-- +goose Up
-- The token an API request's effect (a top-up, a withdrawal, a charge) is
-- created with was derived from the key's record with SESSION_SECRET: a
-- retry that took a key over after a crash, on an instance whose secret
-- had changed (rotated, or another instance's), derived another token,
-- found nothing and made the effect again. The token is now kept with
-- the record (derived once, when the record is made, in the same
-- transaction); '' for a record made before, whose token is still
-- derived.
ALTER TABLE idempotency_keys ADD COLUMN form_token TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN form_token;
