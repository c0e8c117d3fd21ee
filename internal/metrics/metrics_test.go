package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// healthySources reads every scrape-time source, each answering.
func healthySources() Sources {
	return Sources{
		StatusCounts: func(context.Context) (map[string]int64, error) { return map[string]int64{"needs_review": 2}, nil },
		Breakers:     func() []resilient.BreakerState { return []resilient.BreakerState{{Name: "zarinpal", State: "closed"}} },
		Backlog:      func(context.Context) (int64, time.Duration, error) { return 4, time.Minute, nil },
		Reconciles: func(context.Context) ([]Reconcile, error) {
			return []Reconcile{{Gateway: "zarinpal", Finished: time.Unix(1000, 0)}}, nil
		},
		Webhooks: func(context.Context) (Outbox, error) {
			return Outbox{Pending: 3, OldestAge: time.Minute, Overdue: time.Second, Failed: 1, FailingEndpoints: 1}, nil
		},
		PayoutReconciles: func(context.Context) ([]PayoutReconcile, error) {
			return []PayoutReconcile{{Provider: "jibit", Finished: time.Unix(2000, 0)}}, nil
		},
		Replica:       func(context.Context) (bool, time.Duration, int64) { return true, time.Second, 10 },
		AwaitingAdmin: func(context.Context) ([]Awaiting, error) { return []Awaiting{{Kind: "withdrawal", Count: 1}}, nil },
		Mail:          func(context.Context) (int64, time.Duration, error) { return 5, 2 * time.Minute, nil },
		Gateways:      []string{"zarinpal"},
	}
}

// every gauge family read at scrape time, with the source it comes from.
var gaugeSources = map[string]string{
	"kifpool_topups":                                           SourceStatusCounts,
	"kifpool_worker_backlog":                                   SourceBacklog,
	"kifpool_worker_lag_seconds":                               SourceBacklog,
	"kifpool_reconcile_last_finished_timestamp_seconds":        SourceReconciles,
	"kifpool_webhook_queue_depth":                              SourceWebhooks,
	"kifpool_webhook_oldest_pending_age_seconds":               SourceWebhooks,
	"kifpool_webhook_oldest_due_age_seconds":                   SourceWebhooks,
	"kifpool_webhook_failed_deliveries":                        SourceWebhooks,
	"kifpool_webhook_failing_endpoints":                        SourceWebhooks,
	"kifpool_payout_reconcile_last_finished_timestamp_seconds": SourcePayoutReconciles,
	"kifpool_awaiting_admin":                                   SourceAwaitingAdmin,
	"kifpool_mail_queue_depth":                                 SourceMail,
	"kifpool_mail_oldest_due_age_seconds":                      SourceMail,
	"kifpool_gateway_breaker_open":                             "",
	"kifpool_read_replica_up":                                  "",
}

// failing makes source fail (or, slow, block until its context ends).
func failing(src Sources, source string, slow bool) Sources {
	fail := func(ctx context.Context) error {
		if slow {
			<-ctx.Done()
			return ctx.Err()
		}
		return errors.New("database is down")
	}
	switch source {
	case SourceStatusCounts:
		src.StatusCounts = func(ctx context.Context) (map[string]int64, error) { return nil, fail(ctx) }
	case SourceBacklog:
		src.Backlog = func(ctx context.Context) (int64, time.Duration, error) { return 0, 0, fail(ctx) }
	case SourceReconciles:
		src.Reconciles = func(ctx context.Context) ([]Reconcile, error) { return nil, fail(ctx) }
	case SourceWebhooks:
		src.Webhooks = func(ctx context.Context) (Outbox, error) { return Outbox{}, fail(ctx) }
	case SourcePayoutReconciles:
		src.PayoutReconciles = func(ctx context.Context) ([]PayoutReconcile, error) { return nil, fail(ctx) }
	case SourceAwaitingAdmin:
		src.AwaitingAdmin = func(ctx context.Context) ([]Awaiting, error) { return nil, fail(ctx) }
	case SourceMail:
		src.Mail = func(ctx context.Context) (int64, time.Duration, error) { return 0, 0, fail(ctx) }
	}
	return src
}

