package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/retention"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func exec(t *testing.T, db *store.DB, sql string, args ...any) {
	t.Helper()
	if err := db.Gorm.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Each kind goes after its stated time, and not before; nothing the money
// proof needs goes at all, however old: payments, events, ledger, and the
// calls of credited and open payments. `kifpool check`'s rules, the call
// log's included, still hold afterwards.
func TestPurge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now().UTC()
		ago := func(d time.Duration) time.Time { return now.Add(-d) }
		year := 365 * 24 * time.Hour
		exec(t, db, `INSERT INTO users (id, email, password_hash, created_at) VALUES (1, 'a@example.com', 'x', ?)`, ago(2*year))
		exec(t, db, `INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (1, 1, ?, ?)`, ago(2*year), ago(2*year))
		exec(t, db, `INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, posted_rials, created_at, updated_at)
			VALUES ('wallet', 'wallet:1', 1, 1, FALSE, 10000, ?, ?)`, ago(2*year), ago(2*year))
		exec(t, db, `UPDATE ledger_accounts SET posted_rials = -10000 WHERE code = 'gateway:zarinpal'`)
		// Sessions: expired two days ago (goes at 24h), expired an hour ago
		// (stays), valid (stays).
		exec(t, db, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ('old', 1, ?, ?)`, ago(40*24*time.Hour), ago(48*time.Hour))
		exec(t, db, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ('recent', 1, ?, ?)`, ago(30*24*time.Hour), ago(time.Hour))
		exec(t, db, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ('valid', 1, ?, ?)`, ago(time.Hour), now.Add(time.Hour))
		// Throttles: quiet for two days (goes), quiet for two days but
		// still locked (stays), busy an hour ago (stays).
		exec(t, db, `INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES ('quiet', 3, ?, ?)`, ago(48*time.Hour), ago(48*time.Hour))
		exec(t, db, `INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES ('locked', 9, ?, ?)`, now.Add(time.Hour), ago(48*time.Hour))
		exec(t, db, `INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES ('busy', 1, ?, ?)`, ago(time.Hour), ago(time.Hour))
		// Counted ownership inquiries: two days old (goes), an hour old
		// (stays: it still counts).
		exec(t, db, `INSERT INTO bank_inquiries (user_id, created_at) VALUES (1, ?)`, ago(48*time.Hour))
		exec(t, db, `INSERT INTO bank_inquiries (user_id, created_at) VALUES (1, ?)`, ago(time.Hour))
		// TopUps a year old: credited, failed, under review, open; one
		// failed a day ago. Each has two calls a year old.
		for _, p := range []struct {
			id       int64
			status   string
			resolved any
			chain    []string
		}{
			{1, "credited", ago(year), []string{"created", "awaiting_payment", "credited"}},
			{2, "failed", ago(year), []string{"created", "awaiting_payment", "failed"}},
			{3, "needs_review", ago(year), []string{"created", "awaiting_payment", "needs_review"}},
			{4, "pending_verification", nil, []string{"created", "awaiting_payment", "pending_verification"}},
			{5, "failed", ago(24 * time.Hour), []string{"created", "awaiting_payment", "failed"}},
			// Failed a year ago, reopened by a late callback an hour ago and
			// failed again on the bank's word: resolved_at keeps the first
			// failure, but today's calls are the evidence of today's answer.
			{6, "failed", ago(year), []string{"created", "awaiting_payment", "failed", "pending_verification", "failed"}},
			// Created and failed after the others (the purge walks the
			// failed top-ups a batch at a time, in (created_at, id) order).
			{7, "failed", ago(100 * 24 * time.Hour), []string{"created", "awaiting_payment", "failed"}},
		} {
			created := ago(year)
			if p.id == 7 {
				created = ago(200 * 24 * time.Hour)
			}
			var ref, verified any
			if p.status == "credited" {
				ref, verified = int64(77), int64(10000)
			}
			exec(t, db, `INSERT INTO topups (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, authority, ref_id,
				verified_amount_rials, status, created_at, updated_at, opened_at, resolved_at) VALUES (?, ?, 1, 1, 10000, 'zarinpal', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				p.id, "p"+p.status+string(rune('0'+p.id)), "f"+string(rune('0'+p.id)), "A"+string(rune('0'+p.id)), ref, verified, p.status, created, created, now.Add(-time.Minute), p.resolved)
			for i := 1; i < len(p.chain); i++ {
				exec(t, db, `INSERT INTO topup_events (topup_id, from_status, to_status, actor, created_at) VALUES (?, ?, ?, 'worker', ?)`,
					p.id, p.chain[i-1], p.chain[i], created)
			}
			exec(t, db, `INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (?, 'zarinpal', 'request', 1, ?, 5, 'ok')`, p.id, created)
			exec(t, db, `INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (?, 'zarinpal', 'verify', 1, ?, 5, ?)`,
				p.id, created, map[bool]string{true: "paid", false: "not_paid"}[p.status == "credited"])
		}
		exec(t, db, `INSERT INTO gateway_calls (topup_id, gateway, operation, attempt, started_at, duration_ms, outcome) VALUES (6, 'zarinpal', 'verify', 1, ?, 5, 'not_paid')`, ago(time.Hour))
		exec(t, db, `INSERT INTO ledger_transactions (id, kind, reference, topup_id, created_at) VALUES (1, 'topup', 'pcredited1', 1, ?)`, ago(year))
		exec(t, db, `INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at) VALUES
			(1, (SELECT id FROM ledger_accounts WHERE code = 'gateway:zarinpal'), -10000, -10000, ?),
			(1, (SELECT id FROM ledger_accounts WHERE code = 'wallet:1'), 10000, 10000, ?)`, ago(year), ago(year))
		// Calls of no payment (reconciliation's list): a year old, and today.
		exec(t, db, `INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'list_unverified', 1, ?, 5, 'ok')`, ago(year))
		exec(t, db, `INSERT INTO gateway_calls (gateway, operation, attempt, started_at, duration_ms, outcome) VALUES ('zarinpal', 'list_unverified', 1, ?, 5, 'ok')`, ago(time.Hour))

		before := map[string]int64{}
		for _, tbl := range []string{"topups", "topup_events", "ledger_transactions", "ledger_postings", "ledger_accounts", "wallets", "users"} {
			before[tbl] = count(t, db, `SELECT COUNT(*) FROM `+tbl)
		}
		policy := retention.Policy{ExpiredSessions: 24 * time.Hour, Throttles: 24 * time.Hour, GatewayCalls: 90 * 24 * time.Hour, Batch: 1}
		res, err := retention.Purge(context.Background(), db, now, policy)
		if err != nil {
			t.Fatal(err)
		}
		if want := (retention.Result{Sessions: 1, Throttles: 2, GatewayCalls: 5}); res != want {
			t.Fatalf("deleted %+v, want %+v", res, want)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM sessions WHERE token_hash IN ('recent', 'valid')`); n != 2 || count(t, db, `SELECT COUNT(*) FROM sessions`) != 2 {
			t.Errorf("sessions left: %d of recent/valid", n)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM auth_throttles WHERE key IN ('locked', 'busy')`); n != 2 || count(t, db, `SELECT COUNT(*) FROM auth_throttles`) != 2 {
			t.Errorf("throttles left: %d of locked/busy", n)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM bank_inquiries WHERE created_at > ?`, ago(2*time.Hour)); n != 1 || count(t, db, `SELECT COUNT(*) FROM bank_inquiries`) != 1 {
			t.Errorf("ownership inquiries left: %d recent", n)
		}
		for id, want := range map[int64]int64{1: 2, 2: 0, 3: 2, 4: 2, 5: 2, 6: 3, 7: 0} {
			if n := count(t, db, `SELECT COUNT(*) FROM gateway_calls WHERE topup_id = ?`, id); n != want {
				t.Errorf("payment %d keeps %d calls, want %d", id, n, want)
			}
		}
		if n := count(t, db, `SELECT COUNT(*) FROM gateway_calls WHERE topup_id IS NULL`); n != 1 {
			t.Errorf("%d calls of no payment left, want today's", n)
		}
		for tbl, n := range before {
			if got := count(t, db, `SELECT COUNT(*) FROM `+tbl); got != n {
				t.Errorf("%s: %d rows, had %d", tbl, got, n)
			}
		}
		rep, err := integrity.Check(context.Background(), db, integrity.Options{})
		if err != nil || !rep.OK() {
			t.Fatalf("check after the purge: %v %v", err, rep.Violations())
		}
		// Again: nothing more to delete. Off (zero) keeps everything.
		if res, err := retention.Purge(context.Background(), db, now, policy); err != nil || res != (retention.Result{}) {
			t.Fatalf("second purge: %+v %v", res, err)
		}
		if res, err := retention.Purge(context.Background(), db, now.Add(10*365*24*time.Hour), retention.Policy{}); err != nil || res != (retention.Result{}) {
			t.Fatalf("purge with everything off: %+v %v", res, err)
		}
		// A throttle retention below auth's memory is raised to it.
		exec(t, db, `INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES ('twelve', 3, ?, ?)`, ago(12*time.Hour), ago(12*time.Hour))
		if res, err := retention.Purge(context.Background(), db, now, retention.Policy{Throttles: time.Hour}); err != nil || res.Throttles != 0 {
			t.Fatalf("throttle quiet 12h deleted with 1h retention: %+v %v", res, err)
		}
	})
}

// Mail goes RETENTION_MAIL after it was sent or given up; a mail still
// queued stays however old (the sender still owes it), and so does a
// recent one.
func TestPurgeMail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now().UTC()
		ago := func(d time.Duration) time.Time { return now.Add(-d) }
		day := 24 * time.Hour
		for _, m := range []struct {
			subject, status string
			created         time.Time
			sent            any
		}{
			{"old sent", "sent", ago(40 * day), ago(40 * day)},
			{"old failed", "failed", ago(40 * day), nil},
			{"old expired", "expired", ago(40 * day), nil},
			{"old queued", "queued", ago(40 * day), nil},
			{"recent sent", "sent", ago(day), ago(day)},
			{"old, sent recently", "sent", ago(40 * day), ago(day)},
		} {
			exec(t, db, `INSERT INTO mails (kind, to_addr, subject, text_body, status, next_attempt_at, created_at, sent_at)
				VALUES ('receipt', 'a@example.com', ?, 'body', ?, ?, ?, ?)`, m.subject, m.status, m.created, m.created, m.sent)
		}
		res, err := retention.Purge(context.Background(), db, now, retention.Policy{Mail: 30 * day, Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res != (retention.Result{Mails: 3}) {
			t.Fatalf("deleted %+v, want 3 mails", res)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM mails WHERE subject IN ('old queued', 'recent sent', 'old, sent recently')`); n != 3 ||
			count(t, db, `SELECT COUNT(*) FROM mails`) != 3 {
			t.Errorf("mails left: %d of the three to keep", n)
		}
	})
}

