-- +goose Up
CREATE TABLE reconcile_reports (
    id              BIGSERIAL PRIMARY KEY,
    gateway         TEXT NOT NULL,
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ NOT NULL,
    listed          INTEGER NOT NULL DEFAULT 0,
    ours            INTEGER NOT NULL DEFAULT 0,
    credited        INTEGER NOT NULL DEFAULT 0,
    credited_rials  BIGINT NOT NULL DEFAULT 0,
    foreign_count   INTEGER NOT NULL DEFAULT 0,
    foreign_rials   BIGINT NOT NULL DEFAULT 0,
    mismatches      INTEGER NOT NULL DEFAULT 0,
    details         TEXT NOT NULL DEFAULT '[]',
    error           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX reconcile_reports_started_idx ON reconcile_reports (started_at);

-- +goose Down
DROP TABLE reconcile_reports;