// A source that fails (or times out) leaves only its own gauges out of
// the scrape: every other source's are there, and its failure is
// counted under its name.
func TestFailingSourceLeavesTheOthers(t *testing.T) {
	for _, slow := range []bool{false, true} {
		for _, bad := range SourceNames {
			name := bad
			if slow {
				name += "/slow"
			}
			t.Run(name, func(t *testing.T) {
				src := failing(healthySources(), bad, slow)
				src.Timeout = 50 * time.Millisecond
				m := New(src)
				got := families(t, m)
				for fam, from := range gaugeSources {
					if from == bad && got[fam] {
						t.Errorf("%s present though %s failed", fam, bad)
					}
					if from != bad && !got[fam] {
						t.Errorf("%s missing when only %s failed", fam, bad)
					}
				}
				for _, s := range SourceNames {
					want := 0.0
					if s == bad {
						want = 1
					}
					if v := sourceErrors(t, m, s); v != want {
						t.Errorf("kifpool_metrics_source_errors_total{source=%q} = %v, want %v", s, v, want)
					}
				}
			})
		}
	}
}

// Each source has its own timeout: sources that each take most of it
// all answer (a timeout shared by the scrape would run out).
func TestEachSourceItsOwnTimeout(t *testing.T) {
	src := healthySources()
	const wait = 60 * time.Millisecond
	src.Timeout = 100 * time.Millisecond
	slowly := func(ctx context.Context) error {
		select {
		case <-time.After(wait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	src.Backlog = func(ctx context.Context) (int64, time.Duration, error) { return 4, time.Minute, slowly(ctx) }
	src.Webhooks = func(ctx context.Context) (Outbox, error) { return Outbox{Pending: 3}, slowly(ctx) }
	src.Mail = func(ctx context.Context) (int64, time.Duration, error) { return 5, 0, slowly(ctx) }
	src.StatusCounts = func(ctx context.Context) (map[string]int64, error) { return nil, slowly(ctx) }
	got := families(t, New(src))
	for fam := range gaugeSources {
		if !got[fam] {
			t.Errorf("%s missing", fam)
		}
	}
}

// The error counter exists from the start at 0 for each source, so an
// increase() sees the first error.
func TestSourceErrorsStartAtZero(t *testing.T) {
	m := New(Sources{})
	for _, s := range SourceNames {
		if v := sourceErrors(t, m, s); v != 0 {
			t.Errorf("source %s: %v errors, want 0", s, v)
		}
	}
}

// The mail gauges carry the source's figures.
func TestMailGauges(t *testing.T) {
	m := New(healthySources())
	if v := value(t, m.reg, "kifpool_mail_queue_depth", "", ""); v != 5 {
		t.Errorf("kifpool_mail_queue_depth = %v, want 5", v)
	}
	if v := value(t, m.reg, "kifpool_mail_oldest_due_age_seconds", "", ""); v != 120 {
		t.Errorf("kifpool_mail_oldest_due_age_seconds = %v, want 120", v)
	}
}

// Each background loop's last run and period, its name with
// underscores (a label value without spaces).
func TestLoopGauges(t *testing.T) {
	src := healthySources()
	src.Loops = func() []Loop {
		return []Loop{{Name: "card refunds", Interval: 2 * time.Second, LastRun: time.Unix(1_700_000_000, 500_000_000)}}
	}
	m := New(src)
	if v := value(t, m.reg, "kifpool_background_last_run_timestamp_seconds", "loop", "card_refunds"); v != 1_700_000_000.5 {
		t.Errorf("kifpool_background_last_run_timestamp_seconds = %v, want 1700000000.5", v)
	}
	if v := value(t, m.reg, "kifpool_background_interval_seconds", "loop", "card_refunds"); v != 2 {
		t.Errorf("kifpool_background_interval_seconds = %v, want 2", v)
	}
}

// sourceErrors reads kifpool_metrics_source_errors_total{source}
// without a scrape of the sources (which would count again).
func sourceErrors(t *testing.T, m *Metrics, source string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.srcErrors)
	return value(t, reg, "kifpool_metrics_source_errors_total", "source", source)
}

// value scrapes g and returns the value of family's series whose label
// is val (label "": its only series); it fails the test when there is
// none.
func value(t *testing.T, g prometheus.Gatherer, family, label, val string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, s := range mf.GetMetric() {
			match := label == ""
			for _, l := range s.GetLabel() {
				if l.GetName() == label && l.GetValue() == val {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				return s.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", family, label, val)
	return 0
}

// families scrapes m and reports which families have a series.
func families(t *testing.T, m *Metrics) map[string]bool {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) > 0 {
			out[mf.GetName()] = true
		}
	}
	return out
}
