// Package integrity holds the rules the money's data must always obey
// (ARCHITECTURE §2) as read-only queries, and runs them over a whole
// database: `kifpool check` against a live database, and the integration
// tests after every scenario (topuptest/storetest CheckInvariants), so
// that the rules are written once.
//
// Every rule is a plain SELECT naming each row that breaks it, written as
// one pass over each table it reads (joins and aggregates, window
// functions; no subquery run once per row of a big table), so that a
// whole check of 10M top-ups takes minutes. Check runs each rule in a
// read-only transaction of its own: on PostgreSQL a REPEATABLE READ READ
// ONLY snapshot (consistent within the rule, no locks that stop writers,
// and held only as long as that rule runs, so vacuum is not held back
// for the whole check), on SQLite a deferred read transaction (a WAL
// snapshot: writers go on). Each rule relates rows that one transaction
// of the app writes together, so a rule's own snapshot is all it needs.
package integrity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/store"
)

// Rule is one promise and the query that finds the rows breaking it: each
// row the query returns is (subject, detail), e.g. ("top-up p_abc", "2
// ledger entries").
type Rule struct {
	Name string // short, stable: balance_equals_ledger, …
	What string // one sentence for people
	// CallLog marks a rule that needs the bank calls recorded with each
	// credit (gateway_calls): the production wiring always records them,
	// tests with a bare fake gateway do not.
	CallLog bool
	// Open marks the rule that needs Options.Now and the deadlines.
	Open bool
	// sorted marks a rule that reads a whole table in an order other than
	// its heap's: on PostgreSQL it reads the table once and sorts it
	// (enable_indexscan off) rather than walk an index and jump through
	// the heap for every row (measured faster at 1M postings, 13–18 s
	// against 20–23 s, and the gap grows with the table).
	sorted bool
	query  string
}

