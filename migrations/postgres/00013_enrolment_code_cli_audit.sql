-- +goose Up
-- An admin's one-time enrolment code, as a hash: printed by `kifpool user
-- create --admin`, `user promote` and `user reset-2fa`, asked by /admin/2fa
-- before a new authenticator's secret is shown ('' = none issued).
ALTER TABLE users ADD COLUMN totp_enrol_hash TEXT NOT NULL DEFAULT '';
-- Role changes and second-factor resets from the command line are audited
-- too; they have no admin behind them, so admin_id is optional.
ALTER TABLE admin_actions ALTER COLUMN admin_id DROP NOT NULL;

-- +goose Down
DELETE FROM admin_actions WHERE admin_id IS NULL;
ALTER TABLE admin_actions ALTER COLUMN admin_id SET NOT NULL;
ALTER TABLE users DROP COLUMN totp_enrol_hash;