// Webhook deliveries delivered or given up long ago go; pending ones and
// recent ones stay.
func TestPurgeWebhooks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now().UTC()
		ago := func(d time.Duration) time.Time { return now.Add(-d) }
		day := 24 * time.Hour
		exec(t, db, `INSERT INTO users (id, email, password_hash, created_at) VALUES (900, 'hook@example.com', 'x', ?)`, now)
		exec(t, db, `INSERT INTO wallets (id, user_id, created_at, updated_at) VALUES (900, 900, ?, ?)`, now, now)
		exec(t, db, `INSERT INTO topups (id, public_id, user_id, wallet_id, amount_rials, gateway, form_token, status, created_at, updated_at)
			VALUES (900, 'hookpayment', 900, 900, 10000, 'sandbox', 'f', 'failed', ?, ?)`, now, now)
		exec(t, db, `INSERT INTO webhook_endpoints (id, user_id, url, events, secret_enc, created_at) VALUES (900, 900, 'https://x.example', ',topup.failed,', 'v1:x', ?)`, now)
		for i, d := range []struct {
			status             string
			created, delivered time.Time
			last               any
		}{
			{"delivered", ago(40 * day), ago(40 * day), ago(40 * day)},
			{"failed", ago(40 * day), time.Time{}, ago(37 * day)},
			{"pending", ago(40 * day), time.Time{}, ago(39 * day)},
			{"delivered", ago(40 * day), ago(day), ago(day)},
			{"failed", ago(40 * day), time.Time{}, ago(day)},
		} {
			var delivered any
			if !d.delivered.IsZero() {
				delivered = d.delivered
			}
			exec(t, db, `INSERT INTO webhook_deliveries (event_id, endpoint_id, topup_id, type, body, status, next_attempt_at, last_attempt_at, created_at, retry_from, delivered_at)
				VALUES (?, 900, 900, 'topup.failed', '{}', ?, ?, ?, ?, ?, ?)`, "evt_"+string(rune('a'+i)), d.status, d.created, d.last, d.created, d.created, delivered)
		}
		res, err := retention.Purge(context.Background(), db, now, retention.Policy{Webhooks: 30 * day, Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res != (retention.Result{Webhooks: 2}) {
			t.Fatalf("deleted %+v, want 2 webhook deliveries", res)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE event_id IN ('evt_c', 'evt_d', 'evt_e')`); n != 3 {
			t.Errorf("%d of the three deliveries to keep are left", n)
		}
	})
}
