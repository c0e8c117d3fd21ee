-- +goose Up
-- A payment the bank verified that cannot be credited is reversed by the
-- worker: status reversing and the reverse's intent (reverse_sent_at), as
-- on PostgreSQL (its 00056). topups.status's CHECK takes reversing: the
-- CHECK only gets looser, so the table's definition is edited in place
-- as in 00018 (sqlite.org/lang_altertable.html §7); the ADD COLUMN after
-- it changes the schema cookie, so every open connection reads the
-- schema again before its next statement. The WHERE makes a re-run
-- change nothing.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, '''settling'',', '''settling'', ''reversing'',')
 WHERE type = 'table' AND name = 'topups' AND sql NOT LIKE '%''reversing''%';
PRAGMA writable_schema = RESET;
ALTER TABLE topups ADD COLUMN reverse_sent_at DATETIME;

-- +goose Down
-- Reversing payments go to review (a person looks at the bank), with
-- their event, before the CHECK loses reversing. One whose reverse was
-- sent (reverse_sent_at, dropped below) says its outcome is unknown
-- (unknown_too_long), never "window closed", which reads as not sent:
-- an admin who refunded it by hand would pay the payer twice.
INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, created_at)
SELECT id, 'reversing', 'needs_review', 'worker',
       CASE WHEN reverse_sent_at IS NULL THEN 'reverse_window_closed' ELSE 'unknown_too_long' END, updated_at
  FROM topups WHERE status = 'reversing' ORDER BY id;
UPDATE topups SET status = 'needs_review',
       status_reason = CASE WHEN reverse_sent_at IS NULL THEN 'reverse_window_closed' ELSE 'unknown_too_long' END,
       lease_until = NULL, lease_owner = ''
 WHERE status = 'reversing';
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, '''settling'', ''reversing'',', '''settling'',')
 WHERE type = 'table' AND name = 'topups';
PRAGMA writable_schema = RESET;
ALTER TABLE topups DROP COLUMN reverse_sent_at;
