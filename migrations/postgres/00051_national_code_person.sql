-- +goose NO TRANSACTION
-- +goose Up
-- A person's daily withdrawals are counted over every account that gave
-- the same national code (Paya and Satna limit a person, not an account):
-- the withdrawal's write finds them by their code, and locks their rows.
-- Built CONCURRENTLY (no transaction); an interrupted build leaves an
-- INVALID index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS national_codes_code_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS national_codes_code_idx ON national_codes (national_code, user_id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS national_codes_code_idx;
