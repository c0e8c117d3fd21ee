-- +goose Up
-- Sessions are kept in each instance's memory for a second at most
-- (internal/auth, the session cache). Every change to a session or to its
-- user — sign-out, "sign out everywhere", a password change or reset, a
-- role, the second factor, any write by the CLI or by hand — notifies the
-- channel kifpool_sessions with the user's id at commit, and every
-- instance that LISTENs drops that user's sessions from its memory at
-- once. A trigger, so that no writer can forget it.
-- +goose StatementBegin
CREATE FUNCTION kifpool_sessions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('kifpool_sessions', OLD.id::text);
    ELSE
        PERFORM pg_notify('kifpool_sessions', OLD.user_id::text);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER sessions_notify AFTER UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION kifpool_sessions_changed();
CREATE TRIGGER users_notify AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION kifpool_sessions_changed();

-- +goose Down
DROP TRIGGER users_notify ON users;
DROP TRIGGER sessions_notify ON sessions;
DROP FUNCTION kifpool_sessions_changed();
