// Package retention deletes what the app no longer needs, after stated
// times (RETENTION_* variables): sessions some time after they expired,
// sign-in throttles quiet for long enough, e-mails long sent or given up,
// and the bank calls of payments
// that ended without money (and calls that belong to no payment, such as
// reconciliation's list of unverified payments).
//
// Nothing the money proof needs is ever deleted: payments, payment_events,
// the ledger (ledger_*), wallets, admin_actions, reconcile_reports, and the
// gateway_calls of every payment that is credited or still open (a failed
// payment's calls go only once it has been failed for the whole retention
// time and none of its calls is younger: a reopened payment that failed
// again keeps its first failure's resolved_at, and the fresh answer behind
// that failure must stay; should it be reopened and credited later, that
// credit's own verify is written with it). `kifpool check` after a purge still passes.
//
// Deletes run in small batches (each its own statement), so that a large
// backlog never holds locks for long; serve's background loop runs Purge
// every hour.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// MinThrottles: a throttle forgets a key quiet this long anyway (auth's
// memory); deleting it sooner would lift a lock-out.
const MinThrottles = 24 * time.Hour

// Policy says how long each kind of row is kept; zero keeps it for ever.
type Policy struct {
	// ExpiredSessions: a session is deleted this long after it expired.
	ExpiredSessions time.Duration
	// Throttles: a sign-in throttle is deleted when it has been quiet this
	// long and holds no lock-out (at least MinThrottles); so is a counted
	// ownership inquiry of a bank account (bank_inquiries, counted over
	// 24 hours).
	Throttles time.Duration
	// GatewayCalls: the calls of a payment failed this long ago, and calls
	// of no payment this old, are deleted.
	GatewayCalls time.Duration
	// Mail: an e-mail sent, failed or expired this long ago is deleted
	// (one still queued never is).
	Mail time.Duration
	// Webhooks: a webhook delivery delivered, or given up, this long ago
	// is deleted (a pending one never is).
	Webhooks time.Duration
	// Batch is the rows per delete statement, and for the calls of failed
	// top-ups the top-ups per statement (0: 1000).
	Batch int
}

// Result counts the rows deleted.
type Result struct {
	Sessions, Throttles, GatewayCalls, Mails, Webhooks int64
}

// Purge deletes, as of now, what the policy no longer keeps.
func Purge(ctx context.Context, db *store.DB, now time.Time, p Policy) (Result, error) {
	var res Result
	if p.Batch <= 0 {
		p.Batch = 1000
	}
	now = now.UTC()
	var errs []error
	if p.ExpiredSessions > 0 {
		n, err := batches(ctx, db, p.Batch, `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? LIMIT ?)`,
			now.Add(-p.ExpiredSessions))
		res.Sessions, errs = n, append(errs, wrap("sessions", err))
	}
	if p.Throttles > 0 {
		keep := max(p.Throttles, MinThrottles)
		n, err := batches(ctx, db, p.Batch, `DELETE FROM auth_throttles WHERE key IN (SELECT key FROM auth_throttles
			WHERE updated_at < ? AND locked_until < ? LIMIT ?)`, now.Add(-keep), now)
		res.Throttles, errs = n, append(errs, wrap("throttles", err))
		n, err = batches(ctx, db, p.Batch, `DELETE FROM bank_inquiries WHERE id IN (SELECT id FROM bank_inquiries
			WHERE created_at < ? LIMIT ?)`, now.Add(-keep))
		res.Throttles, errs = res.Throttles+n, append(errs, wrap("bank inquiries", err))
	}
	if p.GatewayCalls > 0 {
		cut := now.Add(-p.GatewayCalls)
		// Calls of no top-up started before the cut-off (reconciliation's
		// lists), then the calls of top-ups failed before it.
		n, err := batches(ctx, db, p.Batch, `DELETE FROM gateway_calls WHERE id IN (SELECT id FROM gateway_calls
			WHERE topup_id IS NULL AND started_at < ? LIMIT ?)`, cut)
		res.GatewayCalls, errs = n, append(errs, wrap("gateway calls", err))
		if err == nil {
			n, err = failedCalls(ctx, db, p.Batch, cut)
			res.GatewayCalls += n
			errs = append(errs, wrap("gateway calls of failed top-ups", err))
		}
	}
	if p.Mail > 0 {
		// A mail's last word is sent_at when it was sent, else (failed,
		// expired) its next_attempt_at, which the sender moves on every
		// attempt; never a queued one.
		n, err := batches(ctx, db, p.Batch, `DELETE FROM mails WHERE id IN (SELECT id FROM mails
			WHERE status IN ('sent', 'failed', 'expired') AND COALESCE(sent_at, next_attempt_at) < ? AND created_at < ? LIMIT ?)`,
			now.Add(-p.Mail), now.Add(-p.Mail))
		res.Mails, errs = n, append(errs, wrap("mails", err))
	}
	if p.Webhooks > 0 {
		// A delivery's last word is delivered_at, else (failed) its last
		// attempt (or, never attempted, its creation); never a pending one.
		cut := now.Add(-p.Webhooks)
		n, err := batches(ctx, db, p.Batch, `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
			WHERE status IN ('delivered', 'failed') AND COALESCE(delivered_at, last_attempt_at, created_at) < ? LIMIT ?)`, cut)
		res.Webhooks, errs = n, append(errs, wrap("webhook deliveries", err))
	}
	return res, errors.Join(errs...)
}

