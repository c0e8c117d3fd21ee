package server

import (
	"context"
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// observability is what an instance tells its operators beyond its logs
// (the options' logger, one component each): the Prometheus metrics of
// GET /metrics. The profiler (PPROF_ADDR) is serve's, on a listener of its
// own (cmd/kifpool).
type observability struct {
	Metrics *metrics.Metrics
}

// awaitingAdmin reads what waits for an admin, one source per kind of
// metrics.AwaitingKinds in its order (nil: that kind is off, reported
// as none).
func awaitingAdmin(ctx context.Context, sources []func(context.Context) (int64, time.Time, error)) ([]metrics.Awaiting, error) {
	out := make([]metrics.Awaiting, 0, len(metrics.AwaitingKinds))
	var errs []error
	for i, kind := range metrics.AwaitingKinds {
		if i >= len(sources) || sources[i] == nil {
			out = append(out, metrics.Awaiting{Kind: kind})
			continue
		}
		n, oldest, err := sources[i](ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, metrics.Awaiting{Kind: kind, Count: n, Oldest: oldest})
	}
	return out, errors.Join(errs...)
}

// newObservability builds the metrics, whose gauges are read at scrape
// time: the payments' totals and the worker's backlog from reads, the
// webhook queue from hooks, the breakers through breakers, each payout
// provider's newest reconciliation through payoutReports, the read
// database (DATABASE_READ_URL) through pool, and the mail queue.
func newObservability(b base, reads *topupread.Reader, pool *store.ReadPool, hooks *webhook.Service, breakers func() []resilient.BreakerState,
	payoutReports func(ctx context.Context) ([]withdrawal.Report, error), awaiting func(ctx context.Context) ([]metrics.Awaiting, error),
	loops func() []metrics.Loop) observability {
	var replica func(ctx context.Context) (up bool, lag time.Duration, lagBytes int64)
	if b.cfg.DatabaseReadURL != "" {
		// Checked at the scrape, so that the figure is the scrape's own.
		replica = func(ctx context.Context) (bool, time.Duration, int64) {
			st := pool.Check(ctx, b.now())
			return st.Up, st.Lag, st.LagBytes
		}
	}
	return observability{Metrics: metrics.New(metrics.Sources{
		// As the dashboard's totals: exact up to TotalCap per status (the
		// open ones, which alerts watch), estimated above, so that a scrape
		// costs a few index reads, not a count of every payment.
		StatusCounts: func(ctx context.Context) (map[string]int64, error) {
			tots, err := reads.Totals(ctx)
			out := make(map[string]int64, len(tots))
			for _, t := range tots {
				out[t.Status] = t.N
			}
			return out, err
		},
		Breakers: breakers,
		Loops:    loops,
		Backlog: func(ctx context.Context) (int64, time.Duration, error) {
			bl, err := reads.WorkerBacklog(ctx, b.now(), b.cfg.WorkerAbandonedAfter)
			return bl.Due, bl.Lag, err
		},
		Gateways: b.cfg.Gateways,
		// Each gateway's own: with several, one failing on every run
		// stays visible behind the others' good runs.
		Reconciles: func(ctx context.Context) ([]metrics.Reconcile, error) {
			newest, err := reads.NewestReconciles(ctx, b.cfg.Gateways)
			out := make([]metrics.Reconcile, 0, len(b.cfg.Gateways))
			for _, gw := range b.cfg.Gateways {
				r, ok := newest[gw]
				if !ok && err != nil {
					continue
				}
				out = append(out, metrics.Reconcile{Gateway: gw, Finished: r.FinishedAt, Failed: r.Error != ""})
			}
			return out, err
		},
		Webhooks: func(ctx context.Context) (metrics.Outbox, error) {
			st, err := hooks.Stats(ctx)
			return metrics.Outbox{Pending: st.Pending, OldestAge: st.OldestAge, Overdue: st.Overdue, Failed: st.Failed, FailingEndpoints: st.FailingEndpoints}, err
		},
		PayoutReconciles: func(ctx context.Context) ([]metrics.PayoutReconcile, error) {
			reps, err := payoutReports(ctx)
			out := make([]metrics.PayoutReconcile, 0, len(reps))
			for _, r := range reps {
				out = append(out, metrics.PayoutReconcile{Provider: r.Provider, Finished: r.FinishedAt, Failed: r.Error != "", Differences: r.Differences})
			}
			return out, err
		},
		Replica:       replica,
		AwaitingAdmin: awaiting,
		Mail: func(ctx context.Context) (int64, time.Duration, error) {
			q, err := mail.QueueStats(ctx, b.db, b.now())
			return q.Queued, q.Overdue, err
		},
		Log: b.log("metrics"),
	})}
}
