-- +goose Up
-- PostgreSQL's 00048 stamps each row of the four tables the mail scans
-- read with the database's time of its insert, so that a scan never
-- passes a row inserted after a writer still open began. SQLite's writers
-- take turns (no id commits behind a higher one): the column is here, for
-- the scans' one query, and stays NULL.
ALTER TABLE topup_events ADD COLUMN inserted_at TIMESTAMP;
ALTER TABLE transfers ADD COLUMN inserted_at TIMESTAMP;
ALTER TABLE card_refund_events ADD COLUMN inserted_at TIMESTAMP;
ALTER TABLE withdrawal_events ADD COLUMN inserted_at TIMESTAMP;

-- +goose Down
ALTER TABLE withdrawal_events DROP COLUMN inserted_at;
ALTER TABLE card_refund_events DROP COLUMN inserted_at;
ALTER TABLE transfers DROP COLUMN inserted_at;
ALTER TABLE topup_events DROP COLUMN inserted_at;
