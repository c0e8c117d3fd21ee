package topup

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// GatewayCall is one recorded attempt at a gateway operation (append-only
// audit). It never holds secrets or full card numbers: errors are scrubbed
// by the caller before they get here.
type GatewayCall struct {
	ID          int64
	TopUpID     *int64
	Gateway     string
	Operation   string
	Attempt     int
	StartedAt   time.Time
	DurationMS  int64
	HTTPStatus  int
	GatewayCode int
	Outcome     string
	Error       string
}

// CallRecorder writes every gateway attempt to gateway_calls.
type CallRecorder struct {
	st  Store
	log *slog.Logger
}

// NewCallRecorder returns a recorder into the store.
func NewCallRecorder(st Store, log *slog.Logger) *CallRecorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &CallRecorder{st: st, log: log}
}

// Record implements resilient.Recorder: one append, with the payment
// found by its public id (none when there is no such payment). An attempt
// made for a check that holds back its calls (withHeldCalls) is kept for
// that check instead, which writes it with its outcome.
func (r *CallRecorder) Record(ctx context.Context, c resilient.Call) {
	if h, ok := ctx.Value(heldCallsKey{}).(*heldCalls); ok {
		h.add(c)
		return
	}
	if err := r.st.RecordCalls(ctx, []resilient.Call{c}); err != nil {
		r.log.ErrorContext(ctx, "record gateway call", "op", c.Operation, "err", err)
	}
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
	if err := s.st.RecordCalls(context.WithoutCancel(ctx), h.take()); err != nil {
		s.log.ErrorContext(ctx, "record gateway calls", "err", err)
	}
}
