-- +goose Up
CREATE TABLE users (
    id            BIGSERIAL PRIMARY KEY,
    email         TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    locale        TEXT NOT NULL DEFAULT 'fa',
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE sessions (
    id           BIGSERIAL PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);

CREATE TABLE wallets (
    id            BIGSERIAL PRIMARY KEY,
    user_id       BIGINT NOT NULL UNIQUE REFERENCES users (id),
    balance_rials BIGINT NOT NULL DEFAULT 0 CHECK (balance_rials >= 0),
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE payments (
    id                  BIGSERIAL PRIMARY KEY,
    public_id           TEXT NOT NULL UNIQUE,
    user_id             BIGINT NOT NULL REFERENCES users (id),
    wallet_id           BIGINT NOT NULL REFERENCES wallets (id),
    amount_rials        BIGINT NOT NULL CHECK (amount_rials > 0),
    gateway             TEXT NOT NULL,
    form_token          TEXT NOT NULL,
    authority           TEXT,
    ref_id              BIGINT,
    verified_amount_rials BIGINT,
    card_pan_masked     TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL CHECK (status IN
                          ('created', 'awaiting_payment', 'pending_verification',
                           'credited', 'failed', 'needs_review')),
    status_reason       TEXT NOT NULL DEFAULT '',
    attempts            INTEGER NOT NULL DEFAULT 0,
    next_check_at       TIMESTAMPTZ,
    lease_until         TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    resolved_at         TIMESTAMPTZ,
    CONSTRAINT payments_credited_has_ref CHECK (status <> 'credited' OR (ref_id IS NOT NULL AND verified_amount_rials IS NOT NULL))
);
CREATE UNIQUE INDEX payments_user_form_token_key ON payments (user_id, form_token);
CREATE UNIQUE INDEX payments_gateway_authority_key ON payments (gateway, authority) WHERE authority IS NOT NULL;
CREATE UNIQUE INDEX payments_gateway_ref_id_key ON payments (gateway, ref_id) WHERE ref_id IS NOT NULL;
CREATE INDEX payments_due_idx ON payments (status, next_check_at);
CREATE INDEX payments_user_idx ON payments (user_id, id);

CREATE TABLE ledger_entries (
    id            BIGSERIAL PRIMARY KEY,
    wallet_id     BIGINT NOT NULL REFERENCES wallets (id),
    payment_id    BIGINT REFERENCES payments (id),
    amount_rials  BIGINT NOT NULL CHECK (amount_rials <> 0),
    balance_after BIGINT NOT NULL CHECK (balance_after >= 0),
    kind          TEXT NOT NULL CHECK (kind IN ('topup')),
    created_at    TIMESTAMPTZ NOT NULL,
    CONSTRAINT ledger_topup_has_payment CHECK (kind <> 'topup' OR payment_id IS NOT NULL)
);
CREATE UNIQUE INDEX ledger_entries_payment_key ON ledger_entries (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX ledger_entries_wallet_idx ON ledger_entries (wallet_id, id);

CREATE TABLE gateway_calls (
    id           BIGSERIAL PRIMARY KEY,
    payment_id   BIGINT REFERENCES payments (id),
    gateway      TEXT NOT NULL,
    operation    TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    duration_ms  BIGINT NOT NULL,
    http_status  INTEGER NOT NULL DEFAULT 0,
    gateway_code INTEGER NOT NULL DEFAULT 0,
    outcome      TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX gateway_calls_payment_idx ON gateway_calls (payment_id, id);

-- +goose Down
DROP TABLE gateway_calls;
DROP TABLE ledger_entries;
DROP TABLE payments;
DROP TABLE wallets;
DROP TABLE sessions;
DROP TABLE users;
