-- +goose Up
-- Throttles of sign-in and of the admins' second factor, shared by every
-- instance: one row per key ('signin:' || normalised email, '2fa:' || user
-- id) counting failures in a row; no attempt is judged before locked_until.
-- A success deletes the row; rows quiet for a day are purged.
CREATE TABLE auth_throttles (
    key          TEXT PRIMARY KEY CHECK (key <> ''),
    failures     INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    locked_until DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE INDEX auth_throttles_updated_idx ON auth_throttles (updated_at);

-- Admin two-factor sign-in (TOTP, RFC 6238). totp_secret is set at the
-- first visit to /admin and confirmed by a first code; totp_last_step is
-- the time step of the last code accepted: a code is accepted only by
-- moving it forward (a conditional update), so a code is never accepted
-- twice. A session that passed the check has second_factor_at.
ALTER TABLE users ADD COLUMN totp_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN totp_confirmed_at DATETIME;
ALTER TABLE users ADD COLUMN totp_last_step BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN second_factor_at DATETIME;

-- Single-use recovery codes, stored as SHA-256 hashes; used_at is set by
-- a conditional update, so each works once.
CREATE TABLE recovery_codes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  TEXT NOT NULL,
    used_at    DATETIME,
    created_at DATETIME NOT NULL,
    UNIQUE (user_id, code_hash)
);

-- +goose Down
DROP TABLE recovery_codes;
ALTER TABLE sessions DROP COLUMN second_factor_at;
ALTER TABLE users DROP COLUMN totp_last_step;
ALTER TABLE users DROP COLUMN totp_confirmed_at;
ALTER TABLE users DROP COLUMN totp_secret;
DROP TABLE auth_throttles;
