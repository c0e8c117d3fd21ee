// Package adminbench seeds the admin console's and the payer's pages at scale
// and times them from outside (kifpool-load -admin, make bench-admin); its
// page list is also what internal/e2e EXPLAINs.
package adminbench

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kifpool/kifpool/internal/routes"
)

// The admin console and the payer's pages at scale (`make bench-admin`,
// kifpool-load -admin): Seed writes top-ups, their events, their
// ledger transactions and postings, transfers and theirs, and one
// merchant's charges with their events, refunds and theirs, directly with
// generated SQL (INSERT … SELECT generate_series) on one connection;
// Pages is the list of pages measured (and, in internal/e2e's
// scalepages_test.go, EXPLAINed on PostgreSQL: no sequential scan of the
// money's tables).

// Size is how much Seed writes.
type Size struct {
	TopUps    int64 // top-ups, 1 in 1,000 under review, the newest few open, a quarter failed, the rest credited
	Users     int64 // users with a wallet each
	Transfers int64 // transfers between users
	Heavy     int64 // top-ups of one user (user1@…), the payer measured
	// Charges are "Pay with Kifpool" charges of one merchant (the last
	// user), paid from the other users' wallets (a hundredth from the
	// heavy payer's): nine in ten succeeded (one in a hundred of those
	// refunded by half), the rest expired or canceled.
	Charges int64
	// Withdrawals are cash-outs to a bank account (one verified account
	// per user) from the users' wallets but the merchant's (a hundredth
	// from the heavy payer's), each with its hold: nine in ten paid and
	// settled, the rest returned, failed, rejected or cancelled, one in
	// 500 waiting for an admin's review, the newest 500 still open.
	Withdrawals int64
}

// Full is the size; Small the test's and bench-short's.
var (
	Full  = Size{TopUps: 10_000_000, Users: 100_000, Transfers: 1_000_000, Heavy: 100_000, Charges: 1_000_000, Withdrawals: 1_000_000}
	Small = Size{TopUps: 20_000, Users: 2_000, Transfers: 2_000, Heavy: 1_000, Charges: 2_000, Withdrawals: 2_000}
)

// Sample holds what the pages look up: ids found in the seeded rows
// and the credentials of the admin and the heavy payer.
type Sample struct {
	adminSession, payerSession, payerAPIToken string
	merchantSession, merchantAPIToken         string
	chargeID, orderID                         string
	heavyEmail, fragment                      string
	heavyUserID                               int64
	publicID, authority, card4                string
	refID, amount                             int64
	detailID, heavyTopUpID, transferID        string
	deepCursor                                string
	payerTransferID, withdrawalID             string
	merchantEndpoint                          int64
	Rows                                      map[string]int64
}

