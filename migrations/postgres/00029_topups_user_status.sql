-- +goose NO TRANSACTION
-- +goose Up
-- A person's top-ups by status, newest first (issue 32, measured by make
-- bench-admin at 10M top-ups): the admin list's capped counts per status
-- of an e-mail search, and a user's page, read "status = X of this user,
-- newest first, at most 1,001". With only (user_id, created_at, id) a
-- count of a common status read every top-up of the person (5 s for one
-- with 100,000, cold): now each count is one range of this index.
-- Built CONCURRENTLY (no transaction); an interrupted build leaves an
-- INVALID index, dropped before it is built again.
DROP INDEX CONCURRENTLY IF EXISTS topups_user_status_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS topups_user_status_created_idx ON topups (user_id, status, created_at, id);

-- +goose Down
DROP INDEX IF EXISTS topups_user_status_created_idx;
