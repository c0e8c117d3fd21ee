-- +goose Up
-- An address is confirmed when its owner used the link mailed to it (or a
-- password reset link, which proves the same), or when an operator made
-- the account. Only a confirmed address receives transfers: a stranger
-- who signs up with someone else's address cannot take what is sent to
-- it. Accounts made before this are taken as confirmed.
ALTER TABLE users ADD COLUMN email_verified_at DATETIME;
UPDATE users SET email_verified_at = created_at;

-- The links mailed to confirm an address: only the token's SHA-256 is
-- stored, and a link works once, until it expires.
CREATE TABLE email_verifications (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash  TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    expires_at  DATETIME NOT NULL,
    used_at     DATETIME
);
CREATE UNIQUE INDEX email_verifications_token_key ON email_verifications (token_hash);
CREATE INDEX email_verifications_user_idx ON email_verifications (user_id);
CREATE INDEX email_verifications_expires_idx ON email_verifications (expires_at);

-- +goose Down
DROP TABLE email_verifications;
ALTER TABLE users DROP COLUMN email_verified_at;
