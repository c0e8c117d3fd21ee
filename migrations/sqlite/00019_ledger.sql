-- +goose Up
-- A double-entry ledger under every balance (ARCHITECTURE §2, glossary):
-- accounts with a posted and a held figure, transactions of two or more
-- postings that sum to zero, holds, and reversals.
--
-- ledger_entries (one row per credited top-up, single entry) is migrated
-- into the new tables and DROPPED: each entry becomes a `topup`
-- transaction with the same id (the API's ids of history rows stay
-- valid), clearing of its payment's gateway → the user's wallet account,
-- and the wallet account's posted balance is wallets.balance_rials, which
-- is then dropped too: a balance lives in one place, ledger_accounts.
--
-- The wallet history's cursor does NOT stay valid: it was a ledger_entries
-- id and is now a ledger_postings id (lp.id < cursor), and each migrated
-- entry has two postings, so posting ids run about twice the entry ids. A
-- cursor kept from before the upgrade reads the page from about half its
-- value down, skipping the rows between: start from the first page.
--
-- SQLite has no deferred constraint triggers: the store checks Σ = 0 in
-- the transaction that writes the postings (internal/ledger), and
-- `kifpool check` checks it on both dialects.

CREATE TABLE ledger_accounts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT NOT NULL CHECK (kind IN ('wallet', 'merchant', 'gateway', 'payouts_in_flight',
                        'payout_rail', 'card_refunds_in_flight', 'fees', 'suspense')),
    code            TEXT NOT NULL UNIQUE,
    wallet_id       BIGINT UNIQUE REFERENCES wallets (id),
    user_id         BIGINT REFERENCES users (id),
    may_go_negative BOOLEAN NOT NULL,
    posted_rials    BIGINT NOT NULL DEFAULT 0,
    held_rials      BIGINT NOT NULL DEFAULT 0 CHECK (held_rials >= 0),
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    CONSTRAINT ledger_accounts_negative_kinds CHECK (may_go_negative = (kind IN ('gateway', 'payout_rail'))),
    CONSTRAINT ledger_accounts_available_not_negative CHECK (may_go_negative OR posted_rials - held_rials >= 0),
    CONSTRAINT ledger_accounts_wallet_has_wallet CHECK ((kind = 'wallet') = (wallet_id IS NOT NULL))
);
CREATE INDEX ledger_accounts_user_idx ON ledger_accounts (user_id) WHERE user_id IS NOT NULL;

CREATE TABLE ledger_transactions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('topup', 'transfer', 'charge', 'capture', 'release', 'refund',
                    'withdrawal', 'withdrawal_return', 'card_refund', 'reversal', 'adjustment')),
    reference   TEXT NOT NULL,
    payment_id  BIGINT REFERENCES payments (id),
    reverses_id BIGINT REFERENCES ledger_transactions (id),
    note        TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL,
    CONSTRAINT ledger_transactions_reversal_points CHECK ((kind = 'reversal') = (reverses_id IS NOT NULL)),
    CONSTRAINT ledger_transactions_topup_has_payment CHECK (kind <> 'topup' OR payment_id IS NOT NULL)
);
CREATE UNIQUE INDEX ledger_transactions_kind_reference_key ON ledger_transactions (kind, reference);
CREATE UNIQUE INDEX ledger_transactions_reverses_key ON ledger_transactions (reverses_id) WHERE reverses_id IS NOT NULL;
CREATE INDEX ledger_transactions_payment_idx ON ledger_transactions (payment_id) WHERE payment_id IS NOT NULL;

CREATE TABLE ledger_postings (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id      BIGINT NOT NULL REFERENCES ledger_transactions (id),
    account_id          BIGINT NOT NULL REFERENCES ledger_accounts (id),
    amount_rials        BIGINT NOT NULL CHECK (amount_rials <> 0),
    balance_after_rials BIGINT NOT NULL,
    created_at          DATETIME NOT NULL
);
CREATE UNIQUE INDEX ledger_postings_transaction_account_key ON ledger_postings (transaction_id, account_id);
CREATE INDEX ledger_postings_account_idx ON ledger_postings (account_id, id);

CREATE TABLE ledger_holds (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id     BIGINT NOT NULL REFERENCES ledger_accounts (id),
    amount_rials   BIGINT NOT NULL CHECK (amount_rials > 0),
    reason         TEXT NOT NULL,
    reference      TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('open', 'captured', 'released', 'expired')),
    captured_rials BIGINT NOT NULL DEFAULT 0,
    transaction_id BIGINT REFERENCES ledger_transactions (id),
    expires_at     DATETIME NOT NULL,
    created_at     DATETIME NOT NULL,
    ended_at       DATETIME,
    CONSTRAINT ledger_holds_captured CHECK ((status = 'captured') = (transaction_id IS NOT NULL)
        AND captured_rials >= 0 AND captured_rials <= amount_rials AND ((status = 'captured') = (captured_rials > 0))),
    CONSTRAINT ledger_holds_ended CHECK ((status = 'open') = (ended_at IS NULL))
);
CREATE UNIQUE INDEX ledger_holds_reason_reference_key ON ledger_holds (reason, reference);
CREATE INDEX ledger_holds_open_expiry_idx ON ledger_holds (expires_at) WHERE status = 'open';
CREATE INDEX ledger_holds_open_account_idx ON ledger_holds (account_id) WHERE status = 'open';

INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at)
SELECT 'gateway', 'gateway:' || g, 1, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'), strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')
  FROM (SELECT 'zarinpal' AS g UNION SELECT 'zibal' UNION SELECT 'sep' UNION SELECT 'mellat'
        UNION SELECT DISTINCT gateway FROM payments) ORDER BY g;
INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at) VALUES
    ('suspense', 'suspense', 0, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'), strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('fees', 'fees', 0, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'), strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'));

INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, posted_rials, created_at, updated_at)
SELECT 'wallet', 'wallet:' || id, id, user_id, 0, balance_rials, created_at, updated_at FROM wallets ORDER BY id;

INSERT INTO ledger_transactions (id, kind, reference, payment_id, created_at)
SELECT l.id, 'topup', p.public_id, l.payment_id, l.created_at
  FROM ledger_entries l JOIN payments p ON p.id = l.payment_id ORDER BY l.id;
INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at)
SELECT id, account_id, amount_rials, balance_after, created_at FROM (
    SELECT l.id, a.id AS account_id, -l.amount_rials AS amount_rials,
           -SUM(l.amount_rials) OVER (PARTITION BY p.gateway ORDER BY l.id) AS balance_after, l.created_at, 0 AS leg
      FROM ledger_entries l JOIN payments p ON p.id = l.payment_id JOIN ledger_accounts a ON a.code = 'gateway:' || p.gateway
    UNION ALL
    SELECT l.id, a.id, l.amount_rials, l.balance_after, l.created_at, 1
      FROM ledger_entries l JOIN ledger_accounts a ON a.wallet_id = l.wallet_id)
 ORDER BY id, leg;
UPDATE ledger_accounts SET posted_rials = (SELECT COALESCE(SUM(amount_rials), 0) FROM ledger_postings p WHERE p.account_id = ledger_accounts.id)
 WHERE kind = 'gateway';

DROP TABLE ledger_entries;
ALTER TABLE wallets DROP COLUMN balance_rials;

-- Postings and transactions are never updated or deleted: a correction is
-- a reversal.
-- +goose StatementBegin
CREATE TRIGGER ledger_postings_no_update BEFORE UPDATE ON ledger_postings
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: ledger_postings is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_postings_no_delete BEFORE DELETE ON ledger_postings
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: ledger_postings is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_update BEFORE UPDATE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: ledger_transactions is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_transactions_no_delete BEFORE DELETE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: ledger_transactions is append-only'); END;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE wallets ADD COLUMN balance_rials BIGINT NOT NULL DEFAULT 0 CHECK (balance_rials >= 0);
UPDATE wallets SET balance_rials = COALESCE((SELECT posted_rials FROM ledger_accounts a WHERE a.wallet_id = wallets.id), 0);
CREATE TABLE ledger_entries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    wallet_id     BIGINT NOT NULL REFERENCES wallets (id),
    payment_id    BIGINT REFERENCES payments (id),
    amount_rials  BIGINT NOT NULL CHECK (amount_rials <> 0),
    balance_after BIGINT NOT NULL CHECK (balance_after >= 0),
    kind          TEXT NOT NULL CHECK (kind IN ('topup')),
    created_at    DATETIME NOT NULL,
    CONSTRAINT ledger_topup_has_payment CHECK (kind <> 'topup' OR payment_id IS NOT NULL)
);
CREATE UNIQUE INDEX ledger_entries_payment_key ON ledger_entries (payment_id) WHERE payment_id IS NOT NULL;
CREATE INDEX ledger_entries_wallet_idx ON ledger_entries (wallet_id, id);
INSERT INTO ledger_entries (id, wallet_id, payment_id, amount_rials, balance_after, kind, created_at)
SELECT t.id, a.wallet_id, t.payment_id, p.amount_rials, p.balance_after_rials, 'topup', t.created_at
  FROM ledger_transactions t JOIN ledger_postings p ON p.transaction_id = t.id JOIN ledger_accounts a ON a.id = p.account_id
 WHERE t.kind = 'topup' AND a.kind = 'wallet' ORDER BY t.id;
DROP TRIGGER ledger_postings_no_update;
DROP TRIGGER ledger_postings_no_delete;
DROP TRIGGER ledger_transactions_no_update;
DROP TRIGGER ledger_transactions_no_delete;
DROP TABLE ledger_holds;
DROP TABLE ledger_postings;
DROP TABLE ledger_transactions;
DROP TABLE ledger_accounts;
