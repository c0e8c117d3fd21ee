-- +goose Up
-- API tokens are kept in each instance's memory for a second at most
-- (internal/apitoken, the token cache). Every change to a token — a
-- revocation by its owner, an admin, "sign out everywhere", a password
-- change or reset; a new scope, expiry or owner; its deletion; any write
-- by the CLI or by hand — and every change to a user (whose address a
-- token's principal carries; whose deletion ends its tokens) notifies the
-- channel kifpool_api_tokens with the user's id at commit, and every
-- instance that LISTENs drops that user's tokens from its memory at once.
-- A trigger, so that no writer can forget it. A token's last use alone
-- (written every few seconds by each instance's flush) changes nothing
-- that decides its validity and notifies nothing.
-- +goose StatementBegin
CREATE FUNCTION kifpool_api_tokens_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('kifpool_api_tokens', OLD.id::text);
    ELSE
        PERFORM pg_notify('kifpool_api_tokens', OLD.user_id::text);
        IF TG_OP = 'UPDATE' AND NEW.user_id IS DISTINCT FROM OLD.user_id THEN
            PERFORM pg_notify('kifpool_api_tokens', NEW.user_id::text);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER api_tokens_notify AFTER UPDATE ON api_tokens
    FOR EACH ROW
    WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
    EXECUTE FUNCTION kifpool_api_tokens_changed();
CREATE TRIGGER api_tokens_delete_notify AFTER DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION kifpool_api_tokens_changed();
CREATE TRIGGER users_api_tokens_notify AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION kifpool_api_tokens_changed();

-- +goose Down
DROP TRIGGER users_api_tokens_notify ON users;
DROP TRIGGER api_tokens_delete_notify ON api_tokens;
DROP TRIGGER api_tokens_notify ON api_tokens;
DROP FUNCTION kifpool_api_tokens_changed();
