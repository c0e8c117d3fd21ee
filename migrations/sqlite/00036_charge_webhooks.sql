-- +goose Up
-- Webhook deliveries of a charge's events: see the PostgreSQL migration
-- of the same number. SQLite changes a CHECK only by rebuilding the
-- table, keeping every row and index.
CREATE TABLE webhook_deliveries_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL,
    endpoint_id      BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    topup_id         BIGINT REFERENCES topups (id),
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
    withdrawal_id    BIGINT REFERENCES withdrawals (id),
    charge_id        BIGINT REFERENCES charges (id),
    CONSTRAINT webhook_deliveries_one_subject
        CHECK ((topup_id IS NOT NULL) + (transfer_id IS NOT NULL) + (withdrawal_id IS NOT NULL) + (charge_id IS NOT NULL) = 1)
);
INSERT INTO webhook_deliveries_new (id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at, transfer_id, withdrawal_id)
    SELECT id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at, transfer_id, withdrawal_id
    FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries (endpoint_id, event_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, topup_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_withdrawal_order_idx ON webhook_deliveries (endpoint_id, withdrawal_id, id)
    WHERE status = 'pending' AND withdrawal_id IS NOT NULL;
CREATE INDEX webhook_deliveries_charge_order_idx ON webhook_deliveries (endpoint_id, charge_id, id)
    WHERE status = 'pending' AND charge_id IS NOT NULL;
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id);


-- +goose Down
DELETE FROM webhook_deliveries WHERE charge_id IS NOT NULL;
CREATE TABLE webhook_deliveries_old (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL,
    endpoint_id      BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    topup_id         BIGINT REFERENCES topups (id),
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
    withdrawal_id    BIGINT REFERENCES withdrawals (id),
    CONSTRAINT webhook_deliveries_one_subject
        CHECK ((topup_id IS NOT NULL) + (transfer_id IS NOT NULL) + (withdrawal_id IS NOT NULL) = 1)
);
INSERT INTO webhook_deliveries_old (id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at, transfer_id, withdrawal_id)
    SELECT id, event_id, endpoint_id, topup_id, type, body, status, attempts, next_attempt_at,
        last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at, transfer_id, withdrawal_id
    FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_old RENAME TO webhook_deliveries;
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries (endpoint_id, event_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, topup_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_withdrawal_order_idx ON webhook_deliveries (endpoint_id, withdrawal_id, id)
    WHERE status = 'pending' AND withdrawal_id IS NOT NULL;
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id);

