// Package topupread is the one home of top-up reads: everything a page
// or the API shows about top-ups, and nothing that changes one.
//
//   - the admin console's payment list: filters, search, keyset pagination
//     and capped counts per status (list.go);
//   - one payment's whole story: the row, its credit in the ledger, its
//     status changes and every bank call (detail.go);
//   - the admin dashboard: totals by status (exact where cheap, estimates
//     marked as such where not), payments needing attention, top-ups by
//     hour, the bank's latency, the worker's backlog, the latest
//     reconciliations (dashboard.go);
//   - the payer's own payments: the wallet page's payments in progress and
//     the JSON API's top-up reads (payer.go).
//
// Its SQL is read-only and written for the indexes it reads
// (docs/design/reads.md): status conditions as literals, so that PostgreSQL can match the
// partial indexes of open payments in a cached generic plan. Every change
// of a top-up goes through internal/topup.
package topupread

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
)

// Reader reads payments: lists, searches, the dashboard and the payer's
// lists from its read pool (DATABASE_READ_URL, else the primary), one
// top-up and what a use case decides on from the primary
// (docs/design/scaling.md#read-replicas).
type Reader struct {
	db    *store.DB
	reads *store.ReadPool // nil: every read on db
	cache *dashCache      // shared by the reader's copies
}

// New returns a reader over db.
func New(db *store.DB) *Reader { return &Reader{db: db, cache: &dashCache{}} }

// WithReadPool returns a reader whose page reads go to pool.
func (r *Reader) WithReadPool(pool *store.ReadPool) *Reader {
	return &Reader{db: r.db, reads: pool, cache: r.cache}
}

// Fresh returns the reader with every read on the primary: for a page
// that shows what was just written (the admin's page of one top-up, after
// an action).
func (r *Reader) Fresh() *Reader { return &Reader{db: r.db, cache: r.cache} }

// page is the database of a page's read: the read pool's, else the
// primary.
func (r *Reader) page() *store.DB {
	if r.reads == nil {
		return r.db
	}
	return r.reads.DB()
}

// ErrNotFound is returned for a payment that does not exist (or, for the
// payer's reads, is not theirs).
var ErrNotFound = errors.New("payment not found")

// Statuses are the payment statuses, in the order the console lists them.
var Statuses = []string{string(topup.StatusCreated), string(topup.StatusAwaitingPayment),
	string(topup.StatusPendingVerification), string(topup.StatusSettling), string(topup.StatusReversing), string(topup.StatusNeedsReview),
	string(topup.StatusCredited), string(topup.StatusFailed)}

// OpenStatuses are the statuses of payments whose outcome is not final
// (and needs_review, which waits for an admin); a partial index covers
// exactly these (topups_open_created_idx, migration 00007, with settling
// since 00018 and reversing since 00057).
var OpenStatuses = []string{string(topup.StatusCreated), string(topup.StatusAwaitingPayment),
	string(topup.StatusPendingVerification), string(topup.StatusSettling), string(topup.StatusReversing), string(topup.StatusNeedsReview)}

// ValidStatus reports whether s is a payment status.
func ValidStatus(s string) bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// literals writes statuses as an SQL list of literals. They come from the
// fixed sets above (never from a request), and literals, unlike
// parameters, let PostgreSQL match a partial index in a generic plan.
// A status that is not a bare lower-case word is a programming error and
// panics: whatever a caller forgot to check, nothing but a status name is
// ever written into a statement.
func literals(statuses []string) string {
	out := ""
	for i, s := range statuses {
		if s == "" || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz_") != "" {
			panic(fmt.Sprintf("topupread: %q is not a status to write as an SQL literal", s))
		}
		if i > 0 {
			out += ", "
		}
		out += "'" + s + "'"
	}
	return out
}
