-- +goose Up
-- PostgreSQL's 00040 notifies other instances of a changed gateway switch
-- (LISTEN/NOTIFY). SQLite serves one instance: the store drops its kept
-- switches in its own process, and nothing changes in the schema.
SELECT 1;

-- +goose Down
SELECT 1;
