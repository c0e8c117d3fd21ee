// Package metrics exposes Kifpool's Prometheus metrics (client_golang):
// HTTP request durations by route pattern, gateway call durations, payment
// transitions and credited rials (counted as they happen, through
// topup.Observer and the gateway call recorder), and, read when scraped,
// payments by status, each gateway's breaker state, the worker's
// backlog and lag, each payout provider's newest reconciliation, the
// webhook and mail queues (each source with its own timeout, its failures
// counted in kifpool_metrics_source_errors_total).
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/topup"
)

// Sources are read at every scrape. Any may be nil.
type Sources struct {
	// StatusCounts counts payments by status.
	StatusCounts func(ctx context.Context) (map[string]int64, error)
	// Breakers report each gateway's circuit breaker.
	Breakers func() []resilient.BreakerState
	// Loops are the instance's background loops started, each with when
	// it last ran to its end (its start until then).
	Loops func() []Loop
	// Backlog is the worker's queue: payments due, and how long the oldest
	// has waited past its time.
	Backlog func(ctx context.Context) (due int64, lag time.Duration, err error)
	// Gateways are the configured gateways: their counters are exported
	// at 0 from the start, so that an alert's increase() sees the first
	// failure (a series born at 1 shows no increase).
	Gateways []string
	// Reconciles is each gateway's newest stored reconciliation: when it
	// finished (zero: never), and whether it ended in an error.
	Reconciles func(ctx context.Context) ([]Reconcile, error)
	// Webhooks is the partners' outbox (Outbox).
	Webhooks func(ctx context.Context) (Outbox, error)
	// PayoutReconciles is each payout provider's newest reconciliation
	// (none while withdrawals are off).
	PayoutReconciles func(ctx context.Context) ([]PayoutReconcile, error)
	// Replica is the read database of DATABASE_READ_URL (nil: none):
	// whether it answers, how long ago it replayed the newest
	// transaction while behind, and the WAL bytes it is behind (-1
	// unknown).
	Replica func(ctx context.Context) (up bool, lag time.Duration, lagBytes int64)
	// AwaitingAdmin is what waits for an admin's decision, by kind
	// (AwaitingKinds), each with the money or the account it holds up.
	AwaitingAdmin func(ctx context.Context) ([]Awaiting, error)
	// Mail is the outgoing mail queue: mails queued (not yet sent, failed
	// or expired), and how long the one due longest has waited past its
	// attempt time (zero: none due).
	Mail func(ctx context.Context) (queued int64, overdue time.Duration, err error)
	Log  *slog.Logger
	// Timeout bounds each source's read at a scrape, every source on its
	// own (0: SourceTimeout).
	Timeout time.Duration
}

// SourceTimeout is how long each source read at a scrape may take.
const SourceTimeout = 3 * time.Second

// Source names of kifpool_metrics_source_errors_total: the sources read
// at a scrape that can fail.
const (
	SourceStatusCounts     = "topups"
	SourceBacklog          = "worker_backlog"
	SourceReconciles       = "reconciles"
	SourceWebhooks         = "webhooks"
	SourcePayoutReconciles = "payout_reconciles"
	SourceAwaitingAdmin    = "awaiting_admin"
	SourceMail             = "mail"
)

// SourceNames are the sources of kifpool_metrics_source_errors_total, its
// whole label set (each exported at 0 from the start).
var SourceNames = []string{SourceStatusCounts, SourceBacklog, SourceReconciles, SourceWebhooks,
	SourcePayoutReconciles, SourceAwaitingAdmin, SourceMail}

// Loop is one of an instance's background loops: its name, its period
// and when a run of it last ended (its start until its first run ends).
type Loop struct {
	Name     string
	Interval time.Duration
	LastRun  time.Time
}

// Outbox is the partners' webhook outbox at a scrape.
type Outbox struct {
	// Pending deliveries, and the age of the oldest (zero: none).
	Pending   int64
	OldestAge time.Duration
	// Overdue is how long the delivery due longest has waited past its
	// attempt time (zero: none due): the sender not running, not a
	// partner's endpoint in its backoff.
	Overdue time.Duration
	// Failed deliveries (gave up, or their endpoint disabled), and
	// endpoints marked failing.
	Failed, FailingEndpoints int64
}

