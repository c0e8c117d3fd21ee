-- +goose Up
-- A person's top-ups by status, newest first (see the PostgreSQL
-- migration of the same number): each capped count per status of an
-- e-mail search is one range of this index.
CREATE INDEX topups_user_status_created_idx ON topups (user_id, status, created_at, id);

-- +goose Down
DROP INDEX topups_user_status_created_idx;
