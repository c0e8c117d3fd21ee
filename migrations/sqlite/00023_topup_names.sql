-- +goose Up
-- The names (issue 34, item 9). "Payment" meant a top-up in the tables as
-- in the code; now that a wallet also pays merchants, transfers, withdraws
-- and refunds, a top-up is called a top-up everywhere: payments -> topups,
-- payment_events -> topup_events, dismissed_payments -> dismissed_topups,
-- every payment_id column -> topup_id, and the indexes, constraints and
-- sequences that say payment renamed with them. Renames only: no row, type,
-- rule or index definition changes, so nothing is rewritten or rebuilt.
-- No function or trigger body names these tables or columns (the ledger's
-- triggers name only ledger tables).
-- SQLite renames a table or column in place (and the references to it in
-- other tables' foreign keys and in CHECK constraints), but cannot rename
-- an index: each index that says payment is dropped and created again
-- under its new name, with the same definition. A CHECK constraint's name
-- lives in its table's CREATE text, which only a rebuild of the table
-- could change: the topups table keeps its constraint names
-- (payments_credited_has_ref, ...) and ledger_transactions its
-- ledger_transactions_topup_has_payment; only error messages show them.
-- SQLite has no sequences (sqlite_sequence follows the table's new name).
ALTER TABLE payments RENAME TO topups;
ALTER TABLE payment_events RENAME TO topup_events;
ALTER TABLE dismissed_payments RENAME TO dismissed_topups;
ALTER TABLE gateway_calls RENAME COLUMN payment_id TO topup_id;
ALTER TABLE topup_events RENAME COLUMN payment_id TO topup_id;
ALTER TABLE admin_actions RENAME COLUMN payment_id TO topup_id;
ALTER TABLE idempotency_keys RENAME COLUMN payment_id TO topup_id;
ALTER TABLE dismissed_topups RENAME COLUMN payment_id TO topup_id;
ALTER TABLE webhook_deliveries RENAME COLUMN payment_id TO topup_id;
ALTER TABLE ledger_transactions RENAME COLUMN payment_id TO topup_id;
ALTER TABLE return_handovers RENAME COLUMN payment_id TO topup_id;
DROP INDEX payments_user_form_token_key;
CREATE UNIQUE INDEX topups_user_form_token_key ON topups (user_id, form_token);
DROP INDEX payments_gateway_authority_key;
CREATE UNIQUE INDEX topups_gateway_authority_key ON topups (gateway, authority) WHERE authority IS NOT NULL;
DROP INDEX payments_gateway_ref_id_key;
CREATE UNIQUE INDEX topups_gateway_ref_id_key ON topups (gateway, ref_id) WHERE ref_id IS NOT NULL;
DROP INDEX payments_gateway_receipt_key;
CREATE UNIQUE INDEX topups_gateway_receipt_key ON topups (gateway, receipt) WHERE receipt IS NOT NULL;
DROP INDEX payments_user_idx;
CREATE INDEX topups_user_idx ON topups (user_id, id);
DROP INDEX payments_created_idx;
CREATE INDEX topups_created_idx ON topups (created_at, id);
DROP INDEX payments_status_created_idx;
CREATE INDEX topups_status_created_idx ON topups (status, created_at, id);
DROP INDEX payments_user_created_idx;
CREATE INDEX topups_user_created_idx ON topups (user_id, created_at, id);
DROP INDEX payments_authority_idx;
CREATE INDEX topups_authority_idx ON topups (authority) WHERE authority IS NOT NULL;
DROP INDEX payments_ref_id_idx;
CREATE INDEX topups_ref_id_idx ON topups (ref_id) WHERE ref_id IS NOT NULL;
DROP INDEX payments_card_suffix_idx;
CREATE INDEX topups_card_suffix_idx ON topups (substr(card_pan_masked, -4), created_at, id) WHERE card_pan_masked <> '';
DROP INDEX payments_amount_idx;
CREATE INDEX topups_amount_idx ON topups (amount_rials, created_at, id);
DROP INDEX payments_due_opened_idx;
CREATE INDEX topups_due_opened_idx ON topups (status, next_check_at, opened_at);
DROP INDEX payments_failed_returned_idx;
CREATE INDEX topups_failed_returned_idx ON topups (returned_at) WHERE status = 'failed' AND status_reason = 'not_paid_after_lifetime';
DROP INDEX payments_open_created_idx;
CREATE INDEX topups_open_created_idx ON topups (created_at, id) WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX payments_user_open_idx;
CREATE INDEX topups_user_open_idx ON topups (user_id, id) WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX gateway_calls_payment_idx;
CREATE INDEX gateway_calls_topup_idx ON gateway_calls (topup_id, id);
DROP INDEX payment_events_payment_idx;
CREATE INDEX topup_events_topup_idx ON topup_events (topup_id, id);
DROP INDEX admin_actions_payment_idx;
CREATE INDEX admin_actions_topup_idx ON admin_actions (topup_id, id);
DROP INDEX ledger_transactions_payment_idx;
CREATE INDEX ledger_transactions_topup_idx ON ledger_transactions (topup_id) WHERE topup_id IS NOT NULL;

-- +goose Down
DROP INDEX ledger_transactions_topup_idx;
DROP INDEX admin_actions_topup_idx;
DROP INDEX topup_events_topup_idx;
DROP INDEX gateway_calls_topup_idx;
DROP INDEX topups_user_open_idx;
DROP INDEX topups_open_created_idx;
DROP INDEX topups_failed_returned_idx;
DROP INDEX topups_due_opened_idx;
DROP INDEX topups_amount_idx;
DROP INDEX topups_card_suffix_idx;
DROP INDEX topups_ref_id_idx;
DROP INDEX topups_authority_idx;
DROP INDEX topups_user_created_idx;
DROP INDEX topups_status_created_idx;
DROP INDEX topups_created_idx;
DROP INDEX topups_user_idx;
DROP INDEX topups_gateway_receipt_key;
DROP INDEX topups_gateway_ref_id_key;
DROP INDEX topups_gateway_authority_key;
DROP INDEX topups_user_form_token_key;
ALTER TABLE return_handovers RENAME COLUMN topup_id TO payment_id;
ALTER TABLE ledger_transactions RENAME COLUMN topup_id TO payment_id;
ALTER TABLE webhook_deliveries RENAME COLUMN topup_id TO payment_id;
ALTER TABLE dismissed_topups RENAME COLUMN topup_id TO payment_id;
ALTER TABLE idempotency_keys RENAME COLUMN topup_id TO payment_id;
ALTER TABLE admin_actions RENAME COLUMN topup_id TO payment_id;
ALTER TABLE topup_events RENAME COLUMN topup_id TO payment_id;
ALTER TABLE gateway_calls RENAME COLUMN topup_id TO payment_id;
ALTER TABLE dismissed_topups RENAME TO dismissed_payments;
ALTER TABLE topup_events RENAME TO payment_events;
ALTER TABLE topups RENAME TO payments;
CREATE UNIQUE INDEX payments_user_form_token_key ON payments (user_id, form_token);
CREATE UNIQUE INDEX payments_gateway_authority_key ON payments (gateway, authority) WHERE authority IS NOT NULL;
CREATE UNIQUE INDEX payments_gateway_ref_id_key ON payments (gateway, ref_id) WHERE ref_id IS NOT NULL;
CREATE UNIQUE INDEX payments_gateway_receipt_key ON payments (gateway, receipt) WHERE receipt IS NOT NULL;
CREATE INDEX payments_user_idx ON payments (user_id, id);
CREATE INDEX payments_created_idx ON payments (created_at, id);
CREATE INDEX payments_status_created_idx ON payments (status, created_at, id);
CREATE INDEX payments_user_created_idx ON payments (user_id, created_at, id);
CREATE INDEX payments_authority_idx ON payments (authority) WHERE authority IS NOT NULL;
CREATE INDEX payments_ref_id_idx ON payments (ref_id) WHERE ref_id IS NOT NULL;
CREATE INDEX payments_card_suffix_idx ON payments (substr(card_pan_masked, -4), created_at, id) WHERE card_pan_masked <> '';
CREATE INDEX payments_amount_idx ON payments (amount_rials, created_at, id);
CREATE INDEX payments_due_opened_idx ON payments (status, next_check_at, opened_at);
CREATE INDEX payments_failed_returned_idx ON payments (returned_at) WHERE status = 'failed' AND status_reason = 'not_paid_after_lifetime';
CREATE INDEX payments_open_created_idx ON payments (created_at, id) WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
CREATE INDEX payments_user_open_idx ON payments (user_id, id) WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');
CREATE INDEX gateway_calls_payment_idx ON gateway_calls (payment_id, id);
CREATE INDEX payment_events_payment_idx ON payment_events (payment_id, id);
CREATE INDEX admin_actions_payment_idx ON admin_actions (payment_id, id);
CREATE INDEX ledger_transactions_payment_idx ON ledger_transactions (payment_id) WHERE payment_id IS NOT NULL;
