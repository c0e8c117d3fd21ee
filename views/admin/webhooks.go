package admin

import (
	"time"

	"github.com/kifpool/kifpool/views"
)

// WebhooksView lists every endpoint for admins, with the queue.
type WebhooksView struct {
	Notice           string
	Endpoints        []views.WebhookRow
	Pending          int64
	OldestAge        string
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
	ID            int64
	EventID       string
	Type          string
	TopUpID       string
	Status        string
	Attempts      int
	LastHTTP      string
	LatencyMS     string
	LastError     string
	CreatedAt     time.Time
	LastAttemptAt *time.Time
	NextAttemptAt *time.Time // pending only
	Resendable    bool
}
