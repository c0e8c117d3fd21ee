package payment

import (
	"context"
	"log/slog"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/store"
)

// GatewayCall is one recorded attempt at a gateway operation (append-only
// audit). It never holds secrets or full card numbers: errors are scrubbed
// by the caller before they get here.
type GatewayCall struct {
	ID          int64 `gorm:"primaryKey"`
	PaymentID   *int64
	Gateway     string
	Operation   string
	Attempt     int
	StartedAt   time.Time
	DurationMS  int64 `gorm:"column:duration_ms"`
	HTTPStatus  int
	GatewayCode int
	Outcome     string
	Error       string
}

// CallRecorder writes every gateway attempt to gateway_calls.
type CallRecorder struct {
	db  *store.DB
	log *slog.Logger
}

// NewCallRecorder returns a recorder into db.
func NewCallRecorder(db *store.DB, log *slog.Logger) *CallRecorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &CallRecorder{db: db, log: log}
}

// Record implements resilient.Recorder: one INSERT, the payment's id
// found by its public id in the same statement (NULL when none).
func (r *CallRecorder) Record(ctx context.Context, c resilient.Call) {
	err := r.db.Gorm.WithContext(ctx).Exec(`INSERT INTO gateway_calls
		(payment_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome, error)
		VALUES ((SELECT id FROM payments WHERE public_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.PaymentRef, c.Gateway, c.Operation, c.Attempt, c.StartedAt.UTC(), c.Duration.Milliseconds(), c.HTTPStatus,
		c.GatewayCode, c.Outcome, truncate(c.Error, 500)).Error
	if err != nil {
		r.log.ErrorContext(ctx, "record gateway call", "op", c.Operation, "err", err)
	}
}

// CallsOf returns the recorded attempts of a payment, oldest first.
func (s *Service) CallsOf(ctx context.Context, paymentID int64) ([]GatewayCall, error) {
	var out []GatewayCall
	err := s.db.Gorm.WithContext(ctx).Where("payment_id = ?", paymentID).Order("id").Find(&out).Error
	return out, err
}
