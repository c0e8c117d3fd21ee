package views

import (
	"regexp"
	"strconv"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
)

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

// PaymentDetailView is GET /admin/payments/{public_id}: the whole story.
type PaymentDetailView struct {
	Notice, NoticeKind string // message key of the last action's result; "ok" or "error"
	// OverBalanceLimit, when not 0, is the balance cap this payment's
	// credit took the wallet over (credited all the same: the bank had
	// the money).
	OverBalanceLimit int64
	PublicID         string
	Status           string
	Reason           string // in words
	AmountRials      int64
	VerifiedRials    int64
	Gateway          string
	Authority        string
	RefID            int64
	Card             string
	Attempts         int
	CreatedAt        time.Time
	ResolvedAt       *time.Time
	NextCheckAt      *time.Time
	LastCheckedAt    *time.Time
	CanRecheck       bool // "ask the bank now"
	CanClose         bool // "close as failed" (needs_review)
	Events           []TimelineEvent
	Calls            []GatewayCallView
	Ledger           *LedgerRow
	User             ConsoleUser
	UserPayments     []ConsolePaymentRow
	Actions          []AuditRow
}

// TimelineEvent is one status change of a payment.
type TimelineEvent struct {
	From, To    string
	Actor       string
	Reason      string // in words
	GatewayCode *int
	AdminEmail  string
	At          time.Time
}

// GatewayCallView is one recorded attempt at a gateway operation.
type GatewayCallView struct {
	Operation   string
	Attempt     int
	StartedAt   time.Time
	DurationMS  int64
	HTTPStatus  int
	GatewayCode int
	Outcome     string
}

// LedgerRow is one movement of a wallet.
type LedgerRow struct {
	AmountRials     int64
	BalanceAfter    int64
	Kind            string
	PaymentPublicID string
	CreatedAt       time.Time
}

// ConsoleUser is a user with their wallet.
type ConsoleUser struct {
	ID           int64
	Email        string
	Role         string
	CreatedAt    time.Time
	BalanceRials int64
}

// UserListView is GET /admin/users.
type UserListView struct {
	Query string
	Users []ConsoleUser
}

// UserDetailView is GET /admin/users/{id}.
type UserDetailView struct {
	User        ConsoleUser
	Ledger      []LedgerRow
	Payments    []ConsolePaymentRow
	PaymentsURL string // the full list of their payments
}

// AuditRow is one entry of the audit log.
type AuditRow struct {
	At              time.Time
	AdminEmail      string
	Action          string
	Result          string
	PaymentPublicID string
	TargetUserID    int64
	From, To        string
	Note            string
}

// AuditView is GET /admin/audit.
type AuditView struct {
	Admin, Payment string // the filter, as typed
	Rows           []AuditRow
	NextURL        string
}

// arrow points from one status to the next in the reading direction.
func arrow(p Page) string {
	if p.Lang.Dir() == "rtl" {
		return " ← "
	}
	return " → "
}

// TOr translates key, or gives fallback when the catalog has no such key
// (an action or actor this build does not know yet).
func (p Page) TOr(key, fallback string) string {
	if i18n.Has(p.Lang, key) {
		return p.T(key)
	}
	return fallback
}

// reconcileNote is the note an admin's reconciliation run leaves in the
// audit log (web's adminReconcile writes it; stored rows keep it).
var reconcileNote = regexp.MustCompile(`^listed (\d+), credited (\d+), mismatches (\d+)$`)

// auditNote is an audit row's note in the page's language: the note of a
// reconciliation run is counts, said in words; an admin's own note is
// shown as written.
func auditNote(p Page, r AuditRow) string {
	if r.Action == "reconcile" {
		if m := reconcileNote.FindStringSubmatch(r.Note); m != nil {
			n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
			return p.T("console.audit.reconcile_note", "listed", n(m[1]), "credited", n(m[2]), "mismatches", n(m[3]))
		}
	}
	return r.Note
}