// Awaiting is one kind of thing waiting for an admin: how many, and
// since when the one waiting longest has waited (zero: none).
type Awaiting struct {
	Kind   string
	Count  int64
	Oldest time.Time
}

// AwaitingKinds are the kinds of kifpool_awaiting_admin: withdrawals to
// approve or under review, bank accounts (Shebas) to verify, card refunds
// under review. Top-ups under review are kifpool_topups{status="needs_review"}.
var AwaitingKinds = []string{"withdrawal", "bank_account", "card_refund"}

// Reconcile is one gateway's newest reconciliation: when it finished
// (zero: never) and whether it ended in an error.
type Reconcile struct {
	Gateway  string
	Finished time.Time
	Failed   bool
}

// PayoutReconcile is one payout provider's newest reconciliation: when it
// finished, whether it ended in an error, and the differences it flagged
// for an admin (still open: every run compares the last days again).
type PayoutReconcile struct {
	Provider    string
	Finished    time.Time
	Failed      bool
	Differences int
}

// Metrics holds the app's metrics in its own registry (no global state).
type Metrics struct {
	reg         *prometheus.Registry
	http        *prometheus.HistogramVec
	gateway     *prometheus.HistogramVec
	transitions *prometheus.CounterVec
	credited    *prometheus.CounterVec
	creditFails *prometheus.CounterVec
	outboxFails *prometheus.CounterVec
	hookTries   *prometheus.CounterVec
	hookTime    prometheus.Histogram
	hookGaveUp  prometheus.Counter
	charges     *prometheus.CounterVec
	chargePaid  prometheus.Counter
	refunded    prometheus.Counter
	refundSizes prometheus.Histogram
	srcErrors   *prometheus.CounterVec
}

// BreakerStates are the states a breaker reports.
var BreakerStates = []string{"closed", "half-open", "open"}

// New registers every metric; src feeds the gauges read at scrape time.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.http = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kifpool_http_request_duration_seconds", Help: "HTTP requests by route pattern, method and status.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
	}, []string{"route", "method", "status"})
	m.gateway = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kifpool_gateway_call_duration_seconds", Help: "Attempts at gateway operations by gateway, operation and outcome.",
		Buckets: []float64{.025, .05, .1, .25, .5, 1, 2, 3, 5, 10, 15},
	}, []string{"gateway", "operation", "outcome"})
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_topup_transitions_total", Help: "Top-up status changes by gateway, from, to and actor.",
	}, []string{"gateway", "from", "to", "actor"})
	m.credited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_credited_rials_total", Help: "Rials credited to wallets, by the gateway that took them.",
	}, []string{"gateway"})
	m.creditFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_credit_failures_total",
		Help: "Credits of bank-verified payments that failed (rolled back), by gateway and what followed: retry, or needs_review after repeated failures.",
	}, []string{"gateway", "then"})
	m.outboxFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_webhook_outbox_failures_total",
		Help: "Payment moves (credits among them) rolled back because the partners' webhook outbox refused their event, by gateway: our database, not the bank.",
	}, []string{"gateway"})
	m.hookTries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_webhook_attempts_total", Help: "Webhook delivery attempts by result: delivered (2xx within the timeout) or failed.",
	}, []string{"result"})
	m.hookTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kifpool_webhook_attempt_duration_seconds", Help: "Webhook delivery attempts, request to answer.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	m.hookGaveUp = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kifpool_webhook_gave_up_total", Help: "Webhook deliveries that gave up after the retry window (WEBHOOK_RETRY_FOR); their endpoint is marked failing.",
	})
	m.charges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_charge_moves_total",
		Help: "Committed charge moves by move (created, confirmed, captured, canceled, expired, refunded) and actor (merchant, payer, worker, admin); replays are not counted.",
	}, []string{"move", "actor"})
	m.chargePaid = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kifpool_charge_paid_rials_total", Help: "Rials charges took from payers to merchants: automatic confirms and captures.",
	})
	m.refunded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kifpool_charge_refunded_rials_total", Help: "Rials merchants refunded to payers.",
	})
	m.refundSizes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "kifpool_charge_refund_amount_rials", Help: "Refunds by amount in rials.",
		Buckets: []float64{1e4, 1e5, 1e6, 1e7, 1e8, 1e9},
	})
	m.srcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kifpool_metrics_source_errors_total",
		Help: "Scrapes at which a source of the gauges read at scrape time failed or timed out (its gauges missing from that scrape, the others there), by source.",
	}, []string{"source"})
	for _, name := range SourceNames {
		m.srcErrors.WithLabelValues(name)
	}
	// Every series an alert counts the increase of exists from the start,
	// at 0.
	for _, gw := range src.Gateways {
		m.credited.WithLabelValues(gw)
		m.creditFails.WithLabelValues(gw, "retry")
		m.creditFails.WithLabelValues(gw, "needs_review")
		m.outboxFails.WithLabelValues(gw)
	}
	m.hookTries.WithLabelValues("delivered")
	m.hookTries.WithLabelValues("failed")
	m.reg.MustRegister(m.http, m.gateway, m.transitions, m.credited, m.creditFails, m.outboxFails, m.hookTries, m.hookTime, m.hookGaveUp,
		m.charges, m.chargePaid, m.refunded, m.refundSizes, m.srcErrors, &scraped{src: src, errors: m.srcErrors},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveHTTP records one answered request.
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	m.http.WithLabelValues(route, method, itoa(status)).Observe(d.Seconds())
}

