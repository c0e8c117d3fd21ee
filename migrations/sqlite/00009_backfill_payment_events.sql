-- +goose Up
-- Payments that changed status before payment_events existed (migration
-- 00004) have no event, so their event chain cannot end in their status
-- (kifpool check's events_end_in_status, the upgrade drill). Each gets one
-- event from created to its current status, marked by its reason as
-- written by this migration (history_before_events), at the time the
-- payment last changed. Nothing else is touched; a payment that has events
-- keeps exactly those.
INSERT INTO payment_events (payment_id, from_status, to_status, actor, reason, created_at)
SELECT p.id, 'created', p.status, 'worker', 'history_before_events', COALESCE(p.resolved_at, p.updated_at)
FROM payments p
WHERE p.status <> 'created'
  AND NOT EXISTS (SELECT 1 FROM payment_events e WHERE e.payment_id = p.id)
ORDER BY p.id;

-- +goose Down
-- The backfilled events stay: events are append-only history.
SELECT 1;
