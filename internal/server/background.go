package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/retention"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// loop is one of an instance's background loops.
type loop struct {
	name string
	lifecycle.Loop
	run func(context.Context)
}

// loopRuns is when each background loop last ran to its end, by name
// (the loop's start until its first run ends).
type loopRuns struct {
	mu   sync.Mutex
	runs map[string]metrics.Loop
}

// ran notes that the loop name, of period interval, ran at at.
func (r *loopRuns) ran(name string, interval time.Duration, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[string]metrics.Loop{}
	}
	r.runs[name] = metrics.Loop{Name: name, Interval: interval, LastRun: at}
}

// all are the loops started, by name.
func (r *loopRuns) all() []metrics.Loop {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]metrics.Loop, 0, len(r.runs))
	for _, l := range r.runs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b metrics.Loop) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// noted is l with each of its runs that ends noted in loopRuns (a
// panicked one is not), from now on: a loop stuck in a call, or
// panicking at every beat, shows in the metrics
// (kifpool_background_last_run_timestamp_seconds).
func (s *Server) noted(l loop) loop {
	run := l.run
	s.loopRuns.ran(l.name, l.Interval, s.Clock.Now())
	l.run = func(ctx context.Context) {
		run(ctx)
		s.loopRuns.ran(l.name, l.Interval, s.Clock.Now())
	}
	return l
}

// RunBackground starts the instance's background loops (loops) until ctx
// ends. The returned function waits for them to stop; in-flight work
// finishes first.
func (s *Server) RunBackground(ctx context.Context, log *slog.Logger) (wait func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var wg sync.WaitGroup
	for _, l := range s.loops(log) {
		l = s.noted(l)
		// A panic in a run is logged with its stack and the loop goes on:
		// one bad row or answer must not end the instance (its HTTP
		// too), nor every instance in turn as each claims that row.
		l.Recovered = func(v any, stack []byte) {
			log.Error("background loop panicked", "loop", l.name, "panic", fmt.Sprint(v), "stack", string(stack))
		}
		wg.Go(func() { l.Run(ctx, l.run) })
	}
	// Revocations of sessions, heard (LISTEN on PostgreSQL): while they
	// are, a looked-up session may be served from memory for a second
	// (internal/auth's session cache); not running, every request reads
	// the database.
	wg.Go(func() { s.Auth.KeepSessionCache(ctx) })
	// Revocations of API tokens, heard likewise: a looked-up token may be
	// served from memory for a second (internal/apitoken's token cache).
	wg.Go(func() { s.Tokens.KeepCache(ctx) })
	// Changes of the gateway switches, heard likewise: the switches may be
	// served from memory for a second (internal/topup/sqlstore).
	wg.Go(func() { s.KeepSwitches(ctx) })
	return func() {
		wg.Wait()
		// The tokens' last uses noted since the loop's last flush.
		if _, err := s.Tokens.FlushLastUsed(context.WithoutCancel(ctx)); err != nil {
			log.Error("note tokens' last use", "err", err)
		}
	}
}

// KeepSwitches hears changes of the operator's gateway switches until ctx
// ends (RunBackground runs it): while they are heard, the switches may be
// served from memory for a second (internal/topup/sqlstore, switches.go);
// not running, every top-up reads them.
func (s *Server) KeepSwitches(ctx context.Context) {
	s.topUpStore.KeepSwitches(ctx, store.ListenOptions{})
}

// SwitchesServing reports whether the gateway switches may be served from
// memory now.
func (s *Server) SwitchesServing() bool { return s.topUpStore.SwitchesServing() }

// mailRounds is how many times a beat of the mail loop repeats each of
// its steps while that step still finds work.
const mailRounds = 10

// ReconcileCheckEvery is how often the top-ups' reconciliation loop asks
// whether a gateway's reconciliation is due.
const ReconcileCheckEvery = time.Minute

// PayoutReconcileCheckEvery is how often the payout reconciliation loop
// asks whether a provider's reconciliation is due.
const PayoutReconcileCheckEvery = 10 * time.Minute

