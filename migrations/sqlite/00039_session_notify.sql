-- +goose Up
-- PostgreSQL's 00039 notifies other instances of a changed session or
-- user (LISTEN/NOTIFY). SQLite serves one instance: the auth service
-- drops a changed user's cached sessions in its own process, and nothing
-- changes in the schema.
SELECT 1;

-- +goose Down
SELECT 1;
