-- +goose Up
-- Each ownership inquiry a user's new bank account made (the provider's
-- paid "is this Sheba this national code's?"), so that every instance
-- counts the same: at most bankaccount.InquiriesPerDay in 24 hours per
-- user. A mismatch stores no account, so without this count the inquiry
-- could be asked without end: the provider's credit drained, and whose
-- any Sheba is learned pair by pair.
CREATE TABLE bank_inquiries (
    id          BIGSERIAL PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX bank_inquiries_user_idx ON bank_inquiries (user_id, created_at);

-- +goose Down
DROP TABLE bank_inquiries;