// loops are the background loops, each on lifecycle.Loop (the options'
// ticks): the payment worker, the card refunds' worker and the periodic
// reconciliation (each when configured), mail, webhooks (when configured), the cleanup of expired
// idempotency keys, the API tokens' noted last uses, the expiry of charges and of holds, and the hourly retention purge
// (expired sessions, quiet throttles, old calls of failed payments).
func (s *Server) loops(log *slog.Logger) []loop {
	cfg := s.Config
	every := func(d time.Duration) lifecycle.Loop { return lifecycle.Loop{Interval: d, Ticks: s.ticks} }
	var ls []loop
	if cfg.WorkerInterval > 0 {
		ls = append(ls, loop{"worker", every(cfg.WorkerInterval), s.Worker.Tick})
		// Card refunds whose outcome is unknown, or whose sender died
		// before sending: asked about, or sent, at the worker's pace.
		ls = append(ls, loop{"card refunds", every(cfg.WorkerInterval), s.CardRefunds.Worker().Tick})
	}
	if cfg.ReconcileInterval > 0 {
		// Asked every minute (at most every interval); each gateway is
		// reconciled when its newest stored report, by any instance, is
		// an interval old: the instances share one schedule.
		interval := cfg.ReconcileInterval
		l := every(min(interval, ReconcileCheckEvery))
		l.Later = true
		ls = append(ls, loop{"reconcile", l, func(ctx context.Context) {
			if _, _, err := s.TopUps.ReconcileIfDue(ctx, interval); err != nil && ctx.Err() == nil {
				log.Error("periodic reconciliation", "err", err)
			}
		}})
	}
	// Withdrawals: sent to their provider and asked about until the
	// provider's word ends them (woken by a new one or an approval), and
	// reconciled with each provider's list every day.
	if cfg.WorkerInterval > 0 && s.Withdrawals.On() {
		wl := every(cfg.WorkerInterval)
		wl.Wake = s.Withdrawals.Wake()
		ls = append(ls, loop{"withdrawals", wl, func(ctx context.Context) {
			if _, err := s.PayoutWorker.RunOnce(ctx); err != nil && ctx.Err() == nil {
				log.Error("withdrawal worker", "err", err)
			}
		}})
	}
	if cfg.Withdrawals.ReconcileInterval > 0 && s.Withdrawals.On() {
		// Asked every few minutes; each provider is reconciled when its
		// newest stored report is an interval old (a process's own timer
		// of 24 hours never fires on instances deployed daily).
		interval := cfg.Withdrawals.ReconcileInterval
		l := every(min(interval, PayoutReconcileCheckEvery))
		l.Later = true
		ls = append(ls, loop{"payout reconcile", l, func(ctx context.Context) {
			if _, err := s.Withdrawals.ReconcileIfDue(ctx, s.PayoutStore, s.TopUps, interval); err != nil && ctx.Err() == nil {
				log.Error("payout reconciliation", "err", err)
			}
		}})
	}
	// Mail: receipts and notices queued from payment events, transfers'
	// mails from the transfers, then every
	// due mail delivered (and retried), never on a request's path.
	mail := every(cfg.MailInterval)
	mail.Wake = s.Outbox.Kicks()
	ls = append(ls, loop{"mail", mail, func(ctx context.Context) {
		// Each step again while it still finds work, up to mailRounds a
		// beat: one batch a beat (200 events, 50 mails) would fall behind
		// for good under a burst (transfers bounced back and forth queue
		// two receipts each).
		steps := []struct {
			what string
			run  func(context.Context) (int, error)
		}{
			{"queue receipts and notices", s.Notifier.Scan},
			{"queue transfers' mails", s.Notifier.ScanTransfers},
			{"deliver mail", s.Outbox.DeliverDue},
		}
		for _, st := range steps {
			for range mailRounds {
				n, err := st.run(ctx)
				if err != nil && ctx.Err() == nil {
					log.Error(st.what, "err", err)
				}
				if err != nil || n == 0 || ctx.Err() != nil {
					break
				}
			}
		}
	}})
	// The read database (DATABASE_READ_URL): up or down decides where
	// the pages read; its lag is the dashboard's and the metric's.
	if s.Config.DatabaseReadURL != "" {
		ls = append(ls, loop{"read replica", every(store.ReplicaCheckEvery), s.checkReads})
	}
	// Webhooks: the outbox, delivered by every instance (claims skip what
	// another holds).
	if cfg.WebhookInterval > 0 {
		hooks := every(cfg.WebhookInterval)
		hooks.Wake = s.Hooks.Kicks()
		ls = append(ls, loop{"webhooks", hooks, s.Hooks.Tick})
	}
	return append(ls,
		// Expired idempotency keys: their own small loop (the payment
		// worker knows nothing of the API).
		loop{"idempotency keys", every(min(s.Keys.TTL()/4, 10*time.Minute)), func(ctx context.Context) {
			if n, err := s.Keys.Cleanup(ctx); err != nil && ctx.Err() == nil {
				log.Error("delete expired idempotency keys", "err", err)
			} else if n > 0 {
				log.Info("deleted expired idempotency keys", "count", n)
			}
		}},
		// The API tokens' last uses, noted in memory by the requests,
		// written here (at most LastUsedFlushEvery late).
		loop{"token last use", every(apitoken.LastUsedFlushEvery), func(ctx context.Context) {
			if _, err := s.Tokens.FlushLastUsed(ctx); err != nil && ctx.Err() == nil {
				log.Error("note tokens' last use", "err", err)
			}
		}},
		// Charges past their time: checkouts not confirmed within 30
		// minutes, authorizations past CHARGE_HOLD_HOURS (their holds
		// expired with them, by this loop only: the holds' sweep below
		// skips them).
		// A charge that cannot expire is reported and gone past: the
		// tick's rounds (one ExpirySweep) read on after it, so it neither
		// holds back nor slows the others, and the next tick tries it
		// again.
		loop{"charges", every(time.Minute), func(ctx context.Context) {
			n, err := sweepAll(ctx, sweepBatch, sweepRounds, s.Charges.ExpirySweep().ExpireDue)
			if err != nil && ctx.Err() == nil {
				log.Error("expire charges", "expired", n, "failures", len(sweepErrors(err)), "err", err)
			}
			if n > 0 {
				log.Info("expired charges", "count", n)
			}
		}},
		// Holds whose time has passed are released (expired) by every
		// instance; each ends once, whoever gets there first. The holds
		// of a charge, a withdrawal and a card refund are their owners'
		// alone (ownedHoldReasons): each ends with its owner's status,
		// never by time behind it.
		loop{"holds", every(time.Minute), func(ctx context.Context) {
			n, err := sweepAll(ctx, sweepBatch, sweepRounds, func(ctx context.Context, limit int) (int, error) {
				return s.Ledger.ExpireDue(ctx, s.Clock.Now(), limit, ownedHoldReasons()...)
			})
			if err != nil && ctx.Err() == nil {
				log.Error("expire holds", "expired", n, "failures", len(sweepErrors(err)), "err", err)
			}
			if n > 0 {
				log.Info("expired holds", "count", n)
			}
		}},
		// Retention (RETENTION_*): hourly, in every instance (the deletes
		// are idempotent and batched; instances racing delete each row
		// once).
		loop{"retention", every(time.Hour), s.retain(log)},
	)
}

