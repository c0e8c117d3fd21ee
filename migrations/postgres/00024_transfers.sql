-- +goose Up
-- Transfers between people (ARCHITECTURE §2.2, docs/design/transfers.md):
-- one row per transfer, written in the same transaction as its ledger
-- transaction (kind 'transfer', reference = public_id).
--
-- The unique (sender_user_id, form_token) index is what makes a transfer
-- happen once: the page's per-form token, or the token derived from the
-- API's Idempotency-Key, names the sender's one transfer; a second insert
-- with it is a replay of the first.
CREATE TABLE transfers (
    id                BIGSERIAL PRIMARY KEY,
    public_id         TEXT NOT NULL UNIQUE,
    sender_user_id    BIGINT NOT NULL REFERENCES users (id),
    recipient_user_id BIGINT NOT NULL REFERENCES users (id),
    amount_rials      BIGINT NOT NULL CHECK (amount_rials > 0),
    note              TEXT NOT NULL DEFAULT '' CHECK (char_length(note) <= 140),
    form_token        TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    CONSTRAINT transfers_not_to_self CHECK (sender_user_id <> recipient_user_id)
);
CREATE UNIQUE INDEX transfers_sender_token_key ON transfers (sender_user_id, form_token);
CREATE INDEX transfers_sender_idx ON transfers (sender_user_id, id);
CREATE INDEX transfers_recipient_idx ON transfers (recipient_user_id, id);

-- What each sender has sent per Tehran calendar day, moved by a guarded
-- upsert in the transfer's transaction (TRANSFER_DAILY_MAX_RIALS): the
-- limit is enforced in the write, so racing transfers never pass it.
CREATE TABLE transfer_daily_totals (
    user_id    BIGINT NOT NULL REFERENCES users (id),
    day_start  TIMESTAMPTZ NOT NULL,
    sent_rials BIGINT NOT NULL CHECK (sent_rials >= 0),
    PRIMARY KEY (user_id, day_start)
);

-- API tokens gain the scope `transfer` (sends money, and reads).
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('read', 'topup', 'transfer'));

-- Webhook deliveries of a transfer's events (transfer.sent,
-- transfer.received) name their transfer instead of a top-up.
ALTER TABLE webhook_deliveries ALTER COLUMN topup_id DROP NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN transfer_id BIGINT REFERENCES transfers (id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_one_subject
    CHECK ((topup_id IS NULL) <> (transfer_id IS NULL));

-- +goose Down
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_one_subject;
DELETE FROM webhook_deliveries WHERE transfer_id IS NOT NULL;
ALTER TABLE webhook_deliveries DROP COLUMN transfer_id;
ALTER TABLE webhook_deliveries ALTER COLUMN topup_id SET NOT NULL;
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scope_check;
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now()), scope = 'read' WHERE scope = 'transfer';
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scope_check CHECK (scope IN ('read', 'topup'));
DROP TABLE transfer_daily_totals;
DROP TABLE transfers;
