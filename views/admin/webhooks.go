package admin

import (
	"time"

	"github.com/kifpool/kifpool/views"
)

// WebhooksView lists every endpoint for admins, with the queue.
type WebhooksView struct {
	Notice    string
	Endpoints []views.WebhookRow
	Pending   int64
	// OldestSince is when the oldest waiting delivery was queued (zero
	// when none waits).
	OldestSince      time.Time
	Failed           int64
	FailingEndpoints int64
}

// WebhookLogView is one endpoint's delivery log.
type WebhookLogView struct {
	Notice     string
	Endpoint   views.WebhookRow
	Deliveries []DeliveryRow
}

// DeliveryRow is one delivery in the log.
type DeliveryRow struct {
	ID      int64
	EventID string
	Type    string
	// Subject is the movement the event is about (its kind: topup,
	// transfer, withdrawal or charge; its public id; its admin page),
	// empty when the body names none.
	SubjectKind   string
	SubjectID     string
	SubjectURL    string
	Status        string
	Attempts      int
	LastHTTP      string
	LatencyMS     string
	LastError     string
	LastErrorKey  string // a message key for the last error Kifpool itself wrote; "" for the receiver's
	CreatedAt     time.Time
	LastAttemptAt *time.Time
	NextAttemptAt *time.Time // pending only
	Resendable    bool
}

// oldestAge says how long the oldest waiting delivery has waited, in the
// page's words ("2 min ago"); "—" when none waits.
func oldestAge(p views.Page, v WebhooksView) string {
	if v.Pending == 0 || v.OldestSince.IsZero() {
		return "—"
	}
	return p.Relative(v.OldestSince)
}
