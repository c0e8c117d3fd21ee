-- +goose Up
-- A payment the bank verified whose settle is not done yet (Mellat) has a
-- status of its own: settling (ARCHITECTURE §3). payments.status's CHECK
-- takes it.
--
-- The CHECK only gets looser, so no row on disk changes meaning: the
-- table's definition is edited in place (sqlite.org/lang_altertable.html
-- §7, the procedure for changes that do not affect the on-disk content)
-- rather than rebuilt — a rebuild would have to recreate every index and
-- turn foreign keys off, which cannot happen inside the transaction goose
-- runs this in. writable_schema=RESET ends the edit and makes this
-- connection read the schema again; the index rebuilds below change the
-- schema cookie, so every other open connection reads it again too before
-- its next statement (no connection keeps enforcing the old CHECK). The
-- WHERE makes a re-run change nothing.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, '''pending_verification'',', '''pending_verification'', ''settling'',')
 WHERE type = 'table' AND name = 'payments' AND sql NOT LIKE '%''settling''%';
PRAGMA writable_schema = RESET;

-- The partial indexes of open payments take settling too: the admin
-- list's (00007) and the wallet page's (00008). The queries meant to read
-- them name exactly these lists (internal/paymentread).
DROP INDEX payments_open_created_idx;
CREATE INDEX payments_open_created_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'settling', 'needs_review');
DROP INDEX payments_user_open_idx;
CREATE INDEX payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'settling', 'needs_review');

-- Payments verified before this version whose settle is unknown were kept
-- as pending_verification with reason settle_unknown: they are settling.
-- Each gets its event (the chain of events ends in the status), at the
-- time the payment last changed. One held by an actor right now is left:
-- its next check verifies (43) and moves it to settling.
INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'pending_verification', 'settling', 'worker', 'settle_unknown', updated_at
  FROM payments
 WHERE status = 'pending_verification' AND status_reason = 'settle_unknown' AND lease_until IS NULL
 ORDER BY id;
UPDATE payments SET status = 'settling'
 WHERE status = 'pending_verification' AND status_reason = 'settle_unknown' AND lease_until IS NULL;

-- +goose Down
-- Settling payments go back to the old spelling (pending_verification,
-- settle_unknown: the old code verifies, 43, and settles again), with
-- their event, before the CHECK loses settling; the index rebuilds after
-- the edit change the schema cookie (see Up).
INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'settling', 'pending_verification', 'worker', 'settle_unknown', updated_at
  FROM payments WHERE status = 'settling' ORDER BY id;
UPDATE payments SET status = 'pending_verification', status_reason = 'settle_unknown' WHERE status = 'settling';
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, '''pending_verification'', ''settling'',', '''pending_verification'',')
 WHERE type = 'table' AND name = 'payments';
PRAGMA writable_schema = RESET;
DROP INDEX payments_user_open_idx;
CREATE INDEX payments_user_open_idx ON payments (user_id, id)
    WHERE status IN ('awaiting_payment', 'pending_verification', 'needs_review');
DROP INDEX payments_open_created_idx;
CREATE INDEX payments_open_created_idx ON payments (created_at, id)
    WHERE status IN ('created', 'awaiting_payment', 'pending_verification', 'needs_review');
