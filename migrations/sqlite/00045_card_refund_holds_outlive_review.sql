-- +goose Up
-- A card refund's hold was made for 180 days (cardrefund.Config.HoldFor).
-- The ledger's sweep skips it, but a capture after that time is refused:
-- a refund under review that an admin confirmed as made half a year on
-- could never be recorded as refunded, and closing it as not made, the one
-- move left, gave the money back to the wallet that the card had also
-- received. Holds are now made for a hundred years (cardrefund.HoldLife,
-- as withdrawals' are); the open ones made before get the same (in UTC,
-- written as the app writes its times).
UPDATE ledger_holds SET expires_at = strftime('%Y-%m-%d %H:%M:%f+00:00', created_at, '+36500 days')
WHERE reason = 'card_refund' AND status = 'open';

-- +goose Down
-- Nothing to undo: a longer life for an open hold is right in the old
-- release too (it never ends a card refund's hold by time).
SELECT 1;
