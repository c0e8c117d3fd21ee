-- +goose Up
-- The gateway switches are kept in each instance's memory for a second at
-- most (internal/topup/sqlstore, switches.go). Every write to
-- gateway_switches — an admin's switch, the CLI, an operator's SQL —
-- notifies the channel kifpool_gateway_switches at commit, and every
-- instance that LISTENs drops its copy at once: a switch still applies at
-- every instance's next top-up. A trigger, so that no writer can forget it.
-- +goose StatementBegin
CREATE FUNCTION kifpool_gateway_switches_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kifpool_gateway_switches', '*');
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER gateway_switches_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gateway_switches
    FOR EACH STATEMENT EXECUTE FUNCTION kifpool_gateway_switches_changed();

-- +goose Down
DROP TRIGGER gateway_switches_notify ON gateway_switches;
DROP FUNCTION kifpool_gateway_switches_changed();
