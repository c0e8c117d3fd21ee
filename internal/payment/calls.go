package payment

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

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
// found by its public id in the same statement (NULL when none). An
// attempt made for a check that holds back its calls (withHeldCalls) is
// kept for that check instead, which writes it with its outcome.
func (r *CallRecorder) Record(ctx context.Context, c resilient.Call) {
	if h, ok := ctx.Value(heldCallsKey{}).(*heldCalls); ok {
		h.add(c)
		return
	}
	if err := insertCalls(r.db.Gorm.WithContext(ctx), []resilient.Call{c}); err != nil {
		r.log.ErrorContext(ctx, "record gateway call", "op", c.Operation, "err", err)
	}
}

// insertCalls writes attempts to gateway_calls, each with its payment's id
// found by its public id in the same statement.
func insertCalls(db *gorm.DB, calls []resilient.Call) error {
	for _, c := range calls {
		err := db.Exec(`INSERT INTO gateway_calls
		(payment_id, gateway, operation, attempt, started_at, duration_ms, http_status, gateway_code, outcome, error)
		VALUES ((SELECT id FROM payments WHERE public_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.PaymentRef, storableText(c.Gateway, 100), storableText(c.Operation, 100), c.Attempt, c.StartedAt.UTC(),
			c.Duration.Milliseconds(), c.HTTPStatus, c.GatewayCode, storableText(c.Outcome, 100), storableText(c.Error, 500)).Error
		if err != nil {
			return fmt.Errorf("record gateway call %s: %w", c.Operation, err)
		}
	}
	return nil
}

// storableText is s as a text column always takes it: at most n bytes,
// cut at a character boundary, valid UTF-8, no NUL (which PostgreSQL's
// text refuses). A bank's garbled answer quoted in an error must not make
// the row, and so the credit it is written with, fail.
func storableText(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// heldCalls keeps the attempts of one bank check, so that they are written
// in the transaction that records the check's outcome (a credit: one
// commit fewer) rather than one commit each. A process that dies before
// that loses them with the outcome they led to, as it would lose an
// attempt it had not yet recorded.
type heldCalls struct {
	mu    sync.Mutex
	calls []resilient.Call
}

type heldCallsKey struct{}

// withHeldCalls returns a context whose gateway attempts are held in h.
func withHeldCalls(ctx context.Context) (context.Context, *heldCalls) {
	h := &heldCalls{}
	return context.WithValue(ctx, heldCallsKey{}, h), h
}

func (h *heldCalls) add(c resilient.Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

// take returns the held attempts and forgets them.
func (h *heldCalls) take() []resilient.Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.calls
	h.calls = nil
	return out
}

// writeHeld writes what h still holds on its own (the outcome was not a
// credit, or the credit's transaction did not commit).
func (s *Service) writeHeld(ctx context.Context, h *heldCalls) {
	if err := insertCalls(s.db.Gorm.WithContext(context.WithoutCancel(ctx)), h.take()); err != nil {
		s.log.ErrorContext(ctx, "record gateway calls", "err", err)
	}
}
