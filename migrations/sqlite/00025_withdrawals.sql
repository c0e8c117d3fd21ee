-- +goose Up
-- Cash-out to a bank account (issue 30): the national code a user gave,
-- their bank accounts (a Sheba whose ownership a payout provider checked),
-- withdrawals and their events, the payout providers' call log and the
-- payout reconciliation's reports.

-- A user's national code, given once (it never changes).
CREATE TABLE national_codes (
    user_id       BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    national_code TEXT NOT NULL CHECK (length(national_code) = 10),
    created_at    DATETIME NOT NULL
);

-- A user's bank account: verified by the provider's inquiry, or waiting
-- for an admin when the inquiry could not answer (pending_review), or
-- rejected by an admin. A mismatch is never stored.
CREATE TABLE bank_accounts (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id        BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sheba          TEXT NOT NULL CHECK (length(sheba) = 26),
    bank_code      TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('verified', 'pending_review', 'rejected')),
    checked_by     TEXT NOT NULL DEFAULT '',
    reviewed_by    BIGINT REFERENCES users (id) ON DELETE SET NULL,
    review_note    TEXT NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL
);
CREATE UNIQUE INDEX bank_accounts_user_sheba_key ON bank_accounts (user_id, sheba);
CREATE INDEX bank_accounts_pending_idx ON bank_accounts (created_at) WHERE status = 'pending_review';

-- One withdrawal: its amount held on the wallet (hold_id) from the start;
-- the provider has public_id as its own id. The status changes only
-- through the lifecycle's one writer, with an event in the same
-- transaction; the lease is held by whoever talks to the provider.
CREATE TABLE withdrawals (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id           TEXT NOT NULL UNIQUE,
    user_id             BIGINT NOT NULL REFERENCES users (id),
    wallet_id           BIGINT NOT NULL REFERENCES wallets (id),
    bank_account_id     BIGINT NOT NULL REFERENCES bank_accounts (id),
    sheba               TEXT NOT NULL,
    bank_code           TEXT NOT NULL,
    amount_rials        BIGINT NOT NULL CHECK (amount_rials > 0),
    provider            TEXT NOT NULL,
    rail                TEXT NOT NULL CHECK (rail IN ('paya', 'satna', 'pol')),
    form_token          TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('requested', 'approved', 'submitted', 'paid', 'failed',
                            'rejected', 'cancelled', 'returned', 'needs_review')),
    status_reason       TEXT NOT NULL DEFAULT '',
    review_required     BOOLEAN NOT NULL,
    hold_id             BIGINT NOT NULL UNIQUE REFERENCES ledger_holds (id),
    provider_state      TEXT NOT NULL DEFAULT '',
    provider_ref        TEXT NOT NULL DEFAULT '',
    submits             INTEGER NOT NULL DEFAULT 0,
    checks              INTEGER NOT NULL DEFAULT 0,
    unknown_since       DATETIME,
    submitted_at        DATETIME,
    paid_at             DATETIME,
    settled_at          DATETIME,
    returned_at         DATETIME,
    resolved_at         DATETIME,
    watch_until         DATETIME,
    next_check_at       DATETIME,
    last_checked_at     DATETIME,
    lease_owner         TEXT NOT NULL DEFAULT '',
    lease_until         DATETIME,
    reviewed_by         BIGINT REFERENCES users (id) ON DELETE SET NULL,
    review_note         TEXT NOT NULL DEFAULT '',
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL
);
-- A form (or an Idempotency-Key) submitted twice is one withdrawal.
CREATE UNIQUE INDEX withdrawals_user_form_key ON withdrawals (user_id, form_token);
CREATE INDEX withdrawals_user_idx ON withdrawals (user_id, id);
CREATE INDEX withdrawals_due_idx ON withdrawals (next_check_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX withdrawals_status_idx ON withdrawals (status, created_at);
CREATE INDEX withdrawals_provider_idx ON withdrawals (provider, created_at);

CREATE TABLE withdrawal_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    withdrawal_id BIGINT NOT NULL REFERENCES withdrawals (id),
    from_status   TEXT NOT NULL,
    to_status     TEXT NOT NULL,
    actor         TEXT NOT NULL CHECK (actor IN ('user', 'worker', 'reconcile', 'admin')),
    reason        TEXT NOT NULL DEFAULT '',
    admin_id      BIGINT REFERENCES users (id) ON DELETE SET NULL,
    note          TEXT NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL
);
CREATE INDEX withdrawal_events_withdrawal_idx ON withdrawal_events (withdrawal_id, id);

-- Every attempt at a payout provider's operation; append-only, never a
-- key or a token. reference: the withdrawal's public id, or "".
CREATE TABLE payout_calls (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    reference    TEXT NOT NULL DEFAULT '',
    provider     TEXT NOT NULL,
    operation    TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   DATETIME NOT NULL,
    duration_ms  BIGINT NOT NULL,
    http_status  INTEGER NOT NULL DEFAULT 0,
    code         INTEGER NOT NULL DEFAULT 0,
    outcome      TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payout_calls_reference_idx ON payout_calls (reference, id);
CREATE INDEX payout_calls_started_idx ON payout_calls (started_at);

-- Each payout reconciliation's report: our paid, returned and in-flight
-- withdrawals against the provider's word; differences are flagged.
CREATE TABLE payout_reconcile_reports (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    provider     TEXT NOT NULL,
    started_at   DATETIME NOT NULL,
    finished_at  DATETIME NOT NULL,
    checked      INTEGER NOT NULL DEFAULT 0,
    paid         INTEGER NOT NULL DEFAULT 0,
    paid_rials   BIGINT NOT NULL DEFAULT 0,
    returned     INTEGER NOT NULL DEFAULT 0,
    in_flight    INTEGER NOT NULL DEFAULT 0,
    settled      INTEGER NOT NULL DEFAULT 0,
    differences  INTEGER NOT NULL DEFAULT 0,
    details      TEXT NOT NULL DEFAULT '[]',
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payout_reconcile_reports_started_idx ON payout_reconcile_reports (started_at);

-- API tokens may withdraw (scope withdraw: withdrawals and bank
-- accounts, and reading). SQLite changes a CHECK by rebuilding the table.
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

-- +goose Down
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, CURRENT_TIMESTAMP), scope = 'read' WHERE scope = 'withdraw';
CREATE TABLE api_tokens_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    name         TEXT NOT NULL CHECK (name <> ''),
    token_hash   TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'topup', 'transfer')),
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
DROP TABLE payout_reconcile_reports;
DROP TABLE payout_calls;
DROP TABLE withdrawal_events;
DROP TABLE withdrawals;
DROP TABLE bank_accounts;
DROP TABLE national_codes;
