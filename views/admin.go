package views

import "time"

// AdminView is the admin overview: unresolved payments, the gateway's
// circuit breaker and the latest reconciliations.
type AdminView struct {
	Notice    string // message key of the last action's result
	Payments  []AdminPaymentRow
	Counts    []StatusCount
	Breakers  []BreakerView
	Reconcile []ReconcileView
}

// StatusCount is how many payments have a status.
type StatusCount struct {
	Status string
	N      int64
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
