-- +goose Up
-- Merchants and "Pay with Kifpool" charges (issue 33 §2, ARCHITECTURE
-- §2.2, docs/design/charges.md).
--
-- A merchant is a user with a display name and a merchant ledger account
-- (its balance). A charge is made by the merchant's API call
-- (requires_confirmation); the payer confirms it at /checkout/{id}: with
-- automatic capture it succeeds at once (one ledger transaction, kind
-- charge, payer wallet → merchant account), with manual capture it is
-- authorized (a hold on the payer's wallet, hold_id) and captured once
-- later (kind capture), the rest released. Refunds move money back
-- (kind refund, merchant → payer wallet), their total guarded in the
-- UPDATE of refunded_rials (CHECK refunded_rials <= captured_rials).
--
-- The unique (merchant_user_id, form_token) makes one Idempotency-Key one
-- charge; (merchant_user_id, order_id) makes an order one charge;
-- (charge_id, form_token) makes one key one refund.
CREATE TABLE merchants (
    user_id      BIGINT PRIMARY KEY REFERENCES users (id),
    display_name TEXT NOT NULL CHECK (display_name <> ''),
    account_id   BIGINT NOT NULL UNIQUE REFERENCES ledger_accounts (id),
    created_by   BIGINT REFERENCES users (id),
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE charges (
    id               BIGSERIAL PRIMARY KEY,
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
    expires_at       TIMESTAMPTZ NOT NULL,
    hold_expires_at  TIMESTAMPTZ,
    confirmed_at     TIMESTAMPTZ,
    captured_at      TIMESTAMPTZ,
    ended_at         TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
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
    id           BIGSERIAL PRIMARY KEY,
    public_id    TEXT NOT NULL UNIQUE,
    charge_id    BIGINT NOT NULL REFERENCES charges (id),
    amount_rials BIGINT NOT NULL CHECK (amount_rials > 0),
    form_token   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX charge_refunds_token_key ON charge_refunds (charge_id, form_token);
CREATE INDEX charge_refunds_charge_idx ON charge_refunds (charge_id, id);

CREATE TABLE charge_events (
    id           BIGSERIAL PRIMARY KEY,
    charge_id    BIGINT NOT NULL REFERENCES charges (id),
    type         TEXT NOT NULL,
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('merchant', 'payer', 'worker', 'admin')),
    amount_rials BIGINT NOT NULL DEFAULT 0,
    refund_id    BIGINT REFERENCES charge_refunds (id),
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX charge_events_charge_idx ON charge_events (charge_id, id);

-- API tokens gain the scope charges (a merchant's calls, and reading).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('read', 'topup', 'transfer', 'withdraw', 'charges'));

-- +goose Down
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now()), scope = 'read' WHERE scope = 'charges';
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('read', 'topup', 'transfer', 'withdraw'));
DROP TABLE charge_events;
DROP TABLE charge_refunds;
DROP TABLE charges;
DROP TABLE merchants;