// Transitioned implements topup.Observer.
func (m *Metrics) Transitioned(gateway string, from, to topup.Status, actor topup.Actor) {
	m.transitions.WithLabelValues(gateway, string(from), string(to), string(actor)).Inc()
}

// Credited implements topup.Observer.
func (m *Metrics) Credited(gateway string, amountRials int64) {
	if amountRials > 0 {
		m.credited.WithLabelValues(gateway).Add(float64(amountRials))
	}
}

// CreditFailed implements topup.Observer.
func (m *Metrics) CreditFailed(gateway string, escalated bool) {
	then := "retry"
	if escalated {
		then = "needs_review"
	}
	m.creditFails.WithLabelValues(gateway, then).Inc()
}

// OutboxFailed implements topup.OutboxObserver.
func (m *Metrics) OutboxFailed(gateway string) {
	m.outboxFails.WithLabelValues(gateway).Inc()
}

// WebhookAttempt implements webhook.Observer.
func (m *Metrics) WebhookAttempt(ok bool, d time.Duration) {
	result := "failed"
	if ok {
		result = "delivered"
	}
	m.hookTries.WithLabelValues(result).Inc()
	m.hookTime.Observe(d.Seconds())
}

// WebhookGaveUp implements webhook.Observer.
func (m *Metrics) WebhookGaveUp() { m.hookGaveUp.Inc() }

// ChargeMoved implements charge.Observer.
func (m *Metrics) ChargeMoved(move charge.ObservedMove, actor charge.Actor, rials int64) {
	m.charges.WithLabelValues(string(move), string(actor)).Inc()
	if rials <= 0 {
		return
	}
	if move == charge.MoveRefunded {
		m.refunded.Add(float64(rials))
		m.refundSizes.Observe(float64(rials))
		return
	}
	m.chargePaid.Add(float64(rials))
}

// Recorder wraps a gateway call recorder: every attempt is also observed.
func (m *Metrics) Recorder(next resilient.Recorder) resilient.Recorder {
	return recorder{m: m, next: next}
}

type recorder struct {
	m    *Metrics
	next resilient.Recorder
}

func (r recorder) Record(ctx context.Context, c resilient.Call) {
	r.m.gateway.WithLabelValues(c.Gateway, c.Operation, c.Outcome).Observe(c.Duration.Seconds())
	if r.next != nil {
		r.next.Record(ctx, c)
	}
}

