-- +goose NO TRANSACTION
-- +goose Up
-- Indexes of the admin console's payment list (internal/console): every
-- filter, search kind and sort answers from an index, newest or oldest
-- first, with keyset pagination on (created_at, id). Built CONCURRENTLY so
-- that a large production table keeps taking writes meanwhile (hence no
-- transaction; IF NOT EXISTS makes a re-run after an interruption safe).

-- Trigram search on e-mail addresses (substring, case-insensitive). The
-- extension lives in public, whatever the search_path, so that every schema
-- finds its operator class.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE INDEX CONCURRENTLY IF NOT EXISTS users_email_trgm_idx ON users USING gin (lower(email) public.gin_trgm_ops);

-- The default view (all payments, newest first) and created-at ranges.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_created_idx ON payments (created_at, id);
-- One status (credited, failed, ...).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_status_created_idx ON payments (status, created_at, id);
-- The few open payments among millions (a partial index stays small).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_open_created_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');
-- A user's payments (e-mail search, the user's page).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_user_created_idx ON payments (user_id, created_at, id);
-- Search by authority or bank reference alone (the unique indexes lead
-- with the gateway).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_authority_idx ON payments (authority) WHERE authority IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_ref_id_idx ON payments (ref_id) WHERE ref_id IS NOT NULL;
-- Search by the last four digits of the masked card number.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_card_suffix_idx ON payments (right(card_pan_masked, 4), created_at, id)
    WHERE card_pan_masked <> '';
-- Amount ranges.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_amount_idx ON payments (amount_rials, created_at, id);
-- The dashboard's last 24 hours of bank calls.
CREATE INDEX CONCURRENTLY IF NOT EXISTS gateway_calls_started_idx ON gateway_calls (started_at);

-- +goose Down
DROP INDEX IF EXISTS gateway_calls_started_idx;
DROP INDEX IF EXISTS payments_amount_idx;
DROP INDEX IF EXISTS payments_card_suffix_idx;
DROP INDEX IF EXISTS payments_ref_id_idx;
DROP INDEX IF EXISTS payments_authority_idx;
DROP INDEX IF EXISTS payments_user_created_idx;
DROP INDEX IF EXISTS payments_open_created_idx;
DROP INDEX IF EXISTS payments_status_created_idx;
DROP INDEX IF EXISTS payments_created_idx;
DROP INDEX IF EXISTS users_email_trgm_idx;