// Seed writes sz's rows into a migrated, empty database on conn.
// The money's tables are loaded without their secondary indexes and
// triggers (the ledger's balance check, the foreign keys: the rows are
// generated consistent) and get them back at the end, as a restore does.
func Seed(ctx context.Context, conn *pgx.Conn, sz Size, logf func(string, ...any)) (Sample, error) {
	var s Sample
	step := sz.TopUps / max(sz.Heavy, 1)
	bigTables := []string{"topups", "topup_events", "ledger_transactions", "ledger_postings", "transfers", "gateway_calls", "admin_actions",
		"charges", "charge_events", "charge_refunds", "ledger_holds", "withdrawals", "withdrawal_events", "webhook_deliveries"}
	type idx struct{ Name, Def string }
	var dropped []idx
	rows, err := conn.Query(ctx, `SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid::regclass::text = ANY($1) AND NOT i.indisprimary
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`, bigTables)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var d idx
		if err := rows.Scan(&d.Name, &d.Def); err != nil {
			rows.Close()
			return s, err
		}
		dropped = append(dropped, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, err
	}
	n, u, tr := strconv.FormatInt(sz.TopUps, 10), strconv.FormatInt(sz.Users, 10), strconv.FormatInt(sz.Transfers, 10)
	ch := strconv.FormatInt(sz.Charges, 10)
	wd := strconv.FormatInt(max(sz.Withdrawals, 1), 10)
	stepS := strconv.FormatInt(max(step, 1), 10)
	// h spreads the statuses over the top-ups (a multiplicative hash of g).
	stmts := []struct{ name, sql string }{
		{"settings", `SET maintenance_work_mem = '512MB'`},
		{"settings", `SET work_mem = '256MB'`},
		{"users", `INSERT INTO users (email, password_hash, role, locale, created_at, email_verified_at)
			SELECT 'user' || g || '@' || (ARRAY['gmail.com','yahoo.com','example.ir','chmail.ir'])[1 + g % 4], 'x', 'user', 'fa', now() - interval '400 days', now() - interval '400 days'
			FROM generate_series(1, ` + u + `) g ORDER BY g`},
		{"admin", `INSERT INTO users (email, password_hash, role, locale, created_at, totp_secret, totp_confirmed_at, email_verified_at)
			VALUES ('admin@example.com', 'x', 'admin', 'en', now(), 'BENCHBENCHBENCHBENCHBENCHBENCH22', now(), now())`},
		{"wallets", `INSERT INTO wallets (user_id, created_at, updated_at) SELECT id, created_at, created_at FROM users WHERE role = 'user' ORDER BY id`},
		{"wallet accounts", `INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
			SELECT 'wallet', 'wallet:' || id, id, user_id, FALSE, created_at, created_at FROM wallets ORDER BY id`},
		{"drop indexes", ""}, // placeholder: the secondary indexes go here
		{"triggers off", ""},
		{"top-ups", `INSERT INTO topups (public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id,
			  verified_amount_rials, card_pan_masked, status, status_reason, created_at, updated_at, opened_at, resolved_at)
			SELECT substr(translate(md5(g::text), '0189', 'wxyz'), 1, 24), w.user_id, w.id, a.amount, 'zarinpal', 'ft' || g,
			       'A' || lpad(g::text, 35, '0'),
			       CASE WHEN s.st = 'credited' THEN 50000000000 + g END,
			       CASE WHEN s.st = 'credited' THEN a.amount END,
			       CASE WHEN s.st = 'credited' THEN '603799******' || lpad(((g * 37) % 10000)::text, 4, '0') ELSE '' END,
			       s.st, CASE s.st WHEN 'credited' THEN 'verified_paid' WHEN 'failed' THEN 'bank_cancelled' ELSE '' END,
			       c.at, c.at, c.at, CASE WHEN s.st IN ('credited', 'failed') THEN c.at END
			FROM generate_series(1::bigint, ` + n + `) g
			CROSS JOIN LATERAL (SELECT CASE WHEN g % ` + stepS + ` = 0 THEN 1 ELSE 2 + (g * 7919) % (` + u + ` - 1) END AS nth,
			                           (g * 2654435761) % 1000 AS h) x
			JOIN wallets w ON w.id = (SELECT MIN(id) FROM wallets) - 1 + x.nth
			CROSS JOIN LATERAL (SELECT CASE
			    WHEN x.h < 10 AND g <= 3000 THEN 'awaiting_payment'
			    WHEN x.h < 20 AND g <= 3000 THEN 'pending_verification'
			    WHEN x.h = 20 THEN 'needs_review'
			    WHEN x.h < 270 THEN 'failed'
			    ELSE 'credited' END AS st) s
			CROSS JOIN LATERAL (SELECT (100000 + (g * 13 % 1000) * 10000)::bigint AS amount) a
			CROSS JOIN LATERAL (SELECT date_trunc('second', now()) - ((g / 3) * interval '10 seconds') AS at) c
			ORDER BY g DESC`},
		{"top-up events", `INSERT INTO topup_events (topup_id, from_status, to_status, actor, reason, created_at)
			SELECT p.id, e.from_status, CASE e.k WHEN 1 THEN 'awaiting_payment' ELSE p.status END, e.actor,
			       CASE e.k WHEN 1 THEN '' ELSE p.status_reason END, p.created_at + (e.k - 1) * interval '90 seconds'
			FROM topups p CROSS JOIN (VALUES (1, 'created', 'submit'), (2, 'awaiting_payment', 'callback')) AS e(k, from_status, actor)
			WHERE e.k = 1 OR p.status <> 'awaiting_payment' ORDER BY p.id, e.k`},
		{"top-up ledger transactions", `INSERT INTO ledger_transactions (kind, reference, topup_id, created_at)
			SELECT 'topup', public_id, id, created_at FROM topups WHERE status = 'credited' ORDER BY id`},
		{"transfers", `INSERT INTO transfers (public_id, sender_user_id, recipient_user_id, amount_rials, note, form_token, created_at)
			SELECT 'tr_' || substr(translate(md5('t' || g), '0189', 'wxyz'), 1, 26), w1.user_id, w2.user_id, 10000 + (g % 50) * 1000, '', 'tt' || g,
			       date_trunc('second', now()) - ((` + tr + ` - g) * interval '20 seconds')
			FROM generate_series(1::bigint, ` + tr + `) g
			CROSS JOIN LATERAL (SELECT CASE WHEN g % 100 = 0 THEN 0 ELSE 1 + (g * 31) % (` + u + ` - 1) END AS a) x
			CROSS JOIN LATERAL (SELECT 1 + (x.a + 1 + g % 7) % (` + u + ` - 1) AS b) y
			JOIN wallets w1 ON w1.id = (SELECT MIN(id) FROM wallets) + x.a
			JOIN wallets w2 ON w2.id = (SELECT MIN(id) FROM wallets) + y.b
			ORDER BY g`},
		{"transfer ledger transactions", `INSERT INTO ledger_transactions (kind, reference, created_at)
			SELECT 'transfer', public_id, created_at FROM transfers ORDER BY id`},
		// The merchant is the last user; its payers are the others (the
		// heavy payer for a hundredth), never itself.
		{"merchant account", `INSERT INTO ledger_accounts (kind, code, user_id, may_go_negative, created_at, updated_at)
			SELECT 'merchant', 'merchant:' || id, id, FALSE, created_at, created_at FROM users WHERE role = 'user' ORDER BY id DESC LIMIT 1`},
		{"merchant", `INSERT INTO merchants (user_id, display_name, account_id, created_at)
			SELECT user_id, 'Bench Shop', id, created_at FROM ledger_accounts WHERE kind = 'merchant'`},
		{"charges", `INSERT INTO charges (public_id, merchant_user_id, payer_user_id, amount_rials, description, order_id, return_url, capture_method,
			  status, captured_rials, form_token, expires_at, confirmed_at, captured_at, ended_at, created_at, updated_at)
			SELECT 'ch_' || substr(translate(md5('c' || g), '0189', 'wxyz'), 1, 26), m.user_id, CASE WHEN s.st = 'succeeded' THEN w.user_id END,
			       a.amount, 'Order ' || g, 'order-' || g, 'https://shop.example/return', 'automatic', s.st,
			       CASE WHEN s.st = 'succeeded' THEN a.amount ELSE 0 END, 'ct' || g, c.at + interval '30 minutes',
			       CASE WHEN s.st = 'succeeded' THEN c.at + interval '1 minute' END, CASE WHEN s.st = 'succeeded' THEN c.at + interval '1 minute' END,
			       c.at + CASE s.st WHEN 'succeeded' THEN interval '1 minute' WHEN 'canceled' THEN interval '2 minutes' ELSE interval '30 minutes' END,
			       c.at, c.at + interval '30 minutes'
			FROM generate_series(1::bigint, ` + ch + `) g
			CROSS JOIN (SELECT user_id FROM merchants) m
			CROSS JOIN LATERAL (SELECT CASE WHEN g % 100 = 0 THEN 0 ELSE 1 + (g * 7919) % (` + u + ` - 2) END AS nth,
			                           (g * 2654435761) % 1000 AS h) x
			JOIN wallets w ON w.id = (SELECT MIN(id) FROM wallets) + x.nth
			CROSS JOIN LATERAL (SELECT CASE WHEN x.h < 900 THEN 'succeeded' WHEN x.h < 950 THEN 'expired' ELSE 'canceled' END AS st) s
			CROSS JOIN LATERAL (SELECT (10000 + (g % 50) * 1000)::bigint AS amount) a
			CROSS JOIN LATERAL (SELECT date_trunc('second', now()) - interval '1 hour' - ((` + ch + ` - g) * interval '30 seconds') AS at) c
			ORDER BY g`},
		{"charge events", `INSERT INTO charge_events (charge_id, type, from_status, to_status, actor, amount_rials, created_at)
			SELECT id, 'charge.' || status, 'requires_confirmation', status, CASE status WHEN 'expired' THEN 'worker' ELSE 'payer' END,
			       captured_rials, ended_at
			FROM charges ORDER BY id`},
		{"charge ledger transactions", `INSERT INTO ledger_transactions (kind, reference, created_at)
			SELECT 'charge', public_id, captured_at FROM charges WHERE status = 'succeeded' ORDER BY id`},
		// One succeeded charge in a hundred refunded by half, ten minutes on.
		{"charge refunds", `INSERT INTO charge_refunds (public_id, charge_id, amount_rials, form_token, created_at)
			SELECT 're_' || substr(translate(md5('r' || id), '0189', 'wxyz'), 1, 26), id, amount_rials / 2, 'rt' || id, captured_at + interval '10 minutes'
			FROM charges WHERE status = 'succeeded' AND id % 100 = 7 ORDER BY id`},
		{"charges refunded", `UPDATE charges c SET refunded_rials = r.amount_rials, updated_at = r.created_at FROM charge_refunds r WHERE r.charge_id = c.id`},
		{"refund events", `INSERT INTO charge_events (charge_id, type, from_status, to_status, actor, amount_rials, refund_id, created_at)
			SELECT charge_id, 'charge.refunded', 'succeeded', 'succeeded', 'merchant', amount_rials, id, created_at FROM charge_refunds ORDER BY id`},
		{"refund ledger transactions", `INSERT INTO ledger_transactions (kind, reference, note, created_at)
			SELECT 'refund', r.public_id, c.public_id, r.created_at FROM charge_refunds r JOIN charges c ON c.id = r.charge_id ORDER BY r.id`},
		// Withdrawals (the provider "sandbank"): one verified bank account
		// per user (a valid Sheba of bank 054), then each withdrawal's row
		// worked out once in a temporary table, its ledger transactions
		// (the hold's capture into payouts in flight, the settlement to the
		// rail, a return), its hold (ids given here, so that a capture's
		// reference "hold:<id>" is known before the hold is written), the
		// withdrawal and its events, as withdrawal/sqlstore writes them.
		{"payout accounts", `INSERT INTO ledger_accounts (kind, code, may_go_negative, created_at, updated_at)
			VALUES ('payouts_in_flight', 'payouts_in_flight:sandbank', FALSE, now() - interval '400 days', now() - interval '400 days'),
			       ('payout_rail', 'payout_rail:sandbank', TRUE, now() - interval '400 days', now() - interval '400 days')
			ON CONFLICT DO NOTHING`},
		{"bank accounts", `INSERT INTO bank_accounts (user_id, sheba, bank_code, status, checked_by, created_at, updated_at)
			SELECT u.id, 'IR' || lpad((98 - (b.bban || '182700')::numeric % 97)::text, 2, '0') || b.bban, '054', 'verified', 'sandbank',
			       u.created_at, u.created_at
			FROM users u CROSS JOIN LATERAL (SELECT '054' || lpad(u.id::text, 19, '0') AS bban) b
			WHERE u.role = 'user' ORDER BY u.id`},
		{"withdrawal plan", `CREATE TEMPORARY TABLE bench_withdrawals AS
			SELECT g, 'wd_' || substr(translate(md5('w' || g), '0189', 'wxyz'), 1, 24) AS public_id, w.user_id, w.id AS wallet_id,
			       a.id AS account_id, b.id AS bank_account_id, b.sheba,
			       GREATEST(1000, LEAST(500000 + (g % 100) * 50000, c.credited / 40 / 1000 * 1000))::bigint AS amount,
			       s.st, (s.st = 'requested' AND x.h < 200) AS review,
			       date_trunc('second', now()) - interval '2 hours' - ((` + wd + ` - g) * interval '30 seconds') AS at,
			       (SELECT COALESCE(MAX(id), 0) FROM ledger_holds) + g AS hold_id
			FROM generate_series(1::bigint, ` + wd + `) g
			CROSS JOIN LATERAL (SELECT CASE WHEN g % 100 = 0 THEN 0 ELSE 1 + (g * 7907) % (` + u + ` - 2) END AS nth,
			                           (g * 2654435761) % 1000 AS h) x
			JOIN wallets w ON w.id = (SELECT MIN(id) FROM wallets) + x.nth
			JOIN ledger_accounts a ON a.wallet_id = w.id
			JOIN bank_accounts b ON b.user_id = w.user_id
			-- At most a fortieth of what the wallet took in: no wallet is
			-- drawn below zero by its withdrawals, transfers and charges.
			JOIN (SELECT wallet_id, SUM(amount_rials) AS credited FROM topups WHERE status = 'credited' GROUP BY wallet_id) c ON c.wallet_id = w.id
			CROSS JOIN LATERAL (SELECT CASE
			    WHEN g > ` + wd + ` - 500 AND x.h < 300 THEN 'requested'
			    WHEN g > ` + wd + ` - 500 AND x.h < 400 THEN 'approved'
			    WHEN g > ` + wd + ` - 500 AND x.h < 600 THEN 'submitted'
			    WHEN x.h < 2 THEN 'needs_review'
			    WHEN x.h < 20 THEN 'returned'
			    WHEN x.h < 60 THEN 'failed'
			    WHEN x.h < 80 THEN 'rejected'
			    WHEN x.h < 100 THEN 'cancelled'
			    ELSE 'paid' END AS st) s`},
		{"withdrawal ledger transactions", `INSERT INTO ledger_transactions (kind, reference, created_at)
			SELECT kind, reference, at FROM (
			  SELECT 1 AS k, g, 'withdrawal' AS kind, 'hold:' || hold_id AS reference, at + interval '5 minutes' AS at
			    FROM bench_withdrawals WHERE st IN ('paid', 'returned')
			  UNION ALL
			  SELECT 2, g, 'withdrawal', 'settle:' || public_id, at + interval '1 hour' FROM bench_withdrawals WHERE st = 'paid'
			  UNION ALL
			  SELECT 3, g, 'withdrawal_return', public_id, at + interval '2 hours' FROM bench_withdrawals WHERE st = 'returned') m
			ORDER BY k, g`},
		{"withdrawal holds", `INSERT INTO ledger_holds (id, account_id, amount_rials, reason, reference, status, captured_rials, transaction_id,
			  expires_at, created_at, ended_at)
			SELECT w.hold_id, w.account_id, w.amount, 'withdrawal', w.public_id,
			       CASE WHEN w.st IN ('paid', 'returned') THEN 'captured' WHEN w.st IN ('failed', 'rejected', 'cancelled') THEN 'released' ELSE 'open' END,
			       CASE WHEN w.st IN ('paid', 'returned') THEN w.amount ELSE 0 END, t.id,
			       w.at + interval '36500 days', w.at,
			       CASE WHEN w.st IN ('paid', 'returned') THEN w.at + interval '5 minutes'
			            WHEN w.st IN ('failed', 'rejected', 'cancelled') THEN w.at + interval '10 minutes' END
			FROM bench_withdrawals w LEFT JOIN ledger_transactions t ON t.kind = 'withdrawal' AND t.reference = 'hold:' || w.hold_id
			ORDER BY w.g`},
		{"hold ids", `SELECT setval(pg_get_serial_sequence('ledger_holds', 'id'), (SELECT MAX(id) FROM ledger_holds))`},
		{"withdrawals", `INSERT INTO withdrawals (public_id, user_id, wallet_id, bank_account_id, sheba, bank_code, amount_rials, provider, rail,
			  form_token, status, status_reason, review_required, hold_id, provider_ref, submits, checks, submitted_at, paid_at, settled_at,
			  returned_at, resolved_at, next_check_at, created_at, updated_at)
			SELECT public_id, user_id, wallet_id, bank_account_id, sheba, '054', amount, 'sandbank', CASE WHEN amount > 3000000 THEN 'satna' ELSE 'paya' END,
			       'wt' || g, st, CASE st WHEN 'failed' THEN 'provider_failed' WHEN 'returned' THEN 'provider_returned' ELSE '' END, review, hold_id,
			       CASE WHEN st IN ('paid', 'returned', 'failed', 'submitted', 'needs_review') THEN 'sb-' || g ELSE '' END,
			       CASE WHEN st IN ('requested', 'approved', 'rejected', 'cancelled') THEN 0 ELSE 1 END,
			       CASE WHEN st IN ('requested', 'approved', 'rejected', 'cancelled') THEN 0 ELSE 1 END,
			       CASE WHEN st IN ('paid', 'returned', 'failed', 'submitted', 'needs_review') THEN at + interval '1 minute' END,
			       CASE WHEN st IN ('paid', 'returned') THEN at + interval '5 minutes' END,
			       CASE WHEN st = 'paid' THEN at + interval '1 hour' END,
			       CASE WHEN st = 'returned' THEN at + interval '2 hours' END,
			       CASE st WHEN 'paid' THEN at + interval '5 minutes' WHEN 'returned' THEN at + interval '2 hours'
			               WHEN 'failed' THEN at + interval '10 minutes' WHEN 'rejected' THEN at + interval '10 minutes'
			               WHEN 'cancelled' THEN at + interval '10 minutes' END,
			       CASE WHEN st IN ('approved', 'submitted') THEN now() + interval '1 hour' END,
			       at, at + interval '10 minutes'
			FROM bench_withdrawals ORDER BY g`},
		{"withdrawal events", `INSERT INTO withdrawal_events (withdrawal_id, from_status, to_status, actor, created_at)
			SELECT wr.id, e.from_status, e.to_status, e.actor, w.at + e.k * interval '1 minute'
			FROM bench_withdrawals w JOIN withdrawals wr ON wr.public_id = w.public_id
			JOIN (VALUES
			  ('requested', 1, '', 'requested', 'user'),
			  ('approved', 1, '', 'requested', 'user'), ('approved', 2, 'requested', 'approved', 'admin'),
			  ('rejected', 1, '', 'requested', 'user'), ('rejected', 2, 'requested', 'rejected', 'admin'),
			  ('cancelled', 1, '', 'requested', 'user'), ('cancelled', 2, 'requested', 'cancelled', 'user'),
			  ('submitted', 1, '', 'requested', 'user'), ('submitted', 2, 'requested', 'submitted', 'worker'),
			  ('needs_review', 1, '', 'requested', 'user'), ('needs_review', 2, 'requested', 'submitted', 'worker'),
			  ('needs_review', 3, 'submitted', 'needs_review', 'worker'),
			  ('failed', 1, '', 'requested', 'user'), ('failed', 2, 'requested', 'submitted', 'worker'), ('failed', 3, 'submitted', 'failed', 'worker'),
			  ('paid', 1, '', 'requested', 'user'), ('paid', 2, 'requested', 'submitted', 'worker'), ('paid', 3, 'submitted', 'paid', 'worker'),
			  ('returned', 1, '', 'requested', 'user'), ('returned', 2, 'requested', 'submitted', 'worker'),
			  ('returned', 3, 'submitted', 'paid', 'worker'), ('returned', 4, 'paid', 'returned', 'reconcile')
			) AS e(st, k, from_status, to_status, actor) ON e.st = w.st
			ORDER BY w.g, e.k`},
		// Webhooks: the merchant's endpoint with a delivery per charge, the
		// heavy payer's with one per ended top-up and withdrawal; one in a
		// thousand failed for good, the rest delivered (none pending: the
		// serve under measurement has nobody to deliver to).
		{"webhook endpoints", `INSERT INTO webhook_endpoints (user_id, url, events, secret_enc, created_at, last_success_at)
			SELECT user_id, 'https://shop.example/kifpool/hooks', ',charge.succeeded,charge.authorized,charge.captured,charge.canceled,charge.expired,charge.refunded,',
			       'bench', now() - interval '400 days', now() FROM merchants
			UNION ALL
			SELECT user_id, 'https://payer.example/hooks', ',topup.credited,topup.failed,withdrawal.paid,withdrawal.failed,withdrawal.returned,',
			       'bench', now() - interval '400 days', now() FROM (SELECT user_id FROM wallets ORDER BY id LIMIT 1) h`},
		{"webhook deliveries", `INSERT INTO webhook_deliveries (event_id, endpoint_id, topup_id, withdrawal_id, charge_id, type, body, status, attempts,
			  next_attempt_at, last_attempt_at, last_http_status, last_latency_ms, last_error, created_at, retry_from, delivered_at)
			SELECT d.event_id, d.endpoint_id, d.topup_id, d.withdrawal_id, d.charge_id, d.type,
			       '{"id":"' || d.event_id || '","type":"' || d.type || '","subject":"' || d.subject || '"}',
			       CASE WHEN d.n % 1000 = 0 THEN 'failed' ELSE 'delivered' END, CASE WHEN d.n % 1000 = 0 THEN 12 ELSE 1 END,
			       d.at, d.at + interval '1 second', CASE WHEN d.n % 1000 = 0 THEN 503 ELSE 200 END, 40 + d.n % 300,
			       CASE WHEN d.n % 1000 = 0 THEN 'HTTP 503' ELSE '' END, d.at, d.at,
			       CASE WHEN d.n % 1000 <> 0 THEN d.at + interval '1 second' END
			FROM (
			  SELECT 'evt_c' || c.id AS event_id, e.id AS endpoint_id, NULL::bigint AS topup_id, NULL::bigint AS withdrawal_id, c.id AS charge_id,
			         'charge.' || c.status AS type, c.public_id AS subject, c.ended_at AS at, c.id AS n
			    FROM charges c JOIN webhook_endpoints e ON e.user_id = c.merchant_user_id
			  UNION ALL
			  SELECT 'evt_t' || p.id, e.id, p.id, NULL, NULL, 'topup.' || p.status, p.public_id, p.resolved_at, p.id
			    FROM topups p JOIN webhook_endpoints e ON e.user_id = p.user_id WHERE p.status IN ('credited', 'failed')
			  UNION ALL
			  SELECT 'evt_w' || w.id, e.id, NULL, w.id, NULL, 'withdrawal.' || CASE w.status WHEN 'rejected' THEN 'failed' ELSE w.status END,
			         w.public_id, w.resolved_at, w.id
			    FROM withdrawals w JOIN webhook_endpoints e ON e.user_id = w.user_id WHERE w.status IN ('paid', 'failed', 'rejected', 'returned')) d
			ORDER BY d.at, d.event_id`},
		// Every posting with its account's balance after it: one running
		// sum per account in the postings' id order (the transactions'
		// order, clearing leg first).
		{"postings", `INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at)
			SELECT tid, account_id, amount, SUM(amount) OVER (PARTITION BY account_id ORDER BY tid, leg ROWS UNBOUNDED PRECEDING), created_at
			FROM (
			  SELECT t.id AS tid, c.id AS account_id, -p.amount_rials AS amount, t.created_at, 0 AS leg
			    FROM ledger_transactions t JOIN topups p ON p.id = t.topup_id JOIN ledger_accounts c ON c.code = 'gateway:zarinpal'
			   WHERE t.kind = 'topup'
			  UNION ALL
			  SELECT t.id, a.id, p.amount_rials, t.created_at, 1
			    FROM ledger_transactions t JOIN topups p ON p.id = t.topup_id JOIN ledger_accounts a ON a.wallet_id = p.wallet_id
			   WHERE t.kind = 'topup'
			  UNION ALL
			  SELECT t.id, a.id, -x.amount_rials, t.created_at, 0
			    FROM ledger_transactions t JOIN transfers x ON x.public_id = t.reference JOIN ledger_accounts a ON a.user_id = x.sender_user_id AND a.kind = 'wallet'
			   WHERE t.kind = 'transfer'
			  UNION ALL
			  SELECT t.id, a.id, x.amount_rials, t.created_at, 1
			    FROM ledger_transactions t JOIN transfers x ON x.public_id = t.reference JOIN ledger_accounts a ON a.user_id = x.recipient_user_id AND a.kind = 'wallet'
			   WHERE t.kind = 'transfer'
			  UNION ALL
			  SELECT t.id, a.id, -c.amount_rials, t.created_at, 0
			    FROM ledger_transactions t JOIN charges c ON c.public_id = t.reference JOIN ledger_accounts a ON a.user_id = c.payer_user_id AND a.kind = 'wallet'
			   WHERE t.kind = 'charge'
			  UNION ALL
			  SELECT t.id, m.account_id, c.amount_rials, t.created_at, 1
			    FROM ledger_transactions t JOIN charges c ON c.public_id = t.reference JOIN merchants m ON m.user_id = c.merchant_user_id
			   WHERE t.kind = 'charge'
			  UNION ALL
			  SELECT t.id, m.account_id, -r.amount_rials, t.created_at, 0
			    FROM ledger_transactions t JOIN charge_refunds r ON r.public_id = t.reference JOIN charges c ON c.id = r.charge_id
			    JOIN merchants m ON m.user_id = c.merchant_user_id
			   WHERE t.kind = 'refund'
			  UNION ALL
			  SELECT t.id, a.id, r.amount_rials, t.created_at, 1
			    FROM ledger_transactions t JOIN charge_refunds r ON r.public_id = t.reference JOIN charges c ON c.id = r.charge_id
			    JOIN ledger_accounts a ON a.user_id = c.payer_user_id AND a.kind = 'wallet'
			   WHERE t.kind = 'refund'
			  UNION ALL
			  SELECT t.id, CASE l.leg WHEN 0 THEN w.account_id ELSE f.id END, CASE l.leg WHEN 0 THEN -w.amount ELSE w.amount END, t.created_at, l.leg
			    FROM ledger_transactions t JOIN bench_withdrawals w ON t.reference = 'hold:' || w.hold_id
			    CROSS JOIN (SELECT id FROM ledger_accounts WHERE code = 'payouts_in_flight:sandbank') f CROSS JOIN (VALUES (0), (1)) AS l(leg)
			   WHERE t.kind = 'withdrawal'
			  UNION ALL
			  SELECT t.id, CASE l.leg WHEN 0 THEN f.id ELSE r.id END, CASE l.leg WHEN 0 THEN -w.amount ELSE w.amount END, t.created_at, l.leg
			    FROM ledger_transactions t JOIN bench_withdrawals w ON t.reference = 'settle:' || w.public_id
			    CROSS JOIN (SELECT id FROM ledger_accounts WHERE code = 'payouts_in_flight:sandbank') f
			    CROSS JOIN (SELECT id FROM ledger_accounts WHERE code = 'payout_rail:sandbank') r CROSS JOIN (VALUES (0), (1)) AS l(leg)
			   WHERE t.kind = 'withdrawal'
			  UNION ALL
			  SELECT t.id, CASE l.leg WHEN 0 THEN f.id ELSE w.account_id END, CASE l.leg WHEN 0 THEN -w.amount ELSE w.amount END, t.created_at, l.leg
			    FROM ledger_transactions t JOIN bench_withdrawals w ON t.reference = w.public_id
			    CROSS JOIN (SELECT id FROM ledger_accounts WHERE code = 'payouts_in_flight:sandbank') f CROSS JOIN (VALUES (0), (1)) AS l(leg)
			   WHERE t.kind = 'withdrawal_return') legs
			ORDER BY tid, leg`},
		{"balances", `UPDATE ledger_accounts a SET posted_rials = s.total, updated_at = now()
			FROM (SELECT account_id, SUM(amount_rials) AS total FROM ledger_postings GROUP BY account_id) s WHERE s.account_id = a.id`},
		{"held", `UPDATE ledger_accounts a SET held_rials = s.total
			FROM (SELECT account_id, SUM(amount_rials) AS total FROM ledger_holds WHERE status = 'open' GROUP BY account_id) s WHERE s.account_id = a.id`},
		{"bank calls", `INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome)
			SELECT p.id, 'zarinpal', op.name, 1, p.created_at + op.after, 40 + (p.id * 7 + op.n * 13) % 400, 200, 100,
			       CASE WHEN op.name = 'verify' AND p.status = 'credited' THEN 'paid' ELSE 'ok' END
			FROM topups p CROSS JOIN (VALUES ('request', interval '0', 1), ('verify', interval '90 seconds', 2)) AS op(name, after, n)
			WHERE p.created_at >= now() - interval '7 days' OR (op.name = 'verify' AND p.status = 'credited') ORDER BY p.id, op.n`},
		{"audit", `INSERT INTO admin_actions (admin_id, action, topup_id, note, from_status, to_status, result, created_at)
			SELECT (SELECT id FROM users WHERE role = 'admin'), 'recheck', p.id, '', p.status, p.status, 'unchanged', p.created_at + interval '1 hour'
			FROM topups p WHERE p.status = 'needs_review' ORDER BY p.id`},
		{"indexes", ""}, // placeholder: the dropped indexes are built again here
		{"triggers on", ""},
		{"analyze", `VACUUM ANALYZE users, wallets, ledger_accounts, topups, topup_events, ledger_transactions, ledger_postings, transfers, gateway_calls, admin_actions,
			merchants, charges, charge_events, charge_refunds, bank_accounts, ledger_holds, withdrawals, withdrawal_events,
			webhook_endpoints, webhook_deliveries`},
	}
	for _, st := range stmts {
		t0 := time.Now()
		var sqls []string
		switch st.name {
		case "drop indexes":
			for _, d := range dropped {
				sqls = append(sqls, `DROP INDEX `+d.Name)
			}
		case "indexes":
			for _, d := range dropped {
				sqls = append(sqls, d.Def)
			}
		case "triggers off", "triggers on":
			verb := map[string]string{"triggers off": "DISABLE", "triggers on": "ENABLE"}[st.name]
			for _, t := range bigTables {
				sqls = append(sqls, `ALTER TABLE `+t+` `+verb+` TRIGGER ALL`)
			}
		default:
			sqls = []string{st.sql}
		}
		for _, q := range sqls {
			if _, err := conn.Exec(ctx, q); err != nil {
				return s, fmt.Errorf("seed %s: %w\n%s", st.name, err, q)
			}
		}
		if d := time.Since(t0); d > time.Second {
			logf("seed %s: %.1f s", st.name, d.Seconds())
		}
	}
	return s, SampleOf(ctx, conn, sz, &s)
}

