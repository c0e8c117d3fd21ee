package views

import (
	"fmt"
	"strings"
	"time"
)

// AdminView is the admin overview: unresolved payments, the gateway's
// circuit breaker and the latest reconciliations.
type AdminView struct {
	Notice   string // message key of the last action's result
	Payments []AdminPaymentRow
	Counts   []StatusCount
	// CountsEstimated: some count is an estimate; each status is counted
	// exactly up to ExactUpTo payments.
	CountsEstimated bool
	ExactUpTo       int64
	Breakers        []BreakerView
	Reconcile       []ReconcileView
	// TopUps are the last 24 hours of top-ups, oldest first.
	TopUps []HourView
	// Latency is the bank's latency per operation over the last 24 hours.
	Latency []LatencyView
	Backlog BacklogView
}

// StatusCount is how many payments have a status.
type StatusCount struct {
	Status string
	N      int64
	// Estimate: N is an estimate from the database's statistics (shown
	// with "≈"), not a count.
	Estimate bool
}

// AdminPaymentRow is one unresolved payment.
type AdminPaymentRow struct {
	PublicID    string
	Email       string
	AmountRials int64
	Status      string
	Reason      string
	Attempts    int
	CreatedAt   time.Time
	NextCheckAt *time.Time
	// Late: open, and its check is overdue (the worker is behind, or the
	// payment is stuck).
	Late bool
}

// BreakerView is a gateway's circuit breaker.
type BreakerView struct {
	Name                string
	State               string
	Requests            uint32
	Failures            uint32
	ConsecutiveFailures uint32
	Since               time.Time
}

// ReconcileView is one stored reconciliation.
type ReconcileView struct {
	StartedAt     time.Time
	Listed        int
	Ours          int
	Credited      int
	CreditedRials int64
	Foreign       int
	ForeignRials  int64
	Mismatches    int
	Error         string
	Items         []ReconcileItemView
}

// ReconcileItemView is one line of a reconciliation.
type ReconcileItemView struct {
	Authority   string
	AmountRials int64
	PublicID    string
	Kind        string
	Detail      string
}

// EmailOddities lists, by code point, the characters of an address that
// are not printable ASCII ("" when there are none), so that an admin sees
// "U+0430" where a Cyrillic "а" poses as a Latin "a", and sees invisible
// characters at all.
func EmailOddities(email string) string {
	var out []string
	for _, r := range email {
		if r < 0x21 || r > 0x7e {
			out = append(out, fmt.Sprintf("U+%04X", r))
		}
	}
	return strings.Join(out, " ")
}
