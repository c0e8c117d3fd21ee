-- +goose Up
-- An operator's switch of a gateway (ARCHITECTURE §6): a gateway switched
-- off is not offered to new top-ups, without a restart (every instance
-- reads it at each start of a top-up); payments already at it are still
-- verified there. One row per gateway ever switched; every change is also
-- in the audit log (admin_actions, gateway_switch).
CREATE TABLE gateway_switches (
    gateway    TEXT PRIMARY KEY,
    disabled   BOOLEAN NOT NULL,
    note       TEXT NOT NULL DEFAULT '',
    admin_id   BIGINT REFERENCES users (id) ON DELETE SET NULL,
    updated_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE gateway_switches;