// failedCalls deletes the calls of top-ups failed (and resolved) before
// cut with no call since: a reopen that failed again keeps the first
// failure's resolved_at, so its fresh calls, and the old ones with them,
// stay until they too are old. Credited and open top-ups keep every call.
//
// It walks the failed top-ups created before cut (a top-up resolved
// before cut was created before it) that still have a call, a batch at a
// time in (created_at, id) order from topups_status_created_idx, and
// deletes their calls with every condition checked again in the DELETE.
// Each batch starts where the last ended, so a purge reads each failed
// top-up once: one DELETE joining every call to its top-up, repeated a
// batch at a time, walked the calls from the start each time (15-20 s a
// statement at 10M top-ups, when nothing was left to delete).
func failedCalls(ctx context.Context, db *store.DB, batch int, cut time.Time) (int64, error) {
	type key struct {
		ID        int64
		CreatedAt time.Time
	}
	var (
		total int64
		after *key
	)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		q := db.Gorm.WithContext(ctx).Table("topups AS p").Select("p.id, p.created_at").
			Where("p.status = 'failed' AND p.created_at < ?", cut).
			Where("EXISTS (SELECT 1 FROM gateway_calls c WHERE c.topup_id = p.id)")
		if after != nil {
			// The plain bound starts the index's range at the last batch's
			// end (an OR alone cannot: each batch would read from the
			// oldest again); the OR then steps past that batch's ties.
			q = q.Where("p.created_at >= ? AND (p.created_at > ? OR (p.created_at = ? AND p.id > ?))",
				after.CreatedAt, after.CreatedAt, after.CreatedAt, after.ID)
		}
		var page []key
		if err := store.Scan(q.Order("p.created_at, p.id").Limit(batch), &page); err != nil {
			return total, err
		}
		if len(page) == 0 {
			return total, nil
		}
		ids := make([]int64, len(page))
		for i, k := range page {
			ids[i] = k.ID
		}
		res := db.Gorm.WithContext(ctx).Exec(`DELETE FROM gateway_calls WHERE topup_id IN (SELECT p.id FROM topups p
			WHERE p.id IN ? AND p.status = 'failed' AND p.resolved_at IS NOT NULL AND p.resolved_at < ?
			AND NOT EXISTS (SELECT 1 FROM gateway_calls n WHERE n.topup_id = p.id AND n.started_at >= ?))`, ids, cut, cut)
		if res.Error != nil {
			return total, res.Error
		}
		total += res.RowsAffected
		last := page[len(page)-1]
		if len(page) < batch || (after != nil && last == *after) {
			return total, nil // the end, or no step forward (never loop)
		}
		after = &last
	}
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("retention: delete %s: %w", what, err)
}

// batches runs a DELETE … LIMIT ? (the batch size as its last argument)
// until it deletes fewer rows than a batch.
func batches(ctx context.Context, db *store.DB, batch int, sql string, args ...any) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res := db.Gorm.WithContext(ctx).Exec(sql, append(args, batch)...)
		if res.Error != nil {
			return total, res.Error
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}
