-- +goose Up
-- A person's display name (optional, at most 60 characters, set on the
-- account page): shown to a sender at a transfer's confirmation beside
-- the recipient's masked address, so that they can tell they have the
-- right person. Empty means none was given.
ALTER TABLE users ADD COLUMN display_name TEXT NOT NULL DEFAULT '' CHECK (length(display_name) <= 60);

-- +goose Down
ALTER TABLE users DROP COLUMN display_name;
