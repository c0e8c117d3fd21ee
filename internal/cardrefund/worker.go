package cardrefund

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/lifecycle"
)

// Worker is the card refunds' side of a lifecycle round: every instance's
// loop claims the due ones (held ones whose sender died before sending,
// submitted ones whose outcome is unknown) and resolves each once.
type Worker struct{ s *Service }

// Worker returns the service's worker.
func (s *Service) Worker() *Worker { return &Worker{s: s} }

var _ lifecycle.Worker = (*Worker)(nil)

// Claim implements lifecycle.Worker: the due card refunds, their next
// check pushed a lease ahead.
func (w *Worker) Claim(ctx context.Context) ([]int64, error) {
	now := w.s.d.Now()
	return w.s.d.Store.ClaimDue(ctx, now, now.Add(w.s.cfg.Lease), w.s.cfg.Batch)
}

// Unclaim implements lifecycle.Worker.
func (w *Worker) Unclaim(ids []int64) {
	if err := w.s.d.Store.Unclaim(context.Background(), ids, w.s.d.Now()); err != nil {
		w.s.d.Log.Error("card refunds: give back claims", "err", err)
	}
}

// Resolve implements lifecycle.Worker.
func (w *Worker) Resolve(ctx context.Context, id int64) (bool, error) { return w.s.Resolve(ctx, id) }

// Failed implements lifecycle.Worker: the card refund is tried again at
// its next check (the claim pushed it).
func (w *Worker) Failed(ctx context.Context, id int64, err error) {
	w.s.d.Log.ErrorContext(ctx, "card refund: resolve", "id", id, "err", err)
}

// Tick is one round, for the instance's loop.
func (w *Worker) Tick(ctx context.Context) {
	if _, err := w.Round(ctx); err != nil && ctx.Err() == nil {
		w.s.d.Log.ErrorContext(ctx, "card refunds: worker round", "err", err)
	}
}

// Round is one round: claim, resolve, report.
func (w *Worker) Round(ctx context.Context) (lifecycle.RoundResult, error) {
	return lifecycle.Round(ctx, w, w.s.cfg.Concurrency, 2*w.s.cfg.Lease+10*time.Second)
}