var (
	topUpsDesc  = prometheus.NewDesc("kifpool_topups", "Top-ups by status: exact up to 1,000 per status, PostgreSQL's planner estimate above that (as the admin dashboard's totals).", []string{"status"}, nil)
	breakerDesc = prometheus.NewDesc("kifpool_gateway_breaker_state", "1 for the state each gateway's circuit breaker is in, 0 for the others.",
		[]string{"gateway", "state"}, nil)
	breakerRatio = prometheus.NewDesc("kifpool_gateway_breaker_window_failure_ratio", "Failed share of the calls in the breaker's current window.",
		[]string{"gateway"}, nil)
	breakerOpen = prometheus.NewDesc("kifpool_gateway_breaker_open", "1 when the gateway's circuit breaker refuses calls, 0.5 half-open, 0 closed.",
		[]string{"gateway"}, nil)
	backlogDesc = prometheus.NewDesc("kifpool_worker_backlog", "Open payments due for a check by the worker.", nil, nil)
	lagDesc     = prometheus.NewDesc("kifpool_worker_lag_seconds", "How long the oldest due payment has waited past its check time.", nil, nil)
	reconDesc   = prometheus.NewDesc("kifpool_reconcile_last_finished_timestamp_seconds",
		"Unix time the gateway's newest stored reconciliation finished (by any instance or kifpool reconcile); 0 if none ever ran.", []string{"gateway"}, nil)
	reconErrDesc = prometheus.NewDesc("kifpool_reconcile_last_failed", "1 if the gateway's newest stored reconciliation ended in an error.", []string{"gateway"}, nil)
	hookQueue    = prometheus.NewDesc("kifpool_webhook_queue_depth", "Webhook deliveries not yet delivered (pending, retrying included).", nil, nil)
	hookOldest   = prometheus.NewDesc("kifpool_webhook_oldest_pending_age_seconds", "Age of the oldest undelivered webhook event; 0 when none waits.", nil, nil)
	hookOverdue  = prometheus.NewDesc("kifpool_webhook_oldest_due_age_seconds", "How long the pending webhook delivery due longest has waited past its attempt time; 0 when none is due (one waiting out its endpoint's backoff is not due).", nil, nil)
	hookFailed   = prometheus.NewDesc("kifpool_webhook_failed_deliveries", "Webhook deliveries that gave up (or whose endpoint was disabled), still stored.", nil, nil)
	hookFailing  = prometheus.NewDesc("kifpool_webhook_failing_endpoints", "Enabled webhook endpoints marked failing (a delivery gave up since their last success).", nil, nil)
	payoutDiffs  = prometheus.NewDesc("kifpool_payout_reconcile_differences",
		"Differences between our withdrawals and the payout provider's word in its newest reconciliation report, flagged for an admin and never fixed by Kifpool (0 once a run finds none).",
		[]string{"provider"}, nil)
	payoutRecon = prometheus.NewDesc("kifpool_payout_reconcile_last_finished_timestamp_seconds",
		"Unix time the payout provider's newest reconciliation finished (by any instance or kifpool reconcile); 0 for a provider never reconciled.", []string{"provider"}, nil)
	payoutReconErr = prometheus.NewDesc("kifpool_payout_reconcile_last_failed",
		"1 if the payout provider's newest reconciliation could not read the provider's list (its report says why).", []string{"provider"}, nil)
	awaitingDesc = prometheus.NewDesc("kifpool_awaiting_admin",
		"What waits for an admin's decision, by kind: withdrawal (to approve above the review threshold, or under review; its money held), bank_account (a Sheba to verify), card_refund (under review; its amount held).", []string{"kind"}, nil)
	awaitingOldest = prometheus.NewDesc("kifpool_awaiting_admin_oldest_timestamp_seconds",
		"Unix time since which the one of each kind waiting longest for an admin has waited (a withdrawal to approve: its request; one under review, a card refund: their move to review; a bank account: its addition); 0 when none waits.", []string{"kind"}, nil)
	replicaUp    = prometheus.NewDesc("kifpool_read_replica_up", "1 when the read database (DATABASE_READ_URL) answers and the pages read it, 0 when they read the primary instead.", nil, nil)
	replicaLag   = prometheus.NewDesc("kifpool_read_replica_lag_seconds", "How far the read database is behind the primary while WAL waits to be replayed (the primary's pg_stat_replication.replay_lag with one standby, else the age of its newest replayed transaction), 0 caught up.", nil, nil)
	replicaBytes = prometheus.NewDesc("kifpool_read_replica_lag_bytes", "WAL bytes between the primary's current position and the read database's replay.", nil, nil)
	loopRun      = prometheus.NewDesc("kifpool_background_last_run_timestamp_seconds",
		"Unix time a run of the instance's background loop last ended (the loop's start until its first run ends; a run that panicked is not counted).", []string{"loop"}, nil)
	loopInterval = prometheus.NewDesc("kifpool_background_interval_seconds", "The period of the instance's background loop.", []string{"loop"}, nil)
	mailQueue    = prometheus.NewDesc("kifpool_mail_queue_depth", "Outgoing mails queued: not yet sent, failed or expired (retrying ones included).", nil, nil)
	mailOverdue  = prometheus.NewDesc("kifpool_mail_oldest_due_age_seconds",
		"How long the queued mail due longest has waited past its attempt time (a mail waiting out its retry backoff is not due); 0 when none is due.", nil, nil)
)

