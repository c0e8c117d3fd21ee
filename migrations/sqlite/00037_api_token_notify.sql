-- +goose Up
-- PostgreSQL's 00037 notifies other instances of a changed API token or
-- user (LISTEN/NOTIFY). SQLite serves one instance: the token and auth
-- services drop a changed user's cached tokens in their own process, and
-- nothing changes in the schema.
SELECT 1;

-- +goose Down
SELECT 1;
