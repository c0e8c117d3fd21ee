-- +goose Up
-- The due mails with a time-limited link, read first, as on PostgreSQL
-- (its 00054).
CREATE INDEX IF NOT EXISTS mails_due_links_idx ON mails (next_attempt_at, id)
    WHERE status = 'queued' AND expires_at IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS mails_due_links_idx;