// scraped reads the gauges from their sources at scrape time.
type scraped struct {
	src    Sources
	errors *prometheus.CounterVec
}

func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	ch <- topUpsDesc
	ch <- breakerDesc
	ch <- breakerRatio
	ch <- breakerOpen
	ch <- backlogDesc
	ch <- lagDesc
	ch <- reconDesc
	ch <- reconErrDesc
	ch <- hookQueue
	ch <- hookOldest
	ch <- hookOverdue
	ch <- hookFailed
	ch <- hookFailing
	ch <- payoutDiffs
	ch <- payoutRecon
	ch <- payoutReconErr
	ch <- replicaUp
	ch <- awaitingDesc
	ch <- awaitingOldest
	ch <- replicaLag
	ch <- replicaBytes
	ch <- mailQueue
	ch <- mailOverdue
	ch <- loopRun
	ch <- loopInterval
}

// Collect reads every source at once, each with its own timeout: a slow
// or failing one leaves its own gauges out of the scrape (its error
// logged and counted), never the others'.
func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	timeout := s.src.Timeout
	if timeout <= 0 {
		timeout = SourceTimeout
	}
	var wg sync.WaitGroup
	run := func(read func(ctx context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			read(ctx)
		}()
	}
	if s.src.StatusCounts != nil {
		run(func(ctx context.Context) {
			counts, err := s.src.StatusCounts(ctx)
			if err != nil {
				s.failed(SourceStatusCounts, "top-ups by status", err)
				return
			}
			for _, st := range []topup.Status{topup.StatusCreated, topup.StatusAwaitingPayment, topup.StatusPendingVerification,
				topup.StatusSettling, topup.StatusReversing, topup.StatusNeedsReview, topup.StatusCredited, topup.StatusFailed} {
				ch <- prometheus.MustNewConstMetric(topUpsDesc, prometheus.GaugeValue, float64(counts[string(st)]), string(st))
			}
		})
	}
	if s.src.Loops != nil {
		for _, l := range s.src.Loops() {
			name := strings.ReplaceAll(l.Name, " ", "_")
			ch <- prometheus.MustNewConstMetric(loopRun, prometheus.GaugeValue, float64(l.LastRun.UnixMilli())/1000, name)
			ch <- prometheus.MustNewConstMetric(loopInterval, prometheus.GaugeValue, l.Interval.Seconds(), name)
		}
	}
	if s.src.Breakers != nil {
		for _, b := range s.src.Breakers() {
			for _, st := range BreakerStates {
				v := 0.0
				if b.State == st {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, v, b.Name, st)
			}
			open := 0.0
			switch b.State {
			case "open":
				open = 1
			case "half-open":
				open = 0.5
			}
			ch <- prometheus.MustNewConstMetric(breakerOpen, prometheus.GaugeValue, open, b.Name)
			ratio := 0.0
			if b.Requests > 0 {
				ratio = float64(b.Failures) / float64(b.Requests)
			}
			ch <- prometheus.MustNewConstMetric(breakerRatio, prometheus.GaugeValue, ratio, b.Name)
		}
	}
	if s.src.Reconciles != nil {
		run(func(ctx context.Context) {
			reps, err := s.src.Reconciles(ctx)
			if err != nil {
				s.failed(SourceReconciles, "last reconciliations", err)
			}
			for _, r := range reps {
				v, f := 0.0, 0.0
				if !r.Finished.IsZero() {
					v = float64(r.Finished.Unix())
				}
				if r.Failed {
					f = 1
				}
				ch <- prometheus.MustNewConstMetric(reconDesc, prometheus.GaugeValue, v, r.Gateway)
				ch <- prometheus.MustNewConstMetric(reconErrDesc, prometheus.GaugeValue, f, r.Gateway)
			}
		})
	}
	if s.src.PayoutReconciles != nil {
		run(func(ctx context.Context) {
			reps, err := s.src.PayoutReconciles(ctx)
			if err != nil {
				s.failed(SourcePayoutReconciles, "payout reconciliations", err)
			}
			for _, r := range reps {
				failed := 0.0
				if r.Failed {
					failed = 1
				}
				ch <- prometheus.MustNewConstMetric(payoutDiffs, prometheus.GaugeValue, float64(r.Differences), r.Provider)
				finished := 0.0 // never
				if !r.Finished.IsZero() {
					finished = float64(r.Finished.Unix())
				}
				ch <- prometheus.MustNewConstMetric(payoutRecon, prometheus.GaugeValue, finished, r.Provider)
				ch <- prometheus.MustNewConstMetric(payoutReconErr, prometheus.GaugeValue, failed, r.Provider)
			}
		})
	}
	if s.src.AwaitingAdmin != nil {
		run(func(ctx context.Context) {
			// The kinds read are reported even when another could not be:
			// its series is missing (and its error logged), not all of them.
			waits, err := s.src.AwaitingAdmin(ctx)
			if err != nil {
				s.failed(SourceAwaitingAdmin, "what awaits an admin", err)
			}
			for _, w := range waits {
				oldest := 0.0
				if !w.Oldest.IsZero() {
					oldest = float64(w.Oldest.Unix())
				}
				ch <- prometheus.MustNewConstMetric(awaitingDesc, prometheus.GaugeValue, float64(w.Count), w.Kind)
				ch <- prometheus.MustNewConstMetric(awaitingOldest, prometheus.GaugeValue, oldest, w.Kind)
			}
		})
	}
	if s.src.Replica != nil {
		run(func(ctx context.Context) {
			up, lag, bytes := s.src.Replica(ctx)
			v := 0.0
			if up {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(replicaUp, prometheus.GaugeValue, v)
			if up {
				ch <- prometheus.MustNewConstMetric(replicaLag, prometheus.GaugeValue, lag.Seconds())
				if bytes >= 0 {
					ch <- prometheus.MustNewConstMetric(replicaBytes, prometheus.GaugeValue, float64(bytes))
				}
			}
		})
	}
	if s.src.Backlog != nil {
		run(func(ctx context.Context) {
			due, lag, err := s.src.Backlog(ctx)
			if err != nil {
				s.failed(SourceBacklog, "worker backlog", err)
				return
			}
			ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(due))
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag.Seconds())
		})
	}
	if s.src.Webhooks != nil {
		run(func(ctx context.Context) {
			o, err := s.src.Webhooks(ctx)
			if err != nil {
				s.failed(SourceWebhooks, "webhook queue", err)
				return
			}
			ch <- prometheus.MustNewConstMetric(hookQueue, prometheus.GaugeValue, float64(o.Pending))
			ch <- prometheus.MustNewConstMetric(hookOldest, prometheus.GaugeValue, o.OldestAge.Seconds())
			ch <- prometheus.MustNewConstMetric(hookOverdue, prometheus.GaugeValue, o.Overdue.Seconds())
			ch <- prometheus.MustNewConstMetric(hookFailed, prometheus.GaugeValue, float64(o.Failed))
			ch <- prometheus.MustNewConstMetric(hookFailing, prometheus.GaugeValue, float64(o.FailingEndpoints))
		})
	}
	if s.src.Mail != nil {
		run(func(ctx context.Context) {
			queued, overdue, err := s.src.Mail(ctx)
			if err != nil {
				s.failed(SourceMail, "mail queue", err)
				return
			}
			ch <- prometheus.MustNewConstMetric(mailQueue, prometheus.GaugeValue, float64(queued))
			ch <- prometheus.MustNewConstMetric(mailOverdue, prometheus.GaugeValue, max(overdue, 0).Seconds())
		})
	}
	wg.Wait()
}

// failed logs a source's error and counts it under source (one of
// SourceNames).
func (s *scraped) failed(source, what string, err error) {
	if s.errors != nil {
		s.errors.WithLabelValues(source).Inc()
	}
	s.logErr(what, err)
}

func (s *scraped) logErr(what string, err error) {
	if s.src.Log != nil {
		s.src.Log.Error("metrics: "+what, "err", err)
	}
}

func itoa(n int) string {
	if n >= 100 && n <= 599 {
		return string([]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)})
	}
	return "other"
}
