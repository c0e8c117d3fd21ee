-- +goose Up
-- Partners' webhooks (ARCHITECTURE §5 Webhooks). An endpoint is a user's
-- URL, the events it wants (",topup.credited,topup.failed," — commas
-- around each name so one LIKE matches a whole name) and its signing
-- secret, encrypted (AES-256-GCM under a key derived from SESSION_SECRET;
-- SECURITY.md). failing_since: its deliveries gave up after the retry
-- window (admins see it); a later success clears it.
CREATE TABLE webhook_endpoints (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    secret_enc      TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    disabled_at     DATETIME,
    disabled_by     BIGINT REFERENCES users (id) ON DELETE SET NULL,
    failing_since   DATETIME,
    last_success_at DATETIME
);
CREATE INDEX webhook_endpoints_user_idx ON webhook_endpoints (user_id);

-- The outbox: one row per (event, subscribed endpoint), written by the
-- payment store's one writer in the status move's own transaction. body
-- is the exact JSON delivered (fixed when written, so every attempt sends
-- the same bytes). next_attempt_at doubles as the claim: a sender moves it
-- forward by its lease when it takes the row. The retry window counts from
-- retry_from (the event's time; an admin's "send again" resets it).
CREATE TABLE webhook_deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL,
    endpoint_id      BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    payment_id       BIGINT NOT NULL REFERENCES payments (id),
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
    delivered_at     DATETIME
);
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries (endpoint_id, event_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, payment_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id);

-- Origins a user allows as return_url of their API top-ups
-- (scheme://host[:port], canonical form).
CREATE TABLE webhook_return_origins (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    origin     TEXT NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX webhook_return_origins_key ON webhook_return_origins (user_id, origin);

-- Where the payer's browser goes after the bank (an API top-up's
-- return_url, checked against the origins above when it was created).
ALTER TABLE payments ADD COLUMN return_url TEXT;

-- +goose Down
ALTER TABLE payments DROP COLUMN return_url;
DROP TABLE webhook_return_origins;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
