package topupread

// The payer's own payments: the wallet page's payments in progress, and
// the JSON API's top-ups (the payment rows, newest first with keyset
// pagination, and when each credited one was credited), and which of them
// the payer dismissed (dismissed_payments, written by topup.Dismiss).

import (
	"context"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
)

// openForUserStatuses is the status condition of OpenForUser, written as
// literals: with parameters PostgreSQL could not prove, in a cached
// generic plan, that the condition implies the partial index
// topups_user_open_idx (migration 00008; 00057's list), and would walk all of the
// user's payments (or the whole table) instead. SQLite uses the index only
// when the condition is written as the index's is.
var openForUserStatuses = "status IN (" + literals([]string{string(topup.StatusAwaitingPayment),
	string(topup.StatusPendingVerification), string(topup.StatusSettling), string(topup.StatusReversing), string(topup.StatusNeedsReview)}) + ")"

// OpenForUser lists the user's payments whose outcome is not known yet,
// newest first (the wallet page shows them as in progress). It reads the
// partial index of open payments per user, so its cost does not grow with
// the user's credited and failed payments.
func (r *Reader) OpenForUser(ctx context.Context, userID int64, limit int) ([]topup.TopUp, error) {
	var out []topup.TopUp
	err := r.db.Gorm.WithContext(ctx).Table("topups").Where("user_id = ? AND "+openForUserStatuses, userID).
		Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("open payments of user %d: %w", userID, err)
	}
	return out, nil
}

// Item is a payment with the time its credit was booked.
type Item struct {
	topup.TopUp
	CreditedAt *time.Time
}

// TopUps returns up to limit of the user's payments, newest first, older
// than the payment with internal id before (0: from the newest). next is
// the cursor of the following page, 0 when there is none.
func (r *Reader) TopUps(ctx context.Context, userID, before int64, limit int) (items []Item, next int64, err error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	db := r.page() // a list: the read pool
	q := db.Gorm.WithContext(ctx).Where("user_id = ?", userID)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	var rows []topup.TopUp
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("top-ups of user %d: %w", userID, err)
	}
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	items, err = r.withCredits(ctx, db, rows)
	return items, next, err
}

// TopUp returns one of the user's payments by its public id; another user's
// payment is ErrNotFound.
func (r *Reader) TopUp(ctx context.Context, userID int64, publicID string) (Item, error) {
	if !topup.ValidPublicID(publicID) {
		return Item{}, ErrNotFound
	}
	var rows []topup.TopUp
	if err := r.db.Gorm.WithContext(ctx).Where("public_id = ? AND user_id = ?", publicID, userID).Limit(1).Find(&rows).Error; err != nil {
		return Item{}, fmt.Errorf("top-up %s: %w", publicID, err)
	}
	if len(rows) == 0 {
		return Item{}, ErrNotFound
	}
	items, err := r.withCredits(ctx, r.db, rows)
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

func (r *Reader) withCredits(ctx context.Context, db *store.DB, rows []topup.TopUp) ([]Item, error) {
	items := make([]Item, len(rows))
	var ids []int64
	for i, p := range rows {
		items[i].TopUp = p
		if p.Status == topup.StatusCredited {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return items, nil
	}
	var credits []struct {
		TopUpID   int64
		CreatedAt time.Time
	}
	if err := db.Gorm.WithContext(ctx).Table("ledger_transactions").Select("topup_id, created_at").
		Where("topup_id IN ? AND kind = 'topup'", ids).Scan(&credits).Error; err != nil {
		return nil, fmt.Errorf("credits of top-ups: %w", err)
	}
	at := make(map[int64]time.Time, len(credits))
	for _, c := range credits {
		at[c.TopUpID] = c.CreatedAt
	}
	for i := range items {
		if t, ok := at[items[i].ID]; ok {
			items[i].CreditedAt = &t
		}
	}
	return items, nil
}

// PayerFilter narrows a payer's own payments list (/wallet/payments): by
// status group and by the time they were started ([From, To), either
// zero for no bound).
type PayerFilter struct {
	Statuses []topup.Status // none: every status
	From, To time.Time
}

// StatusGroup is a payer-facing status filter: "credited", "open" (still
// with the bank), "failed", "needs_review" (under review); "" for all.
// ok is false for anything else.
func StatusGroup(name string) (statuses []topup.Status, ok bool) {
	switch name {
	case "":
		return nil, true
	case "credited":
		return []topup.Status{topup.StatusCredited}, true
	case "open":
		return []topup.Status{topup.StatusCreated, topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusSettling, topup.StatusReversing}, true
	case "failed":
		return []topup.Status{topup.StatusFailed}, true
	case "needs_review":
		return []topup.Status{topup.StatusNeedsReview}, true
	}
	return nil, false
}

// ForPayer returns up to limit of the user's payments that match f, newest
// first, older than the payment with internal id before (0: from the
// newest); next is the following page's cursor, 0 when there is none.
// Every attempt is listed: credited, open, failed and under review.
func (r *Reader) ForPayer(ctx context.Context, userID int64, f PayerFilter, before int64, limit int) (items []topup.TopUp, next int64, err error) {
	if limit <= 0 || limit > 1000 {
		limit = 20
	}
	q := r.page().Gorm.WithContext(ctx).Where("user_id = ?", userID) // a list: the read pool
	if len(f.Statuses) > 0 {
		// Literals, checked against the known statuses: with the status
		// as a parameter, PostgreSQL's generic plan (after five runs of
		// the prepared statement) read every one of a payer's top-ups of
		// the status and sorted them (930 ms for 7,000, make bench-admin
		// at 1M); with the literal it walks (user_id, id) newest first
		// for a common status and the status's range for a rare one.
		list := make([]string, 0, len(f.Statuses))
		for _, st := range f.Statuses {
			if !ValidStatus(string(st)) {
				return nil, 0, fmt.Errorf("top-ups of user %d: unknown status %q", userID, st)
			}
			list = append(list, string(st))
		}
		q = q.Where("status IN (" + literals(list) + ")")
	}
	if !f.From.IsZero() {
		q = q.Where("created_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("created_at < ?", f.To.UTC())
	}
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Order("id DESC").Limit(limit + 1).Find(&items).Error; err != nil {
		return nil, 0, fmt.Errorf("top-ups of user %d: %w", userID, err)
	}
	if len(items) > limit {
		items = items[:limit]
		next = items[limit-1].ID
	}
	return items, next, nil
}

// Usage sums what counts against a user's limits (sqlstore.UsageOf,
// the query the start's admission runs under the wallet's lock).
func (r *Reader) Usage(ctx context.Context, userID int64, since time.Time) (topup.Usage, error) {
	return sqlstore.UsageOf(r.db.Gorm.WithContext(ctx), userID, since)
}

// Dismissed returns which of the user's payments ids were dismissed.
func (r *Reader) Dismissed(ctx context.Context, userID int64, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var got []int64
	if err := r.db.Gorm.WithContext(ctx).Raw(`SELECT topup_id FROM dismissed_topups WHERE user_id = ? AND topup_id IN ?`, userID, ids).
		Scan(&got).Error; err != nil {
		return nil, fmt.Errorf("dismissed payments of user %d: %w", userID, err)
	}
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}