// Rules are the rules Check runs, in order.
var rules = []Rule{
	{Name: "ledger_transaction_balanced", What: "each ledger transaction has two or more postings summing to zero",
		query: `SELECT 'ledger transaction ' || t.id, COUNT(lp.id) || ' postings summing to ' || COALESCE(SUM(lp.amount_rials), 0) || ' rials'
			FROM ledger_transactions t LEFT JOIN ledger_postings lp ON lp.transaction_id = t.id
			GROUP BY t.id HAVING COALESCE(SUM(lp.amount_rials), 0) <> 0 OR COUNT(lp.id) < 2 ORDER BY t.id`},
	{Name: "account_posted_equals_postings", What: "each account's posted balance equals the sum of its postings",
		query: `SELECT 'account ' || a.code, 'posted ' || a.posted_rials || ' rials, postings sum to ' || COALESCE(s.total, 0) || ' rials'
			FROM ledger_accounts a LEFT JOIN (SELECT account_id, SUM(amount_rials) AS total FROM ledger_postings GROUP BY account_id) s
			ON s.account_id = a.id WHERE a.posted_rials <> COALESCE(s.total, 0) ORDER BY a.id`},
	{Name: "account_held_equals_open_holds", What: "each account's held amount equals the sum of its open holds",
		query: `SELECT 'account ' || a.code, 'held ' || a.held_rials || ' rials, open holds sum to ' || COALESCE(s.total, 0) || ' rials'
			FROM ledger_accounts a LEFT JOIN (SELECT account_id, SUM(amount_rials) AS total FROM ledger_holds WHERE status = 'open' GROUP BY account_id) s
			ON s.account_id = a.id WHERE a.held_rials <> COALESCE(s.total, 0) ORDER BY a.id`},
	{Name: "account_not_negative", What: "no account but the outside world's (gateways, payout rails) is below zero, posted or available",
		query: `SELECT 'account ' || code, 'posted ' || posted_rials || ' rials, held ' || held_rials || ' rials'
			FROM ledger_accounts WHERE kind NOT IN ('gateway', 'payout_rail')
			AND (posted_rials < 0 OR held_rials < 0 OR posted_rials - held_rials < 0 OR may_go_negative) ORDER BY id`},
	{Name: "ledger_running_balance", What: "each posting's balance after is the sum of its account's postings up to it", sorted: true,
		// The running sum checked step by step (the first posting's balance
		// after is its amount, each next one's the previous one's plus its
		// amount): one pass in the account's order, in bigint.
		query: `SELECT 'ledger transaction ' || transaction_id, 'account ' || account_id || ': balance after ' || balance_after_rials
				|| ' rials, ' || amount_rials || ' rials after ' || previous || ' rials'
			FROM (SELECT transaction_id, account_id, amount_rials, balance_after_rials,
				COALESCE(LAG(balance_after_rials) OVER (PARTITION BY account_id ORDER BY id), 0) AS previous FROM ledger_postings) r
			WHERE balance_after_rials - amount_rials <> previous ORDER BY transaction_id`},
	{Name: "reversed_at_most_once", What: "a ledger transaction is reversed at most once, by its exact opposite",
		query: `SELECT 'ledger transaction ' || reverses_id, COUNT(*) || ' reversals' FROM ledger_transactions
			WHERE reverses_id IS NOT NULL GROUP BY reverses_id HAVING COUNT(*) > 1
			UNION ALL
			SELECT 'ledger transaction ' || r.id, 'reverses transaction ' || r.reverses_id || ' but its postings are not the opposite'
			FROM ledger_transactions r WHERE r.reverses_id IS NOT NULL AND (
				EXISTS (SELECT 1 FROM ledger_postings rp WHERE rp.transaction_id = r.id AND NOT EXISTS (SELECT 1 FROM ledger_postings op
					WHERE op.transaction_id = r.reverses_id AND op.account_id = rp.account_id AND op.amount_rials = -rp.amount_rials))
				OR EXISTS (SELECT 1 FROM ledger_postings op WHERE op.transaction_id = r.reverses_id AND NOT EXISTS (SELECT 1 FROM ledger_postings rp
					WHERE rp.transaction_id = r.id AND rp.account_id = op.account_id AND rp.amount_rials = -op.amount_rials)))`},
	{Name: "no_reversal_of_reversal", What: "no ledger transaction reverses a reversal: a correction of a correction is a new movement",
		query: `SELECT 'ledger transaction ' || r.id, 'reverses transaction ' || o.id || ', itself a reversal (of transaction '
				|| COALESCE(CAST(o.reverses_id AS TEXT), 'none') || ')'
			FROM ledger_transactions r JOIN ledger_transactions o ON o.id = r.reverses_id
			WHERE r.reverses_id IS NOT NULL AND o.kind = 'reversal' ORDER BY r.id`},
	{Name: "hold_captured_once", What: "a captured hold's transaction takes exactly its captured amount off its account, and is no other hold's",
		query: `SELECT 'hold ' || h.reason || ' ' || h.reference, 'captured ' || h.captured_rials || ' rials by transaction '
				|| COALESCE(CAST(h.transaction_id AS TEXT), 'none') || ', which takes ' || COALESCE(CAST((SELECT -SUM(lp.amount_rials)
				FROM ledger_postings lp WHERE lp.transaction_id = h.transaction_id AND lp.account_id = h.account_id) AS TEXT), 'nothing')
				|| ' rials off its account and ends ' || (SELECT COUNT(*) FROM ledger_holds h2 WHERE h2.transaction_id = h.transaction_id) || ' holds'
			FROM ledger_holds h WHERE h.status = 'captured' AND (h.transaction_id IS NULL
				OR COALESCE((SELECT -SUM(lp.amount_rials) FROM ledger_postings lp WHERE lp.transaction_id = h.transaction_id
					AND lp.account_id = h.account_id), 0) <> h.captured_rials
				OR (SELECT COUNT(*) FROM ledger_holds h2 WHERE h2.transaction_id = h.transaction_id) > 1) ORDER BY h.id`},
	{Name: "transfer_has_its_transaction", What: "each transfer has its one ledger transaction, taking its amount from the sender's wallet to the recipient's",
		query: `SELECT 'transfer ' || tr.public_id, COUNT(lp.id) || ' postings, ' || COUNT(CASE WHEN a.kind = 'wallet' AND (a.user_id = tr.sender_user_id AND lp.amount_rials = -tr.amount_rials
					OR a.user_id = tr.recipient_user_id AND lp.amount_rials = tr.amount_rials) THEN 1 END)
				|| ' of them its amount between its two people''s wallets'
			FROM transfers tr LEFT JOIN ledger_transactions t ON t.kind = 'transfer' AND t.reference = tr.public_id
			LEFT JOIN ledger_postings lp ON lp.transaction_id = t.id LEFT JOIN ledger_accounts a ON a.id = lp.account_id
			GROUP BY tr.id, tr.public_id HAVING COUNT(lp.id) <> 2 OR COUNT(CASE WHEN a.kind = 'wallet' AND (a.user_id = tr.sender_user_id AND lp.amount_rials = -tr.amount_rials
					OR a.user_id = tr.recipient_user_id AND lp.amount_rials = tr.amount_rials) THEN 1 END) <> 2
			ORDER BY tr.id`},
	{Name: "wallet_has_account", What: "each wallet has its ledger account",
		query: `SELECT 'wallet ' || w.id, 'no ledger account' FROM wallets w
			WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.wallet_id = w.id) ORDER BY w.id`},
	{Name: "one_topup_per_bank_reference", What: "a bank reference belongs to one top-up",
		query: `SELECT 'bank reference ' || gateway || ' ' || ref_id, COUNT(*) || ' top-ups' FROM topups WHERE ref_id IS NOT NULL
			GROUP BY gateway, ref_id HAVING COUNT(*) > 1 ORDER BY gateway, ref_id`},
	{Name: "credited_has_bank_reference", What: "a credited top-up has the bank's reference and a verified amount equal to its own",
		query: `SELECT 'top-up ' || public_id, 'ref_id ' || COALESCE(CAST(ref_id AS TEXT), 'missing') || ', verified '
			|| COALESCE(CAST(verified_amount_rials AS TEXT), 'missing') || ' of ' || amount_rials || ' rials'
			FROM topups WHERE status = 'credited'
			AND (ref_id IS NULL OR verified_amount_rials IS NULL OR verified_amount_rials <> amount_rials) ORDER BY id`},
	{Name: "credited_has_its_transaction", What: "a credited top-up has exactly one ledger transaction, of its amount, into its wallet",
		query: `SELECT 'top-up ' || p.public_id, 'credited with ' || COUNT(DISTINCT t.id) || ' top-up transactions, '
				|| COUNT(a.id) || ' of its amount into its wallet'
			FROM topups p LEFT JOIN ledger_transactions t ON t.topup_id = p.id AND t.kind = 'topup'
			LEFT JOIN ledger_postings lp ON lp.transaction_id = t.id AND lp.amount_rials = p.amount_rials
			LEFT JOIN ledger_accounts a ON a.id = lp.account_id AND a.wallet_id = p.wallet_id
			WHERE p.status = 'credited'
			GROUP BY p.id, p.public_id HAVING COUNT(DISTINCT t.id) <> 1 OR COUNT(a.id) <> 1 ORDER BY p.id`},
	{Name: "ledger_only_for_credited", What: "only credited top-ups have a top-up transaction",
		query: `SELECT 'top-up ' || p.public_id, 'status ' || p.status || ' with ledger transaction ' || t.id
			FROM ledger_transactions t JOIN topups p ON p.id = t.topup_id WHERE t.kind = 'topup' AND p.status <> 'credited' ORDER BY t.id`},
	{Name: "events_end_in_status", What: "a top-up's last event ends in its status",
		query: `SELECT 'top-up ' || p.public_id, 'status ' || p.status || ', last event to ' || COALESCE(l.to_status, 'none (created)')
			FROM topups p LEFT JOIN (SELECT topup_id, to_status FROM (SELECT topup_id, to_status,
				ROW_NUMBER() OVER (PARTITION BY topup_id ORDER BY id DESC) AS nth FROM topup_events) x WHERE nth = 1) l ON l.topup_id = p.id
			WHERE p.status <> COALESCE(l.to_status, 'created') ORDER BY p.id`},
	{Name: "events_chain", What: "each event starts where the top-up's previous one ended",
		query: `SELECT 'top-up ' || (SELECT p.public_id FROM topups p WHERE p.id = e.topup_id), 'event ' || e.id || ' from ' || e.from_status
				|| ', previous ended in ' || e.previous
			FROM (SELECT id, topup_id, from_status, COALESCE(LAG(to_status) OVER (PARTITION BY topup_id ORDER BY id), 'created') AS previous
				FROM topup_events) e
			WHERE e.from_status <> e.previous ORDER BY e.id`},
	{Name: "one_credit_event", What: "a credited top-up was credited by exactly one event",
		query: `SELECT 'top-up ' || p.public_id, COALESCE(c.n, 0) || ' credit events'
			FROM topups p LEFT JOIN (SELECT topup_id, COUNT(*) AS n FROM topup_events WHERE to_status = 'credited' GROUP BY topup_id) c
				ON c.topup_id = p.id
			WHERE p.status = 'credited' AND COALESCE(c.n, 0) <> 1 ORDER BY p.id`},
	{Name: "credited_verify_on_record", CallLog: true,
		What: "a credited top-up has the bank's verify that said paid on record (gateway_calls)",
		query: `SELECT 'top-up ' || p.public_id, 'credited, no verify answering paid or already verified in gateway_calls'
			FROM topups p WHERE p.status = 'credited' AND NOT EXISTS (SELECT 1 FROM gateway_calls c WHERE c.topup_id = p.id
				AND c.operation = 'verify' AND c.outcome IN ('paid', 'already_verified')) ORDER BY p.id`},
	{Name: "withdrawal_hold_follows_status", What: "a withdrawal's hold is its amount on its wallet, open while it is open, captured once paid or returned, released once it failed, was rejected or cancelled",
		query: `SELECT 'withdrawal ' || w.public_id, 'status ' || w.status || ', hold ' || COALESCE(h.status, 'missing') || ' of '
				|| COALESCE(CAST(h.amount_rials AS TEXT), '?') || ' rials'
			FROM withdrawals w LEFT JOIN ledger_holds h ON h.id = w.hold_id
			LEFT JOIN ledger_accounts a ON a.wallet_id = w.wallet_id
			WHERE h.id IS NULL OR h.amount_rials <> w.amount_rials OR h.account_id <> a.id OR h.reason <> 'withdrawal'
				OR h.reference <> w.public_id
				OR (w.status IN ('requested', 'approved', 'submitted', 'needs_review') AND h.status <> 'open')
				OR (w.status IN ('paid', 'returned') AND (h.status <> 'captured' OR h.captured_rials <> w.amount_rials))
				OR (w.status IN ('failed', 'rejected', 'cancelled') AND h.status <> 'released')
			ORDER BY w.id`},
	{Name: "withdrawal_returned_once", What: "a returned withdrawal was credited back exactly once, its amount into its wallet; no other withdrawal was",
		query: `SELECT 'withdrawal ' || w.public_id, 'status ' || w.status || ' with ' || (SELECT COUNT(*) FROM ledger_transactions t
				WHERE t.kind = 'withdrawal_return' AND t.reference = w.public_id) || ' returns, '
				|| (SELECT COUNT(*) FROM ledger_transactions t JOIN ledger_postings lp ON lp.transaction_id = t.id
					JOIN ledger_accounts a ON a.id = lp.account_id
					WHERE t.kind = 'withdrawal_return' AND t.reference = w.public_id AND a.wallet_id = w.wallet_id
					AND lp.amount_rials = w.amount_rials) || ' of its amount into its wallet'
			FROM withdrawals w
			WHERE (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'withdrawal_return' AND t.reference = w.public_id)
					<> CASE WHEN w.status = 'returned' THEN 1 ELSE 0 END
				OR (w.status = 'returned' AND (SELECT COUNT(*) FROM ledger_transactions t JOIN ledger_postings lp ON lp.transaction_id = t.id
					JOIN ledger_accounts a ON a.id = lp.account_id
					WHERE t.kind = 'withdrawal_return' AND t.reference = w.public_id AND a.wallet_id = w.wallet_id
					AND lp.amount_rials = w.amount_rials) <> 1)
			UNION ALL
			SELECT 'ledger transaction ' || t.id, 'a withdrawal_return of no withdrawal (' || t.reference || ')'
			FROM ledger_transactions t WHERE t.kind = 'withdrawal_return'
				AND NOT EXISTS (SELECT 1 FROM withdrawals w WHERE w.public_id = t.reference)`},
	{Name: "withdrawal_settled_once", What: "a withdrawal is settled (payouts in flight to the provider's rail) at most once, and only once paid",
		query: `SELECT 'withdrawal ' || w.public_id, 'status ' || w.status || ', settled ' || CASE WHEN w.settled_at IS NULL THEN 'no' ELSE 'yes' END
				|| ', ' || (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'withdrawal' AND t.reference = 'settle:' || w.public_id)
				|| ' settle transactions'
			FROM withdrawals w
			WHERE (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'withdrawal' AND t.reference = 'settle:' || w.public_id)
					<> CASE WHEN w.settled_at IS NULL THEN 0 ELSE 1 END
				OR (w.settled_at IS NOT NULL AND w.status NOT IN ('paid', 'returned'))
			ORDER BY w.id`},
	{Name: "withdrawal_events_chain", What: "a withdrawal's events chain from its request to its status",
		query: `SELECT 'withdrawal ' || w.public_id, 'status ' || w.status || ', last event to ' || COALESCE((SELECT e.to_status
				FROM withdrawal_events e WHERE e.withdrawal_id = w.id ORDER BY e.id DESC LIMIT 1), 'none')
			FROM withdrawals w WHERE w.status <> COALESCE((SELECT e.to_status FROM withdrawal_events e WHERE e.withdrawal_id = w.id
				ORDER BY e.id DESC LIMIT 1), '')
			UNION ALL
			SELECT 'withdrawal ' || w.public_id, 'event ' || e.id || ' from ' || e.from_status || ', previous ended in '
				|| COALESCE((SELECT e2.to_status FROM withdrawal_events e2 WHERE e2.withdrawal_id = e.withdrawal_id AND e2.id < e.id
					ORDER BY e2.id DESC LIMIT 1), 'nothing')
			FROM withdrawal_events e JOIN withdrawals w ON w.id = e.withdrawal_id
			WHERE e.from_status <> COALESCE((SELECT e2.to_status FROM withdrawal_events e2 WHERE e2.withdrawal_id = e.withdrawal_id
				AND e2.id < e.id ORDER BY e2.id DESC LIMIT 1), '')`},
	{Name: "bank_account_sheba_canonical", What: "a bank account's Sheba is in its one spelling, check digits 02 to 98: never 00, 01 or 99, which pass mod-97 as other spellings of 97, 98 and 02 (refused since, stored before), so that no one has an account twice",
		// Not money, but where it goes: an alias stored before iban.Parse
		// refused them lets the same account be added again in its
		// canonical spelling. Each alias row is named once, with the
		// user's canonical row of the same account when there is one (a
		// lookup in unique(user_id, sheba)); the Sheba masked as
		// iban.Sheba.Masked does for logs.
		query: `SELECT 'bank account ' || b.id, 'user ' || b.user_id || ', ' || b.status || ', ' || ` + maskedSheba("b.sheba") + `
				|| ': check digits ' || substr(b.sheba, 3, 2) || ' spell ' || ` + canonicalCheckDigits("b.sheba") + ` || ', '
				|| COALESCE('the same account as bank account ' || CAST(c.id AS TEXT) || ' (' || c.status || ')', 'not stored in that spelling')
			FROM bank_accounts b LEFT JOIN bank_accounts c ON c.user_id = b.user_id
				AND c.sheba = 'IR' || ` + canonicalCheckDigits("b.sheba") + ` || substr(b.sheba, 5)
			WHERE ` + aliasCheckDigits("b.sheba") + ` ORDER BY b.id`},
	{Name: "card_refund_hold_in_step", What: "a card refund's hold is its own (its wallet, amount and id) and in step with its status: open while unresolved, captured whole when refunded, ended otherwise when failed",
		query: `SELECT 'card refund ' || c.public_id, 'status ' || c.status || ', hold ' || COALESCE(h.status, 'missing') || ' of '
				|| COALESCE(CAST(h.amount_rials AS TEXT), '?') || ' rials, captured ' || COALESCE(CAST(h.captured_rials AS TEXT), '?')
			FROM card_refunds c LEFT JOIN ledger_holds h ON h.id = c.hold_id
			WHERE h.id IS NULL OR h.reason <> 'card_refund' OR h.reference <> c.public_id OR h.amount_rials <> c.amount_rials
				OR h.account_id <> COALESCE((SELECT a.id FROM ledger_accounts a WHERE a.wallet_id = c.wallet_id), 0)
				OR (c.status IN ('held', 'submitted', 'needs_review') AND h.status <> 'open')
				OR (c.status = 'refunded' AND (h.status <> 'captured' OR h.captured_rials <> c.amount_rials))
				OR (c.status = 'failed' AND h.status NOT IN ('released', 'expired')) ORDER BY c.id`},
	{Name: "card_refund_reached_clearing", What: "a refunded card refund's money went on from card refunds in flight to its gateway's clearing side once, no other's did, and nothing stays in flight",
		query: `SELECT 'card refund ' || c.public_id, 'status ' || c.status || ', ' || (SELECT COUNT(*) FROM ledger_transactions t
				WHERE t.kind = 'card_refund' AND t.reference = 'card_refund:' || c.public_id) || ' transactions to the clearing side'
			FROM card_refunds c WHERE (c.status = 'refunded') <> ((SELECT COUNT(*) FROM ledger_transactions t
				JOIN ledger_postings lp ON lp.transaction_id = t.id JOIN ledger_accounts a ON a.id = lp.account_id
				WHERE t.kind = 'card_refund' AND t.reference = 'card_refund:' || c.public_id AND a.code = 'card_refunds_in_flight'
					AND lp.amount_rials = -c.amount_rials) = 1)
				OR (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'card_refund' AND t.reference = 'card_refund:' || c.public_id) > 1
			UNION ALL
			SELECT 'account ' || code, 'posted ' || posted_rials || ' rials in flight to cards' FROM ledger_accounts
			WHERE kind = 'card_refunds_in_flight' AND posted_rials <> 0`},
	{Name: "card_refunds_within_topup", What: "a top-up's card refunds not failed add up to at most its amount, and only a credited top-up has any",
		query: `SELECT 'top-up ' || p.public_id, 'card refunds of ' || SUM(c.amount_rials) || ' rials not failed, of a '
				|| p.status || ' top-up of ' || p.amount_rials || ' rials'
			FROM card_refunds c JOIN topups p ON p.id = c.topup_id WHERE c.status <> 'failed'
			GROUP BY p.id, p.public_id, p.status, p.amount_rials HAVING SUM(c.amount_rials) > p.amount_rials OR p.status <> 'credited'
			ORDER BY p.id`},
	{Name: "card_refund_events_end_in_status", What: "a card refund's last event ends in its status",
		query: `SELECT 'card refund ' || c.public_id, 'status ' || c.status || ', last event to ' || COALESCE((SELECT e.to_status
				FROM card_refund_events e WHERE e.card_refund_id = c.id ORDER BY e.id DESC LIMIT 1), 'none (held)')
			FROM card_refunds c WHERE c.status <> COALESCE((SELECT e.to_status FROM card_refund_events e WHERE e.card_refund_id = c.id
				ORDER BY e.id DESC LIMIT 1), 'held') ORDER BY c.id`},
	{Name: "charge_amounts", What: "a charge's captured amount is at most its amount and is there exactly when it succeeded; its refunds add up to its refunded amount, at most what was captured",
		query: `SELECT 'charge ' || c.public_id, 'status ' || c.status || ', amount ' || c.amount_rials || ', captured ' || c.captured_rials
				|| ', refunded ' || c.refunded_rials || ', refunds sum to ' || COALESCE((SELECT SUM(r.amount_rials) FROM charge_refunds r
				WHERE r.charge_id = c.id), 0)
			FROM charges c WHERE c.captured_rials > c.amount_rials OR c.refunded_rials > c.captured_rials OR c.refunded_rials < 0
				OR c.refunded_rials <> COALESCE((SELECT SUM(r.amount_rials) FROM charge_refunds r WHERE r.charge_id = c.id), 0)
				OR (c.status = 'succeeded') <> (c.captured_rials > 0) ORDER BY c.id`},
	{Name: "charge_ledger_matches", What: "a charge's money is in the ledger once: automatic and succeeded, one charge transaction of its amount from its payer's wallet to its merchant; manual, a hold of its amount on its payer's wallet in step with its status (captured into its merchant when it succeeded); each refund one transaction from its merchant to its payer's wallet",
		query: `SELECT 'charge ' || c.public_id, c.capture_method || ', status ' || c.status || ', ' || (SELECT COUNT(*) FROM ledger_transactions t
				WHERE t.kind = 'charge' AND t.reference = c.public_id) || ' charge transactions, '
				|| (SELECT COUNT(*) FROM ledger_postings lp JOIN ledger_transactions t ON t.id = lp.transaction_id
					WHERE t.kind = 'charge' AND t.reference = c.public_id AND lp.account_id = m.account_id AND lp.amount_rials = c.amount_rials)
				|| ' of its amount into its merchant'
			FROM charges c JOIN merchants m ON m.user_id = c.merchant_user_id
			WHERE (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'charge' AND t.reference = c.public_id)
					<> CASE WHEN c.capture_method = 'automatic' AND c.status = 'succeeded' THEN 1 ELSE 0 END
				OR (c.capture_method = 'automatic' AND c.status = 'succeeded' AND (SELECT COUNT(*) FROM ledger_postings lp
					JOIN ledger_transactions t ON t.id = lp.transaction_id JOIN ledger_accounts a ON a.id = lp.account_id
					WHERE t.kind = 'charge' AND t.reference = c.public_id AND (lp.account_id = m.account_id AND lp.amount_rials = c.amount_rials
						OR a.kind = 'wallet' AND a.user_id = c.payer_user_id AND lp.amount_rials = -c.amount_rials)) <> 2)
			UNION ALL
			SELECT 'charge ' || c.public_id, 'manual, status ' || c.status || ', hold ' || COALESCE(h.status, 'missing') || ' of '
				|| COALESCE(CAST(h.amount_rials AS TEXT), '?') || ' rials, captured ' || COALESCE(CAST(h.captured_rials AS TEXT), '?')
			FROM charges c JOIN merchants m ON m.user_id = c.merchant_user_id LEFT JOIN ledger_holds h ON h.id = c.hold_id
			WHERE c.capture_method = 'manual' AND (c.hold_id IS NOT NULL OR c.status IN ('authorized', 'succeeded')) AND (
				h.id IS NULL OR h.reason <> 'charge' OR h.reference <> c.public_id OR h.amount_rials <> c.amount_rials
				OR h.account_id <> COALESCE((SELECT a.id FROM ledger_accounts a JOIN wallets w ON w.id = a.wallet_id
					WHERE w.user_id = c.payer_user_id), 0)
				OR (c.status = 'authorized' AND h.status <> 'open')
				OR (c.status = 'succeeded' AND (h.status <> 'captured' OR h.captured_rials <> c.captured_rials
					OR COALESCE((SELECT lp.amount_rials FROM ledger_postings lp WHERE lp.transaction_id = h.transaction_id
						AND lp.account_id = m.account_id), 0) <> c.captured_rials))
				OR (c.status = 'canceled' AND h.status <> 'released')
				OR (c.status = 'expired' AND h.status NOT IN ('expired', 'released')))
			UNION ALL
			SELECT 'charge refund ' || r.public_id, (SELECT COUNT(*) FROM ledger_postings lp JOIN ledger_transactions t ON t.id = lp.transaction_id
				JOIN ledger_accounts a ON a.id = lp.account_id
				WHERE t.kind = 'refund' AND t.reference = r.public_id AND (lp.account_id = m.account_id AND lp.amount_rials = -r.amount_rials
					OR a.kind = 'wallet' AND a.user_id = c.payer_user_id AND lp.amount_rials = r.amount_rials)) || ' of 2 postings of its amount'
			FROM charge_refunds r JOIN charges c ON c.id = r.charge_id JOIN merchants m ON m.user_id = c.merchant_user_id
			WHERE (SELECT COUNT(*) FROM ledger_transactions t WHERE t.kind = 'refund' AND t.reference = r.public_id) <> 1
				OR (SELECT COUNT(*) FROM ledger_postings lp JOIN ledger_transactions t ON t.id = lp.transaction_id
				JOIN ledger_accounts a ON a.id = lp.account_id
				WHERE t.kind = 'refund' AND t.reference = r.public_id AND (lp.account_id = m.account_id AND lp.amount_rials = -r.amount_rials
					OR a.kind = 'wallet' AND a.user_id = c.payer_user_id AND lp.amount_rials = r.amount_rials)) <> 2`},
	{Name: "charge_events_end_in_status", What: "a charge's last event ends in its status",
		query: `SELECT 'charge ' || c.public_id, 'status ' || c.status || ', last event to ' || COALESCE((SELECT e.to_status
				FROM charge_events e WHERE e.charge_id = c.id ORDER BY e.id DESC LIMIT 1), 'none (requires_confirmation)')
			FROM charges c WHERE c.status <> COALESCE((SELECT e.to_status FROM charge_events e WHERE e.charge_id = c.id
				ORDER BY e.id DESC LIMIT 1), 'requires_confirmation') ORDER BY c.id`},
	{Name: "none_open_past_deadline", Open: true,
		What: "no top-up is still open past the worker's deadlines",
		// Parameters: the cut-off for created, for the other open statuses,
		// then for reversing (from creation: ReverseWindowMax). The line
		// shows the time each is judged from: a reversing one's creation.
		query: `SELECT 'top-up ' || public_id, 'status ' || status || ' since ' || CASE WHEN status = 'reversing'
				THEN CAST(created_at AS TEXT) || ' (created)' ELSE CAST(COALESCE(opened_at, created_at) AS TEXT) END
			FROM topups WHERE (status = 'created' AND COALESCE(opened_at, created_at) < ?)
				OR (status IN ('awaiting_payment', 'pending_verification', 'settling') AND COALESCE(opened_at, created_at) < ?)
				OR (status = 'reversing' AND created_at < ?) ORDER BY id`},
}

