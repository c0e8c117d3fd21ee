-- +goose Up
-- Card refunds (issue 30 §3): part or all of a credited top-up given back
-- to the payer's card through its gateway (Zarinpal's AddRefund, SEP's
-- reverse). A row is written with the wallet's hold (hold_id), before
-- the bank is asked; at most one card refund of a top-up is unresolved
-- at a time (card_refunds_one_open_key), which is the guard against a
-- second refund that no gateway's idempotency gives us.
CREATE TABLE card_refunds (
    id                    BIGSERIAL PRIMARY KEY,
    public_id             TEXT NOT NULL UNIQUE,
    topup_id              BIGINT NOT NULL REFERENCES topups (id),
    user_id               BIGINT NOT NULL REFERENCES users (id),
    wallet_id             BIGINT NOT NULL REFERENCES wallets (id),
    gateway               TEXT NOT NULL,
    method                TEXT NOT NULL CHECK (method IN ('refund', 'reverse')),
    amount_rials          BIGINT NOT NULL CHECK (amount_rials > 0),
    refunded_before_rials BIGINT NOT NULL CHECK (refunded_before_rials >= 0),
    status                TEXT NOT NULL CHECK (status IN ('held', 'submitted', 'refunded', 'failed', 'needs_review')),
    status_reason         TEXT NOT NULL DEFAULT '',
    hold_id               BIGINT NOT NULL UNIQUE REFERENCES ledger_holds (id),
    bank_reference        TEXT NOT NULL DEFAULT '',
    bank_code             INTEGER,
    attempts              INTEGER NOT NULL DEFAULT 0 CHECK (attempts IN (0, 1)),
    checks                INTEGER NOT NULL DEFAULT 0,
    submitted_at          TIMESTAMPTZ,
    next_check_at         TIMESTAMPTZ,
    last_checked_at       TIMESTAMPTZ,
    lease_until           TIMESTAMPTZ,
    lease_owner           TEXT NOT NULL DEFAULT '',
    admin_id              BIGINT NOT NULL REFERENCES users (id),
    note                  TEXT NOT NULL DEFAULT '',
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL,
    resolved_at           TIMESTAMPTZ
);
CREATE UNIQUE INDEX card_refunds_one_open_key ON card_refunds (topup_id) WHERE status IN ('held', 'submitted', 'needs_review');
CREATE INDEX card_refunds_topup_idx ON card_refunds (topup_id, id);
CREATE INDEX card_refunds_due_idx ON card_refunds (next_check_at) WHERE status IN ('held', 'submitted');

-- One row per status change of a card refund, written with it
-- (append-only).
CREATE TABLE card_refund_events (
    id             BIGSERIAL PRIMARY KEY,
    card_refund_id BIGINT NOT NULL REFERENCES card_refunds (id),
    from_status    TEXT NOT NULL,
    to_status      TEXT NOT NULL,
    actor          TEXT NOT NULL CHECK (actor IN ('admin', 'worker')),
    reason         TEXT NOT NULL DEFAULT '',
    bank_code      INTEGER,
    admin_id       BIGINT REFERENCES users (id),
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX card_refund_events_refund_idx ON card_refund_events (card_refund_id, id);

-- +goose Down
DROP TABLE card_refund_events;
DROP TABLE card_refunds;
