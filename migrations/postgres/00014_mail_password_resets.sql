-- +goose Up
-- Outgoing e-mail, queued as rows and delivered by the background sender
-- (never on a request's path). dedupe_key, when set, is unique: one
-- receipt per payment however often it is enqueued. secret mails (a
-- reset link) have their bodies blanked once sent, failed or expired.
CREATE TABLE mails (
    id              BIGSERIAL PRIMARY KEY,
    user_id         BIGINT REFERENCES users (id) ON DELETE SET NULL,
    kind            TEXT NOT NULL,
    dedupe_key      TEXT,
    to_addr         TEXT NOT NULL,
    subject         TEXT NOT NULL,
    text_body       TEXT NOT NULL,
    html_body       TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed', 'expired')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ,
    last_error      TEXT NOT NULL DEFAULT '',
    secret          BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ
);
CREATE UNIQUE INDEX mails_dedupe_key ON mails (dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX mails_due_idx ON mails (status, next_attempt_at);

-- Password reset links: only the SHA-256 of the token is stored; a link
-- is used once (used_at) and only before expires_at.
CREATE TABLE password_resets (
    id          BIGSERIAL PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ
);
CREATE UNIQUE INDEX password_resets_token_key ON password_resets (token_hash);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);

-- Receipts by e-mail are on unless the person turns them off at /account.
ALTER TABLE users ADD COLUMN receipts_enabled BOOLEAN NOT NULL DEFAULT TRUE;

-- How far the notice sender has read payment_events (receipts, "returns
-- within 72 hours" notices): one row per reader.
CREATE TABLE notice_cursors (
    name          TEXT PRIMARY KEY,
    last_event_id BIGINT NOT NULL
);

-- Open payments the payer said they will not pay ("I won't pay this
-- one"): they leave the wallet's "in progress" list while the bank, asked
-- first, has not yet said they failed (the worker keeps asking).
CREATE TABLE dismissed_payments (
    payment_id   BIGINT PRIMARY KEY REFERENCES payments (id),
    user_id      BIGINT NOT NULL REFERENCES users (id),
    dismissed_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE dismissed_payments;
DROP TABLE notice_cursors;
ALTER TABLE users DROP COLUMN receipts_enabled;
DROP TABLE password_resets;
DROP TABLE mails;