// shebaAliases are the check digits that pass mod-97 without being a
// Sheba's, each with the check digits of the spelling it stands for: the
// ones iban.Parse refuses (its package doc: 00, 01 and 99 are other
// spellings of 97, 98 and 02; ISO 7064 MOD 97-10 has 02 to 98). A test
// holds them to iban's Parse and CheckDigits.
var shebaAliases = [][2]string{{"00", "97"}, {"01", "98"}, {"99", "02"}}

// aliasCheckDigits is the SQL condition that the Sheba in column has
// alias check digits.
func aliasCheckDigits(column string) string {
	in := make([]string, len(shebaAliases))
	for i, a := range shebaAliases {
		in[i] = "'" + a[0] + "'"
	}
	return "substr(" + column + ", 3, 2) IN (" + strings.Join(in, ", ") + ")"
}

// canonicalCheckDigits is the SQL expression of the check digits an
// alias in column stands for (NULL for any other).
func canonicalCheckDigits(column string) string {
	var b strings.Builder
	b.WriteString("CASE substr(" + column + ", 3, 2)")
	for _, a := range shebaAliases {
		b.WriteString(" WHEN '" + a[0] + "' THEN '" + a[1] + "'")
	}
	b.WriteString(" END")
	return b.String()
}

// maskedSheba is the SQL expression of the Sheba in column as
// iban.Sheba.Masked writes it for logs and lists: its country, check
// digits and bank code, the rest hidden but the last four digits.
func maskedSheba(column string) string {
	return "substr(" + column + ", 1, 7) || '" + strings.Repeat("•", iban.Length-11) + "' || substr(" + column + ", " +
		strconv.Itoa(iban.Length-3) + ")"
}

