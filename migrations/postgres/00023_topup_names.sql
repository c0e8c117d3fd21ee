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
ALTER TABLE payments RENAME TO topups;
ALTER TABLE payment_events RENAME TO topup_events;
ALTER TABLE dismissed_payments RENAME TO dismissed_topups;
ALTER SEQUENCE payments_id_seq RENAME TO topups_id_seq;
ALTER SEQUENCE payment_events_id_seq RENAME TO topup_events_id_seq;
ALTER TABLE gateway_calls RENAME COLUMN payment_id TO topup_id;
ALTER TABLE topup_events RENAME COLUMN payment_id TO topup_id;
ALTER TABLE admin_actions RENAME COLUMN payment_id TO topup_id;
ALTER TABLE idempotency_keys RENAME COLUMN payment_id TO topup_id;
ALTER TABLE dismissed_topups RENAME COLUMN payment_id TO topup_id;
ALTER TABLE webhook_deliveries RENAME COLUMN payment_id TO topup_id;
ALTER TABLE ledger_transactions RENAME COLUMN payment_id TO topup_id;
ALTER TABLE return_handovers RENAME COLUMN payment_id TO topup_id;
-- Constraints (their indexes follow a unique or primary key's name).
ALTER TABLE topups RENAME CONSTRAINT payments_pkey TO topups_pkey;
ALTER TABLE topups RENAME CONSTRAINT payments_public_id_key TO topups_public_id_key;
ALTER TABLE topups RENAME CONSTRAINT payments_user_id_fkey TO topups_user_id_fkey;
ALTER TABLE topups RENAME CONSTRAINT payments_wallet_id_fkey TO topups_wallet_id_fkey;
ALTER TABLE topups RENAME CONSTRAINT payments_amount_rials_check TO topups_amount_rials_check;
ALTER TABLE topups RENAME CONSTRAINT payments_credited_has_ref TO topups_credited_has_ref;
ALTER TABLE topups RENAME CONSTRAINT payments_credit_failures_check TO topups_credit_failures_check;
ALTER TABLE topups RENAME CONSTRAINT payments_receipt_check TO topups_receipt_check;
ALTER TABLE topups RENAME CONSTRAINT payments_status_check TO topups_status_check;
ALTER TABLE topups RENAME CONSTRAINT payments_receipt_source_check TO topups_receipt_source_check;
ALTER TABLE topup_events RENAME CONSTRAINT payment_events_pkey TO topup_events_pkey;
ALTER TABLE topup_events RENAME CONSTRAINT payment_events_actor_check TO topup_events_actor_check;
ALTER TABLE topup_events RENAME CONSTRAINT payment_events_payment_id_fkey TO topup_events_topup_id_fkey;
ALTER TABLE topup_events RENAME CONSTRAINT payment_events_admin_id_fkey TO topup_events_admin_id_fkey;
ALTER TABLE gateway_calls RENAME CONSTRAINT gateway_calls_payment_id_fkey TO gateway_calls_topup_id_fkey;
ALTER TABLE admin_actions RENAME CONSTRAINT admin_actions_new_payment_id_fkey TO admin_actions_topup_id_fkey;
ALTER TABLE webhook_deliveries RENAME CONSTRAINT webhook_deliveries_payment_id_fkey TO webhook_deliveries_topup_id_fkey;
ALTER TABLE idempotency_keys RENAME CONSTRAINT idempotency_keys_payment_id_fkey TO idempotency_keys_topup_id_fkey;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_payments_pkey TO dismissed_topups_pkey;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_payments_payment_id_fkey TO dismissed_topups_topup_id_fkey;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_payments_user_id_fkey TO dismissed_topups_user_id_fkey;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_topup_has_payment TO ledger_transactions_topup_has_topup_id;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_payment_id_fkey TO ledger_transactions_topup_id_fkey;
ALTER TABLE return_handovers RENAME CONSTRAINT return_handovers_payment_id_fkey TO return_handovers_topup_id_fkey;
-- Indexes that back no constraint.
ALTER INDEX payments_user_form_token_key RENAME TO topups_user_form_token_key;
ALTER INDEX payments_gateway_authority_key RENAME TO topups_gateway_authority_key;
ALTER INDEX payments_gateway_ref_id_key RENAME TO topups_gateway_ref_id_key;
ALTER INDEX payments_gateway_receipt_key RENAME TO topups_gateway_receipt_key;
ALTER INDEX payments_user_idx RENAME TO topups_user_idx;
ALTER INDEX payments_created_idx RENAME TO topups_created_idx;
ALTER INDEX payments_status_created_idx RENAME TO topups_status_created_idx;
ALTER INDEX payments_user_created_idx RENAME TO topups_user_created_idx;
ALTER INDEX payments_authority_idx RENAME TO topups_authority_idx;
ALTER INDEX payments_ref_id_idx RENAME TO topups_ref_id_idx;
ALTER INDEX payments_card_suffix_idx RENAME TO topups_card_suffix_idx;
ALTER INDEX payments_amount_idx RENAME TO topups_amount_idx;
ALTER INDEX payments_due_opened_idx RENAME TO topups_due_opened_idx;
ALTER INDEX payments_failed_returned_idx RENAME TO topups_failed_returned_idx;
ALTER INDEX payments_open_created_idx RENAME TO topups_open_created_idx;
ALTER INDEX payments_user_open_idx RENAME TO topups_user_open_idx;
ALTER INDEX gateway_calls_payment_idx RENAME TO gateway_calls_topup_idx;
ALTER INDEX payment_events_payment_idx RENAME TO topup_events_topup_idx;
ALTER INDEX admin_actions_payment_idx RENAME TO admin_actions_topup_idx;
ALTER INDEX ledger_transactions_payment_idx RENAME TO ledger_transactions_topup_idx;

-- +goose Down
ALTER INDEX ledger_transactions_topup_idx RENAME TO ledger_transactions_payment_idx;
ALTER INDEX admin_actions_topup_idx RENAME TO admin_actions_payment_idx;
ALTER INDEX topup_events_topup_idx RENAME TO payment_events_payment_idx;
ALTER INDEX gateway_calls_topup_idx RENAME TO gateway_calls_payment_idx;
ALTER INDEX topups_user_open_idx RENAME TO payments_user_open_idx;
ALTER INDEX topups_open_created_idx RENAME TO payments_open_created_idx;
ALTER INDEX topups_failed_returned_idx RENAME TO payments_failed_returned_idx;
ALTER INDEX topups_due_opened_idx RENAME TO payments_due_opened_idx;
ALTER INDEX topups_amount_idx RENAME TO payments_amount_idx;
ALTER INDEX topups_card_suffix_idx RENAME TO payments_card_suffix_idx;
ALTER INDEX topups_ref_id_idx RENAME TO payments_ref_id_idx;
ALTER INDEX topups_authority_idx RENAME TO payments_authority_idx;
ALTER INDEX topups_user_created_idx RENAME TO payments_user_created_idx;
ALTER INDEX topups_status_created_idx RENAME TO payments_status_created_idx;
ALTER INDEX topups_created_idx RENAME TO payments_created_idx;
ALTER INDEX topups_user_idx RENAME TO payments_user_idx;
ALTER INDEX topups_gateway_receipt_key RENAME TO payments_gateway_receipt_key;
ALTER INDEX topups_gateway_ref_id_key RENAME TO payments_gateway_ref_id_key;
ALTER INDEX topups_gateway_authority_key RENAME TO payments_gateway_authority_key;
ALTER INDEX topups_user_form_token_key RENAME TO payments_user_form_token_key;
ALTER TABLE return_handovers RENAME CONSTRAINT return_handovers_topup_id_fkey TO return_handovers_payment_id_fkey;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_topup_id_fkey TO ledger_transactions_payment_id_fkey;
ALTER TABLE ledger_transactions RENAME CONSTRAINT ledger_transactions_topup_has_topup_id TO ledger_transactions_topup_has_payment;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_topups_user_id_fkey TO dismissed_payments_user_id_fkey;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_topups_topup_id_fkey TO dismissed_payments_payment_id_fkey;
ALTER TABLE dismissed_topups RENAME CONSTRAINT dismissed_topups_pkey TO dismissed_payments_pkey;
ALTER TABLE idempotency_keys RENAME CONSTRAINT idempotency_keys_topup_id_fkey TO idempotency_keys_payment_id_fkey;
ALTER TABLE webhook_deliveries RENAME CONSTRAINT webhook_deliveries_topup_id_fkey TO webhook_deliveries_payment_id_fkey;
ALTER TABLE admin_actions RENAME CONSTRAINT admin_actions_topup_id_fkey TO admin_actions_new_payment_id_fkey;
ALTER TABLE gateway_calls RENAME CONSTRAINT gateway_calls_topup_id_fkey TO gateway_calls_payment_id_fkey;
ALTER TABLE topup_events RENAME CONSTRAINT topup_events_admin_id_fkey TO payment_events_admin_id_fkey;
ALTER TABLE topup_events RENAME CONSTRAINT topup_events_topup_id_fkey TO payment_events_payment_id_fkey;
ALTER TABLE topup_events RENAME CONSTRAINT topup_events_actor_check TO payment_events_actor_check;
ALTER TABLE topup_events RENAME CONSTRAINT topup_events_pkey TO payment_events_pkey;
ALTER TABLE topups RENAME CONSTRAINT topups_receipt_source_check TO payments_receipt_source_check;
ALTER TABLE topups RENAME CONSTRAINT topups_status_check TO payments_status_check;
ALTER TABLE topups RENAME CONSTRAINT topups_receipt_check TO payments_receipt_check;
ALTER TABLE topups RENAME CONSTRAINT topups_credit_failures_check TO payments_credit_failures_check;
ALTER TABLE topups RENAME CONSTRAINT topups_credited_has_ref TO payments_credited_has_ref;
ALTER TABLE topups RENAME CONSTRAINT topups_amount_rials_check TO payments_amount_rials_check;
ALTER TABLE topups RENAME CONSTRAINT topups_wallet_id_fkey TO payments_wallet_id_fkey;
ALTER TABLE topups RENAME CONSTRAINT topups_user_id_fkey TO payments_user_id_fkey;
ALTER TABLE topups RENAME CONSTRAINT topups_public_id_key TO payments_public_id_key;
ALTER TABLE topups RENAME CONSTRAINT topups_pkey TO payments_pkey;
ALTER TABLE return_handovers RENAME COLUMN topup_id TO payment_id;
ALTER TABLE ledger_transactions RENAME COLUMN topup_id TO payment_id;
ALTER TABLE webhook_deliveries RENAME COLUMN topup_id TO payment_id;
ALTER TABLE dismissed_topups RENAME COLUMN topup_id TO payment_id;
ALTER TABLE idempotency_keys RENAME COLUMN topup_id TO payment_id;
ALTER TABLE admin_actions RENAME COLUMN topup_id TO payment_id;
ALTER TABLE topup_events RENAME COLUMN topup_id TO payment_id;
ALTER TABLE gateway_calls RENAME COLUMN topup_id TO payment_id;
ALTER SEQUENCE topup_events_id_seq RENAME TO payment_events_id_seq;
ALTER SEQUENCE topups_id_seq RENAME TO payments_id_seq;
ALTER TABLE dismissed_topups RENAME TO dismissed_payments;
ALTER TABLE topup_events RENAME TO payment_events;
ALTER TABLE topups RENAME TO payments;
