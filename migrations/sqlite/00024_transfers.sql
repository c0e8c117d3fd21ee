-- +goose Up
-- Transfers between people: see the PostgreSQL migration of the same
-- number. SQLite changes a CHECK or a NOT NULL only by rebuilding the
-- table (api_tokens, webhook_deliveries), keeping every row and index.
CREATE TABLE transfers (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id         TEXT NOT NULL UNIQUE,
    sender_user_id    BIGINT NOT NULL REFERENCES users (id),
    recipient_user_id BIGINT NOT NULL REFERENCES users (id),
    amount_rials      BIGINT NOT NULL CHECK (amount_rials > 0),
    note              TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 140),
    form_token        TEXT NOT NULL,
    created_at        DATETIME NOT NULL,
    CONSTRAINT transfers_not_to_self CHECK (sender_user_id <> recipient_user_id)
);
CREATE UNIQUE INDEX transfers_sender_token_key ON transfers (sender_user_id, form_token);
CREATE INDEX transfers_sender_idx ON transfers (sender_user_id, id);
CREATE INDEX transfers_recipient_idx ON transfers (recipient_user_id, id);

CREATE TABLE transfer_daily_totals (
    user_id    BIGINT NOT NULL REFERENCES users (id),
    day_start  DATETIME NOT NULL,
    sent_rials BIGINT NOT NULL CHECK (sent_rials >= 0),
    PRIMARY KEY (user_id, day_start)
);

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

CREATE TABLE webhook_deliveries_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL,
    endpoint_id      BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    topup_id       BIGINT REFERENCES topups (id),
    type             TEXT NOT NULL,
    body             TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  DATETIME NOT NULL,
    last_attempt_at  DATETIME,
    last_http_status INTEGER,
    last_latency_ms  BIGINT,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       DATETIME NOT NULL,
    retry_from       DATETIME NOT NULL,
    delivered_at     DATETIME,
    transfer_id      BIGINT REFERENCES transfers (id),
    CONSTRAINT webhook_deliveries_one_subject CHECK ((topup_id IS NULL) <> (transfer_id IS NULL))
);
INSERT INTO webhook_deliveries_new (id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at)
    SELECT id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries (endpoint_id, event_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, topup_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id);

-- +goose Down
DELETE FROM webhook_deliveries WHERE transfer_id IS NOT NULL;
UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, CURRENT_TIMESTAMP), scope = 'read' WHERE scope = 'transfer';
DROP TABLE transfer_daily_totals;
DROP TABLE transfers;
