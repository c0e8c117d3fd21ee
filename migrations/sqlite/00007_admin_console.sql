-- +goose Up
-- Indexes of the admin console's payment list: the plain equivalents of
-- PostgreSQL's (no trigram index: e-mail substring search scans users).
CREATE INDEX payments_created_idx ON payments (created_at, id);
CREATE INDEX payments_status_created_idx ON payments (status, created_at, id);
CREATE INDEX payments_open_created_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');
CREATE INDEX payments_user_created_idx ON payments (user_id, created_at, id);
CREATE INDEX payments_authority_idx ON payments (authority) WHERE authority IS NOT NULL;
CREATE INDEX payments_ref_id_idx ON payments (ref_id) WHERE ref_id IS NOT NULL;
CREATE INDEX payments_card_suffix_idx ON payments (substr(card_pan_masked, -4), created_at, id)
    WHERE card_pan_masked <> '';
CREATE INDEX payments_amount_idx ON payments (amount_rials, created_at, id);
CREATE INDEX gateway_calls_started_idx ON gateway_calls (started_at);

-- +goose Down
DROP INDEX gateway_calls_started_idx;
DROP INDEX payments_amount_idx;
DROP INDEX payments_card_suffix_idx;
DROP INDEX payments_ref_id_idx;
DROP INDEX payments_authority_idx;
DROP INDEX payments_user_created_idx;
DROP INDEX payments_open_created_idx;
DROP INDEX payments_status_created_idx;
DROP INDEX payments_created_idx;
