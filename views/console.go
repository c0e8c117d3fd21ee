package views

import "time"

// ConsoleSection names the admin console's page, for its navigation.
type ConsoleSection string

// Sections of the admin console.
const (
	SectionDashboard ConsoleSection = "dashboard"
	SectionPayments  ConsoleSection = "payments"
	SectionUsers     ConsoleSection = "users"
	SectionAudit     ConsoleSection = "audit"
)

// Option is one choice of a select.
type Option struct {
	Value, Label string
}

// FilterCount is how many payments of a status the current filter finds
// (More: more than N).
type FilterCount struct {
	Status  string
	N       int64
	More    bool
	Checked bool
}

// PaymentListView is GET /admin/payments.
type PaymentListView struct {
	Query    string
	Gateway  string
	From, To string // as typed (Jalali)
	Min, Max string // tomans, as typed
	Sort     string // "newest" or "oldest"
	ErrorKey string // message key of a bad filter
	Counts   []FilterCount
	Gateways []Option
	Rows     []ConsolePaymentRow
	// NextURL is the next page (""): the last); FirstURL the first page
	// when this is not it.
	NextURL, FirstURL string
	CSVURL            string
}

// ConsolePaymentRow is one payment in the console's list.
type ConsolePaymentRow struct {
	PublicID    string
	Email       string
	UserID      int64
	AmountRials int64
	Gateway     string // as configured ("sandbox" for the sandbox bank)
	Status      string
	RefID       int64
	Card        string
	CreatedAt   time.Time
}
