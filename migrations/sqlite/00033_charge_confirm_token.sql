-- +goose Up
-- The checkout's per-form token, recorded by the confirm that paid or
-- authorized the charge, as the top-up's and the transfer's tokens are
-- recorded with their rows: the unique (payer_user_id, confirm_token)
-- makes one checkout form pay at most one charge (a second submit of it
-- for the same charge answers the first result; for another charge it
-- is refused). NULL: confirmed before tokens were kept, or not yet.
ALTER TABLE charges ADD COLUMN confirm_token TEXT;
CREATE UNIQUE INDEX charges_payer_confirm_token_key ON charges (payer_user_id, confirm_token) WHERE confirm_token IS NOT NULL;

-- +goose Down
DROP INDEX charges_payer_confirm_token_key;
ALTER TABLE charges DROP COLUMN confirm_token;