// Rules lists the rules Check runs, in order.
func Rules() []Rule { return append([]Rule(nil), rules...) }

// ReverseWindowMax is the longest reverse window of any gateway (Mellat's
// three hours, before settle; SEP's is under one): a reversing top-up is
// past its deadline only this long after its creation and an open
// payment's deadline on.
const ReverseWindowMax = 3 * time.Hour

// Options say which rules run and the deadlines of open payments.
type Options struct {
	// Now is the time open payments are judged at; zero skips the
	// open-past-deadline rule.
	Now time.Time
	// CreatedDeadline is how long a payment may stay created (the worker
	// fails it after WORKER_STALE_CREATED); OpenDeadline how long it may
	// stay awaiting_payment, pending_verification or settling after it opened (the
	// worker ends it after the authority lifetime or WORKER_MAX_UNKNOWN).
	// Each includes the worker's slack (its interval and back-off).
	CreatedDeadline, OpenDeadline time.Duration
	// NoCallLog skips the rules that need gateway_calls (tests whose
	// fake gateway records no calls).
	NoCallLog bool
	// MaxRows caps the rows reported per rule (0: 100).
	MaxRows int
}

// Violation is one row that breaks a rule.
type Violation struct {
	Rule    string
	Subject string // e.g. "top-up p_abc", "wallet 12"
	Detail  string
}