// SampleOf finds what the pages look up and makes the sessions and
// the API token of the admin and the heavy payer.
func SampleOf(ctx context.Context, conn *pgx.Conn, sz Size, s *Sample) error {
	q := func(sql string, dest ...any) error {
		if err := conn.QueryRow(ctx, sql).Scan(dest...); err != nil {
			return fmt.Errorf("%w\n%s", err, sql)
		}
		return nil
	}
	mid := strconv.FormatInt(sz.TopUps/3, 10)
	var card string
	if err := q(`SELECT p.public_id, p.authority, p.ref_id, p.card_pan_masked, p.amount_rials FROM topups p
		WHERE p.status = 'credited' AND p.id > `+mid+` ORDER BY p.id LIMIT 1`, &s.publicID, &s.authority, &s.refID, &card, &s.amount); err != nil {
		return err
	}
	s.card4 = card[len(card)-4:]
	s.detailID = s.publicID
	if err := q(`SELECT u.id, u.email FROM users u JOIN wallets w ON w.user_id = u.id ORDER BY w.id LIMIT 1`, &s.heavyUserID, &s.heavyEmail); err != nil {
		return err
	}
	// user123…: 111 users at 100,000 (user123, user1230–1239, user12300–12399).
	s.fragment = "user123"
	if err := q(`SELECT public_id FROM topups WHERE user_id = `+strconv.FormatInt(s.heavyUserID, 10)+` ORDER BY id LIMIT 1`, &s.heavyTopUpID); err != nil {
		return err
	}
	if err := q(`SELECT public_id FROM transfers ORDER BY id DESC LIMIT 1 OFFSET `+strconv.FormatInt(sz.Transfers/2, 10), &s.transferID); err != nil {
		return err
	}
	if err := q(`SELECT public_id FROM transfers WHERE sender_user_id = `+strconv.FormatInt(s.heavyUserID, 10)+` ORDER BY id DESC LIMIT 1`, &s.payerTransferID); err != nil {
		return err
	}
	if err := q(`SELECT e.id FROM webhook_endpoints e JOIN merchants m ON m.user_id = e.user_id`, &s.merchantEndpoint); err != nil {
		return err
	}
	if err := q(`SELECT public_id FROM withdrawals WHERE user_id = `+strconv.FormatInt(s.heavyUserID, 10)+` AND status = 'paid' ORDER BY id DESC LIMIT 1`, &s.withdrawalID); err != nil {
		return err
	}
	var at time.Time
	var id int64
	if err := q(`SELECT created_at, id FROM topups ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET `+strconv.FormatInt(sz.TopUps/2, 10), &at, &id); err != nil {
		return err
	}
	s.deepCursor = strconv.FormatInt(at.UnixMicro(), 10) + "-" + strconv.FormatInt(id, 10)
	token := func() (string, string) {
		var b [32]byte
		_, _ = crand.Read(b[:])
		tok := base64.RawURLEncoding.EncodeToString(b[:])
		sum := sha256.Sum256([]byte(tok))
		return tok, hex.EncodeToString(sum[:])
	}
	var hash string
	s.adminSession, hash = token()
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at, second_factor_at)
		SELECT $1, id, now(), now() + interval '1 day', now() FROM users WHERE role = 'admin'`, hash); err != nil {
		return err
	}
	s.payerSession, hash = token()
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, now(), now() + interval '1 day')`, hash, s.heavyUserID); err != nil {
		return err
	}
	apiToken := func(userID int64, scope string) (string, error) {
		tok, _ := token()
		tok = "kp_" + tok
		sum := sha256.Sum256([]byte(tok))
		_, err := conn.Exec(ctx, `INSERT INTO api_tokens (user_id, name, token_hash, prefix, scope, created_at, expires_at)
			VALUES ($1, 'bench', $2, $3, $4, now(), now() + interval '1 day')`, userID, hex.EncodeToString(sum[:]), tok[:9], scope)
		return tok, err
	}
	var err error
	if s.payerAPIToken, err = apiToken(s.heavyUserID, "read"); err != nil {
		return err
	}
	// The merchant: a charge half-way down its list, its session and
	// its API token (scope charges).
	var merchantID int64
	if err := q(`SELECT user_id FROM merchants`, &merchantID); err != nil {
		return err
	}
	if err := q(`SELECT public_id, order_id FROM charges ORDER BY id LIMIT 1 OFFSET `+strconv.FormatInt(sz.Charges/2, 10), &s.chargeID, &s.orderID); err != nil {
		return err
	}
	s.merchantSession, hash = token()
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, now(), now() + interval '1 day')`, hash, merchantID); err != nil {
		return err
	}
	if s.merchantAPIToken, err = apiToken(merchantID, "charges"); err != nil {
		return err
	}
	s.Rows = map[string]int64{}
	for _, t := range []string{"users", "topups", "topup_events", "ledger_transactions", "ledger_postings", "transfers", "charges", "withdrawals", "webhook_deliveries"} {
		var c int64
		if err := q(`SELECT reltuples::bigint FROM pg_class WHERE oid = '`+t+`'::regclass`, &c); err != nil {
			return err
		}
		s.Rows[t] = c
	}
	var heavy int64
	if err := q(`SELECT COUNT(*) FROM ledger_postings lp JOIN ledger_accounts a ON a.id = lp.account_id WHERE a.user_id = `+strconv.FormatInt(s.heavyUserID, 10), &heavy); err != nil {
		return err
	}
	s.Rows["heavy payer's postings"] = heavy
	return nil
}

// who a page is fetched as.
type who int

const (
	asAdmin who = iota
	asPayer
	asAPI
	asMerchant
	asMerchantAPI
)

// Page is one page measured: a path fetched as someone, answering 200.
type Page struct {
	Name string
	Path string
	who  who
}

// Pages are the pages of the issue: every admin page, every search
// kind, cursor paging, detail, users, audit, the dashboard, the payer's
// wallet, top-ups and CSV, and the API's lists.
func Pages(s Sample) []Page {
	persian := strings.NewReplacer("0", "۰", "1", "۱", "2", "۲", "3", "۳", "4", "۴", "5", "۵", "6", "۶", "7", "۷", "8", "۸", "9", "۹").Replace(strconv.FormatInt(s.refID, 10))
	amount := strconv.FormatInt(s.amount/10, 10) // tomans
	return []Page{
		{"admin dashboard", routes.Admin, asAdmin},
		{"admin top-ups (newest)", routes.AdminTopUps, asAdmin},
		{"admin top-ups (oldest first)", routes.AdminTopUps + "?sort=oldest", asAdmin},
		{"admin top-ups: cursor page (half-way)", routes.AdminTopUps + "?cursor=" + s.deepCursor, asAdmin},
		{"admin top-ups: status credited", routes.AdminTopUps + "?status=credited", asAdmin},
		{"admin top-ups: status needs_review", routes.AdminTopUps + "?status=needs_review", asAdmin},
		{"admin top-ups: status open", routes.AdminTopUps + "?status=awaiting_payment&status=pending_verification", asAdmin},
		{"admin top-ups: gateway", routes.AdminTopUps + "?gateway=zarinpal", asAdmin},
		{"admin top-ups: amount", routes.AdminTopUps + "?min=" + amount + "&max=" + amount, asAdmin},
		{"admin search: public id", routes.AdminTopUps + "?q=" + s.publicID, asAdmin},
		{"admin search: short reference", routes.AdminTopUps + "?q=" + strings.ToUpper(s.publicID[:4]+"-"+s.publicID[4:8]+"-"+s.publicID[8:12]), asAdmin},
		{"admin search: authority", routes.AdminTopUps + "?q=" + s.authority, asAdmin},
		{"admin search: bank reference", routes.AdminTopUps + "?q=" + strconv.FormatInt(s.refID, 10), asAdmin},
		{"admin search: bank reference, Persian digits", routes.AdminTopUps + "?q=" + persian, asAdmin},
		{"admin search: card last 4", routes.AdminTopUps + "?q=" + s.card4, asAdmin},
		{"admin search: e-mail (100k top-ups)", routes.AdminTopUps + "?q=" + s.heavyEmail, asAdmin},
		{"admin search: e-mail fragment", routes.AdminTopUps + "?q=" + s.fragment, asAdmin},
		// Twelve lower-case letters: a receipt's short reference typed
		// without dashes, or part of an address (a name).
		{"admin search: twelve letters", routes.AdminTopUps + "?q=mohammadreza", asAdmin},
		{"admin top-ups CSV: needs_review", routes.AdminTopUpsCSV + "?status=needs_review", asAdmin},
		{"admin top-ups CSV: open (two statuses)", routes.AdminTopUpsCSV + "?status=awaiting_payment&status=pending_verification", asAdmin},
		{"admin top-up detail", routes.AdminTopUp(s.detailID), asAdmin},
		{"admin users", routes.AdminUsers, asAdmin},
		{"admin users: e-mail fragment", routes.AdminUsers + "?q=" + s.fragment, asAdmin},
		{"admin user detail (100k top-ups)", routes.AdminUser(s.heavyUserID), asAdmin},
		{"admin audit", routes.AdminAudit, asAdmin},
		{"admin audit: one top-up", routes.AdminAudit + "?payment=" + s.detailID, asAdmin},
		{"admin transfers", routes.AdminTransfers, asAdmin},
		{"admin transfers: e-mail", routes.AdminTransfers + "?q=" + s.heavyEmail, asAdmin},
		{"admin transfer detail", routes.AdminTransfer(s.transferID), asAdmin},
		{"admin withdrawals", routes.AdminWithdrawals, asAdmin},
		{"admin withdrawal detail", routes.AdminWithdrawal(s.withdrawalID), asAdmin},
		{"admin charges", routes.AdminCharges, asAdmin},
		{"admin charges: e-mail", routes.AdminCharges + "?q=" + s.heavyEmail, asAdmin},
		{"admin charges: order id", routes.AdminCharges + "?q=" + s.orderID, asAdmin},
		{"admin charges: charge id", routes.AdminCharges + "?q=" + s.chargeID, asAdmin},
		{"admin charge detail", routes.AdminCharge(s.chargeID), asAdmin},
		{"admin gateways", routes.AdminGateways, asAdmin},
		{"admin tokens", routes.AdminTokens, asAdmin},
		{"admin webhooks", routes.AdminWebhooks, asAdmin},
		{"admin webhook log (the merchant's, 1M deliveries)", routes.AdminWebhook(s.merchantEndpoint), asAdmin},
		{"wallet (100k movements)", routes.Wallet, asPayer},
		{"wallet top-ups", routes.WalletTopUps, asPayer},
		{"wallet top-ups: credited", routes.WalletTopUps + "?status=credited", asPayer},
		{"wallet top-ups CSV (100k)", routes.WalletTopUpsCSV, asPayer},
		{"payer's top-up page", routes.TopUpPage(s.heavyTopUpID), asPayer},
		{"payer's transfer receipt", routes.TransferReceipt(s.payerTransferID), asPayer},
		{"wallet transfer form", routes.Transfer, asPayer},
		{"wallet withdraw form", routes.Withdraw, asPayer},
		{"payer's webhooks", routes.Webhooks, asPayer},
		{"payer's withdrawal receipt", routes.Withdrawal(s.withdrawalID), asPayer},
		{"API top-ups", routes.APITopUps, asAPI},
		{"API top-up", routes.APITopUp(s.heavyTopUpID), asAPI},
		{"API wallet", routes.APIWallet, asAPI},
		{"API wallet ledger", routes.APIWalletLedger, asAPI},
		{"API transfers", routes.APITransfers, asAPI},
		{"API withdrawals", routes.APIWithdrawals, asAPI},
		{"API withdrawal", routes.APIWithdrawal(s.withdrawalID), asAPI},
		{"API bank accounts", routes.APIBankAccounts, asAPI},
		{"merchant charges", routes.Merchant, asMerchant},
		{"merchant charges: succeeded", routes.Merchant + "?status=succeeded", asMerchant},
		{"merchant charges: canceled", routes.Merchant + "?status=canceled", asMerchant},
		{"merchant charge", routes.MerchantCharge(s.chargeID), asMerchant},
		{"merchant charges CSV", routes.MerchantChargesCSV, asMerchant},
		{"merchant's webhooks", routes.Webhooks, asMerchant},
		{"API charges (merchant)", routes.APICharges, asMerchantAPI},
		{"API charge (merchant)", routes.Fill(routes.APIChargePattern, s.chargeID), asMerchantAPI},
	}
}

// Client fetches the pages as the admin, the payer or the payer's
// API token.
type Client struct {
	base string
	s    Sample
	hc   *http.Client
}

func NewClient(base string, s Sample, tr http.RoundTripper) *Client {
	return &Client{base: base, s: s, hc: &http.Client{Transport: tr, Timeout: 5 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Get fetches p whole and fails unless it answers 200.
func (c *Client) Get(ctx context.Context, p Page) (int, error) {
	n, _, err := c.fetch(ctx, p)
	return n, err
}

// fetch is Get, with the time from sending the request to the answer's
// first byte (the status line: for a streamed CSV, the server sends it
// with its first batch of rows).
func (c *Client) fetch(ctx context.Context, p Page) (int, time.Duration, error) {
	t0 := time.Now()
	var first time.Duration
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Since(t0) }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+p.Path, nil)
	if err != nil {
		return 0, 0, err
	}
	switch p.who {
	case asAdmin:
		req.Header.Set("Cookie", "kp_session="+c.s.adminSession+"; lang=en")
	case asPayer:
		req.Header.Set("Cookie", "kp_session="+c.s.payerSession+"; lang=en")
	case asAPI:
		req.Header.Set("Authorization", "Bearer "+c.s.payerAPIToken)
	case asMerchant:
		req.Header.Set("Cookie", "kp_session="+c.s.merchantSession+"; lang=en")
	case asMerchantAPI:
		req.Header.Set("Authorization", "Bearer "+c.s.merchantAPIToken)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return len(b), 0, fmt.Errorf("%s: status %d (location %q): %.300s", p.Path, res.StatusCode, res.Header.Get("Location"), b)
	}
	return len(b), first, nil
}

// Timing is one page's p50 and p95 over its fetches: the whole answer
// read, and its first byte (what a download is judged by: a CSV of
// 100,000 rows is streamed a batch at a time, and its first byte leaves
// with the first batch).
type Timing struct {
	Page       string  `json:"page"`
	Path       string  `json:"path"`
	Fetches    int     `json:"fetches"`
	Bytes      int     `json:"bytes"`
	P50MS      float64 `json:"p50_ms"`
	P95MS      float64 `json:"p95_ms"`
	MaxMS      float64 `json:"max_ms"`
	FirstP50MS float64 `json:"first_byte_p50_ms"`
	FirstP95MS float64 `json:"first_byte_p95_ms"`
	Download   bool    `json:"download"` // a CSV: judged by its first byte
}

// TimePages fetches each page once to warm it, then fetches times more,
// one after another, and returns each page's p50 and p95.
func TimePages(ctx context.Context, c *Client, pages []Page, fetches int) ([]Timing, error) {
	var out []Timing
	for _, p := range pages {
		size, err := c.Get(ctx, p)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p.Name, err)
		}
		lats := make([]time.Duration, 0, fetches)
		firsts := make([]time.Duration, 0, fetches)
		for range fetches {
			t0 := time.Now()
			_, first, err := c.fetch(ctx, p)
			if err != nil {
				return out, fmt.Errorf("%s: %w", p.Name, err)
			}
			lats = append(lats, time.Since(t0))
			firsts = append(firsts, first)
		}
		slices.Sort(lats)
		slices.Sort(firsts)
		p95 := (len(lats)*95+99)/100 - 1
		out = append(out, Timing{Page: p.Name, Path: p.Path, Fetches: fetches, Bytes: size,
			P50MS: ms(lats[len(lats)/2]), P95MS: ms(lats[p95]), MaxMS: ms(lats[len(lats)-1]),
			FirstP50MS: ms(firsts[len(firsts)/2]), FirstP95MS: ms(firsts[p95]), Download: strings.Contains(p.Name, "CSV")})
	}
	return out, nil
}

// SizeOf is the proportions at n top-ups: a hundred per user, a
// transfer per ten top-ups, a hundredth of them the heavy payer's.
func SizeOf(n int64) Size {
	if n == Full.TopUps {
		return Full
	}
	return Size{TopUps: n, Users: max(n/100, 100), Transfers: max(n/10, 100), Heavy: max(n/100, 10), Charges: max(n/10, 100), Withdrawals: max(n/10, 100)}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
