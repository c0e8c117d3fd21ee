-- +goose Up
-- Merchants and charges: see the PostgreSQL migration of the same number.
-- SQLite changes a CHECK by rebuilding the table (api_tokens), keeping
-- every row and index.
CREATE TABLE merchants (
    user_id      BIGINT PRIMARY KEY REFERENCES users (id),
    display_name TEXT NOT NULL CHECK (display_name <> ''),
    account_id   BIGINT NOT NULL UNIQUE REFERENCES ledger_accounts (id),
    created_by   BIGINT REFERENCES users (id),
    created_at   DATETIME NOT NULL
);

CREATE TABLE charges (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id        TEXT NOT NULL UNIQUE,
    merchant_user_id BIGINT NOT NULL REFERENCES merchants (user_id),
    payer_user_id    BIGINT REFERENCES users (id),
    amount_rials     BIGINT NOT NULL CHECK (amount_rials > 0),
    description      TEXT NOT NULL DEFAULT '',
    order_id         TEXT NOT NULL CHECK (order_id <> ''),
    return_url       TEXT NOT NULL DEFAULT '',
    capture_method   TEXT NOT NULL CHECK (capture_method IN ('automatic', 'manual')),
    status           TEXT NOT NULL CHECK (status IN ('requires_confirmation', 'authorized', 'succeeded', 'canceled', 'expired')),
    captured_rials   BIGINT NOT NULL DEFAULT 0 CHECK (captured_rials >= 0 AND captured_rials <= amount_rials),
    refunded_rials   BIGINT NOT NULL DEFAULT 0 CHECK (refunded_rials >= 0 AND refunded_rials <= captured_rials),
    hold_id          BIGINT UNIQUE REFERENCES ledger_holds (id),
    form_token       TEXT NOT NULL,
    expires_at       DATETIME NOT NULL,
    hold_expires_at  DATETIME,
    confirmed_at     DATETIME,
    captured_at      DATETIME,
    ended_at         DATETIME,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL,
    CONSTRAINT charges_not_to_self CHECK (payer_user_id IS NULL OR payer_user_id <> merchant_user_id),
    CONSTRAINT charges_payer_when_paid CHECK (status IN ('requires_confirmation', 'canceled', 'expired') OR payer_user_id IS NOT NULL),
    CONSTRAINT charges_hold_when_authorized CHECK (status <> 'authorized' OR hold_id IS NOT NULL)
);
CREATE UNIQUE INDEX charges_merchant_order_key ON charges (merchant_user_id, order_id);
CREATE UNIQUE INDEX charges_merchant_token_key ON charges (merchant_user_id, form_token);
CREATE INDEX charges_merchant_idx ON charges (merchant_user_id, id);
CREATE INDEX charges_merchant_status_idx ON charges (merchant_user_id, status, id);
CREATE INDEX charges_payer_idx ON charges (payer_user_id, id) WHERE payer_user_id IS NOT NULL;
CREATE INDEX charges_checkout_due_idx ON charges (expires_at) WHERE status = 'requires_confirmation';
CREATE INDEX charges_hold_due_idx ON charges (hold_expires_at) WHERE status = 'authorized';

CREATE TABLE charge_refunds (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id    TEXT NOT NULL UNIQUE,
    charge_id    BIGINT NOT NULL REFERENCES charges (id),
    amount_rials BIGINT NOT NULL CHECK (amount_rials > 0),
    form_token   TEXT NOT NULL,
    created_at   DATETIME NOT NULL
);
CREATE UNIQUE INDEX charge_refunds_token_key ON charge_refunds (charge_id, form_token);
CREATE INDEX charge_refunds_charge_idx ON charge_refunds (charge_id, id);

CREATE TABLE charge_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    charge_id    BIGINT NOT NULL REFERENCES charges (id),
    type         TEXT NOT NULL,
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('merchant', 'payer', 'worker', 'admin')),
    amount_rials BIGINT NOT NULL DEFAULT 0,
    refund_id    BIGINT REFERENCES charge_refunds (id),
    created_at   DATETIME NOT NULL
);
CREATE INDEX charge_events_charge_idx ON charge_events (charge_id, id);

CREATE TABLE api_tokens_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    name         TEXT NOT NULL CHECK (name <> ''),
    token_hash   TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'topup', 'transfer', 'withdraw', 'charges')),
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME,
    last_used_at DATETIME,
    revoked_at   DATETIME,
    revoked_by   BIGINT REFERENCES users (id)
);
INSERT INTO api_tokens_new (id, user_id, name, token_hash, prefix, scope, created_at, expires_at, last_used_at, revoked_at, revoked_by)
    SELECT id, user_id, name, token_hash, prefix, scope, created_at, expires_at, last_used_at, revoked_at, revoked_by FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (token_hash);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);

-- +goose Down
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, CURRENT_TIMESTAMP), scope = 'read' WHERE scope = 'charges';
CREATE TABLE api_tokens_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    name         TEXT NOT NULL CHECK (name <> ''),
    token_hash   TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'topup', 'transfer', 'withdraw')),
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME,
    last_used_at DATETIME,
    revoked_at   DATETIME,
    revoked_by   BIGINT REFERENCES users (id)
);
INSERT INTO api_tokens_new (id, user_id, name, token_hash, prefix, scope, created_at, expires_at, last_used_at, revoked_at, revoked_by)
    SELECT id, user_id, name, token_hash, prefix, scope, created_at, expires_at, last_used_at, revoked_at, revoked_by FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (token_hash);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);
DROP TABLE charge_events;
DROP TABLE charge_refunds;
DROP TABLE charges;
DROP TABLE merchants;