func (v Violation) String() string { return v.Rule + ": " + v.Subject + ": " + v.Detail }

// Result is one rule's outcome.
type Result struct {
	Rule       Rule
	Violations []Violation
	Truncated  bool // more rows broke the rule than MaxRows
	Skipped    bool
	Took       time.Duration // the rule's query, rows read
}

// Report is a whole check.
type Report struct {
	Results []Result
}

// OK reports whether no rule was broken.
func (r Report) OK() bool { return len(r.Violations()) == 0 }

// Violations are all rows that broke a rule, rule by rule.
func (r Report) Violations() []Violation {
	var out []Violation
	for _, res := range r.Results {
		out = append(out, res.Violations...)
	}
	return out
}

// Check runs every rule over db, each in a read-only transaction of its
// own (ReadOnlyTx).
func Check(ctx context.Context, db *store.DB, o Options) (Report, error) {
	var rep Report
	if o.MaxRows <= 0 {
		o.MaxRows = 100
	}
	for _, r := range rules {
		res := Result{Rule: r}
		var args []any
		switch {
		case r.CallLog && o.NoCallLog, r.Open && o.Now.IsZero():
			res.Skipped = true
			rep.Results = append(rep.Results, res)
			continue
		case r.Open:
			// A reversing payment's reverse may be sent until its window
			// closes (at most ReverseWindowMax from its creation), and
			// its answer waited for as long as any open payment's.
			args = []any{o.Now.Add(-o.CreatedDeadline).UTC(), o.Now.Add(-o.OpenDeadline).UTC(), o.Now.Add(-o.OpenDeadline - ReverseWindowMax).UTC()}
		}
		q := r.query
		if db.Dialect == store.Postgres {
			q = numbered(q)
		}
		started := time.Now()
		vs, truncated, err := runRule(ctx, db, r, q, args, o.MaxRows)
		if err != nil {
			return rep, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		res.Violations, res.Truncated, res.Took = vs, truncated, time.Since(started)
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// runRule runs one rule's query in a read-only transaction of its own.
func runRule(ctx context.Context, db *store.DB, r Rule, query string, args []any, maxRows int) ([]Violation, bool, error) {
	tx, err := ReadOnlyTx(ctx, db)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback() }() // read only: nothing to commit
	if r.sorted && db.Dialect == store.Postgres {
		if _, err := tx.ExecContext(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
			return nil, false, fmt.Errorf("set enable_indexscan: %w", err)
		}
	}
	return run(ctx, tx, query, r.Name, args, maxRows)
}

// ReadOnlyTx begins the transaction one rule of Check reads in (each rule
// begins its own, so two rules may see the database at different
// moments): on PostgreSQL REPEATABLE READ READ ONLY (one snapshot for the
// rule's query, no row locks, cannot write); on SQLite a deferred
// transaction (ReadOnly makes the driver BEGIN without IMMEDIATE), a WAL
// read snapshot beside which writers go on. The caller rolls it back.
func ReadOnlyTx(ctx context.Context, db *store.DB) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.Dialect == store.Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.SQL().BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("begin read-only transaction: %w", err)
	}
	if db.Dialect == store.Postgres {
		// The rules' aggregates and sorts of millions of rows: memory for
		// them rather than batches on disk (this transaction only).
		if _, err := tx.ExecContext(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
			return nil, errors.Join(fmt.Errorf("set work_mem: %w", err), tx.Rollback())
		}
	}
	return tx, nil
}

// numbered writes PostgreSQL's $1, $2, … for the rules' ? placeholders
// (database/sql passes the query as it is; the rules hold no ? in text).
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func run(ctx context.Context, tx *sql.Tx, query, rule string, args []any, maxRows int) ([]Violation, bool, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var out []Violation
	for rows.Next() {
		if len(out) == maxRows {
			return out, true, nil
		}
		var subject, detail sql.NullString
		if err := rows.Scan(&subject, &detail); err != nil {
			return nil, false, err
		}
		out = append(out, Violation{Rule: rule, Subject: subject.String, Detail: detail.String})
	}
	if err := rows.Err(); err != nil {
		return nil, false, errors.Join(err, rows.Close())
	}
	return out, false, nil
}