// A sweep of things past their time (charges, holds) takes sweepBatch of
// them per round, and runs again at once while a round ended a whole
// batch (a backlog), up to sweepRounds rounds per tick: a backlog of
// authorizations ending together is released within the minute, not at
// a hundred a minute.
const (
	sweepBatch  = 100
	sweepRounds = 50
)

// sweepAll runs sweep(ctx, batch) round after round while a round ends a
// whole batch, up to rounds rounds or until ctx ends; it returns how many
// it ended in all, and the failures of all its rounds joined, each once.
//
// A sweep goes past the items it cannot end (reporting them in its error)
// until it has ended batch items or none is left (charge.Service's and
// ledger.Ledger's ExpireDue page on past them), so a round's error does
// not stop the tick: a round that ended a whole batch may have more behind
// it, failures or not, and the next round goes on (the charges' rounds
// after the last charge read, an ExpirySweep; the holds' from the first
// again, a failing hold tried again each round and reported once). A round
// that ends fewer than batch stops it: nothing more was due (or another
// instance ended it first, or the round's listing failed). What failed is
// left as it was, for the next tick to try again.
func sweepAll(ctx context.Context, batch, rounds int, sweep func(context.Context, int) (int, error)) (int, error) {
	total := 0
	var errs []error
	for range rounds {
		n, err := sweep(ctx, batch)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
		if n < batch || ctx.Err() != nil {
			break
		}
	}
	return total, joinOnce(errs)
}

// sweepErrors are the failures err joins (errors.Join's, flattened), or
// err alone.
func sweepErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts := j.Unwrap()
		msgs := make([]string, len(parts))
		for i, p := range parts {
			msgs[i] = p.Error()
		}
		// errors.Join's own (its text its parts' lines), not an error
		// wrapping several under a text of its own.
		if strings.Join(msgs, "\n") == err.Error() {
			var out []error
			for _, p := range parts {
				out = append(out, sweepErrors(p)...)
			}
			return out
		}
	}
	return []error{err}
}

// joinOnce joins the failures of errs, each text once (a hold that fails
// in every round is reported once a tick).
func joinOnce(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, err := range errs {
		for _, e := range sweepErrors(err) {
			if !seen[e.Error()] {
				seen[e.Error()] = true
				out = append(out, e)
			}
		}
	}
	return errors.Join(out...)
}

// retain is one retention round: the purge of RETENTION_*'s rows and of
// spent password reset links.
func (s *Server) retain(log *slog.Logger) func(context.Context) {
	cfg := s.Config
	policy := retention.Policy{ExpiredSessions: cfg.RetentionSessions, Throttles: cfg.RetentionThrottles,
		GatewayCalls: cfg.RetentionGatewayCalls, Mail: cfg.RetentionMail, Webhooks: cfg.RetentionWebhooks}
	return func(ctx context.Context) {
		res, err := retention.Purge(ctx, s.db, s.Clock.Now(), policy)
		if err != nil && ctx.Err() == nil {
			log.Error("retention", "err", err)
		}
		if res != (retention.Result{}) {
			log.Info("retention: deleted", "sessions", res.Sessions, "throttles", res.Throttles, "gateway_calls", res.GatewayCalls, "mails", res.Mails, "webhook_deliveries", res.Webhooks)
		}
		if _, err := s.Auth.PurgeResets(ctx); err != nil && ctx.Err() == nil {
			log.Error("purge password reset links", "err", err)
		}
		if _, err := s.Auth.PurgeVerifications(ctx); err != nil && ctx.Err() == nil {
			log.Error("purge address confirmation links", "err", err)
		}
	}
}

// ownedHoldReasons are the reasons of holds that only their owner's moves
// end: a charge's authorization (the charge loop expires it with the
// charge), a withdrawal's and a card refund's (money possibly already on
// its way to a bank: released only when the provider or the gateway said
// it did not move, whatever the hold's time says).
func ownedHoldReasons() []string {
	return []string{charge.HoldReason, withdrawal.HoldReason, cardrefund.HoldReason}
}
