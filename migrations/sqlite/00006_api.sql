-- +goose Up
-- Personal API tokens. Only the SHA-256 of a token is stored; prefix is
-- its first characters, shown so that people can tell their tokens apart.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    name         TEXT NOT NULL CHECK (name <> ''),
    token_hash   TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'topup')),
    created_at   DATETIME NOT NULL,
    expires_at   DATETIME,
    last_used_at DATETIME,
    revoked_at   DATETIME,
    revoked_by   BIGINT REFERENCES users (id)
);
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (token_hash);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);

-- Idempotency keys of the JSON API, namespaced per user. The unique
-- (user_id, idempotency_key) index is the guarantee: a second insert of a
-- key is answered from the first one's row. locked_until is the lease of
-- the request in flight; response_status/body are set once it finished.
CREATE TABLE idempotency_keys (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id          BIGINT NOT NULL REFERENCES users (id),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_method   TEXT NOT NULL,
    request_path     TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    locked_until     DATETIME,
    response_status  INTEGER,
    response_type    TEXT NOT NULL DEFAULT '',
    response_body    TEXT,
    payment_id       BIGINT REFERENCES payments (id),
    created_at       DATETIME NOT NULL,
    finished_at      DATETIME,
    CONSTRAINT idempotency_keys_finished_has_response CHECK ((response_status IS NULL) = (response_body IS NULL))
);
CREATE UNIQUE INDEX idempotency_keys_user_key ON idempotency_keys (user_id, idempotency_key);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE api_tokens;
