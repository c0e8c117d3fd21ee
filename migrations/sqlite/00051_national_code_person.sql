-- +goose Up
-- A person's daily withdrawals are counted over every account that gave
-- the same national code, as on PostgreSQL (its 00051).
CREATE INDEX national_codes_code_idx ON national_codes (national_code, user_id);

-- +goose Down
DROP INDEX national_codes_code_idx;
