package withdrawal

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/testhook"
)

// Worker sends withdrawals to their provider and asks about them until
// the provider's word ends them: one lifecycle.Worker.
type Worker struct {
	s           *Service
	batch       int
	concurrency int
}

// NewWorker returns the service's worker, claiming batch withdrawals a
// round and working concurrency at once.
func (s *Service) NewWorker(batch, concurrency int) *Worker {
	return &Worker{s: s, batch: max(batch, 1), concurrency: max(concurrency, 1)}
}

var _ lifecycle.Worker = (*Worker)(nil)

// RunOnce is one round.
func (w *Worker) RunOnce(ctx context.Context) (lifecycle.RoundResult, error) {
	return lifecycle.Round(ctx, w, w.concurrency, w.s.cfg.LeaseDuration)
}

// Claim implements lifecycle.Worker.
func (w *Worker) Claim(ctx context.Context) ([]int64, error) {
	now := w.s.clock()
	return w.s.st.ClaimDue(ctx, DueClaim{Now: now, Until: now.Add(w.s.cfg.LeaseDuration), Batch: w.batch})
}

// Unclaim implements lifecycle.Worker.
func (w *Worker) Unclaim(ids []int64) {
	if err := w.s.st.Unclaim(context.Background(), ids, w.s.clock()); err != nil {
		w.s.log.Error("withdrawal worker: give back claimed withdrawals", "err", err)
	}
}

// Failed implements lifecycle.Worker: the withdrawal is due again when
// its claim runs out.
func (w *Worker) Failed(ctx context.Context, id int64, err error) {
	w.s.log.ErrorContext(ctx, "withdrawal worker: resolve failed", "id", id, "err", err)
}

// Resolve implements lifecycle.Worker: one withdrawal's next step.
func (w *Worker) Resolve(ctx context.Context, id int64) (bool, error) {
	return w.s.Resolve(ctx, id, ActorWorker)
}

// Resolve works one withdrawal as the worker does: sends one that is to
// be sent, asks about one whose outcome is open, ends one the provider's
// word ends. It takes the lease first (false, nil: another actor holds
// it). ended reports that it reached an ended status.
func (s *Service) Resolve(ctx context.Context, id int64, actor Actor) (ended bool, err error) {
	w, err := s.st.Get(ctx, id)
	if err != nil {
		return false, err
	}
	if w.Status == StatusRequested && w.ReviewRequired {
		return false, nil // waits for an admin; never due
	}
	now := s.clock()
	tok := lifecycle.NewLeaseToken()
	w, ok, err := s.st.Claim(ctx, Claim{ID: id, Statuses: []Status{w.Status}, Token: tok, Now: now, Until: now.Add(s.cfg.LeaseDuration)})
	if err != nil || !ok {
		return false, err
	}
	offer, known := s.offer(w.Provider)
	switch {
	case w.Status.Ended() || (w.Status == StatusPaid && !s.watching(w, offer, known, now)):
		_, err := s.st.Update(ctx, w.ID, tok, Fields{ClearNext: true}, false)
		return w.Status.Ended(), err
	case !known:
		// Its provider is no longer offered: nobody can ask; an
		// operator must configure it again. A submit whose outcome is
		// unknown (or never taken, or last said in progress) for as
		// long as the known path allows goes to a person, as there: its
		// money stays held (no answer of a provider that cannot be
		// asked ever releases it).
		s.log.ErrorContext(ctx, "withdrawal of a provider no longer configured", "withdrawal", w.PublicID, "provider", w.Provider)
		if d := s.decideUnoffered(w, now); d.To != "" {
			w, err = s.apply(ctx, w, tok, offer, actor, d, false)
			return w.Status.Ended(), err
		}
		next := now.Add(s.cfg.MaxBackoff)
		_, err := s.st.Update(ctx, w.ID, tok, Fields{NextCheckAt: &next}, false)
		return false, err
	case payout.Down(offer.Provider):
		// Its breaker is open: ask later, spending no call.
		next := now.Add(s.backoff(w.Checks + 1))
		_, err := s.st.Update(ctx, w.ID, tok, Fields{NextCheckAt: &next}, false)
		return false, err
	}
	switch {
	case w.Status == StatusSubmitted && w.ProviderState == ProviderNotTaken:
		if d := DecideNotTaken(w, s.policy(offer), now); d.To != "" {
			w, err = s.apply(ctx, w, tok, offer, actor, d, false)
		} else {
			w, err = s.send(ctx, w, tok, offer, actor)
		}
	case w.Status == StatusRequested || w.Status == StatusApproved:
		w, err = s.send(ctx, w, tok, offer, actor)
	default:
		w, err = s.ask(ctx, w, tok, offer, actor)
	}
	return w.Status.Ended(), err
}

// decideUnoffered is what a withdrawal of a provider no longer offered
// calls for at now: nothing can be sent or asked, so only the moves to a
// person that the known path makes without an answer (DecideUnanswered:
// unknown or in progress too long; DecideNotTaken's review); never a
// move that releases its money.
func (s *Service) decideUnoffered(w Withdrawal, now time.Time) Decision {
	p := s.policy(Offer{})
	var d Decision
	switch {
	case w.Status != StatusSubmitted:
	case w.ProviderState == ProviderNotTaken:
		d = DecideNotTaken(w, p, now)
	default:
		d = DecideUnanswered(w, p, now)
	}
	if d.To != StatusNeedsReview {
		return Decision{}
	}
	return d
}

// The sparse tail of a paid withdrawal's watch. A payout failed by hand
// after it was transferred (Jibit's MANUALLY_FAILED: a Paya return) may
// come back weeks after it was paid, long after the dense watch
// (WatchPaid) and reconciliation's lookback (ReconcileLookback after its
// payment) have ended. So a paid withdrawal whose provider may fail it
// late is asked about, after its dense watch, about once every
// LateWatchEvery (jittered) until LateWatchHorizon after it was paid:
// a few dozen inquiries each, due through the worker's one due query
// (withdrawals_due_idx), and then never again (its next check cleared).
const (
	LateWatchEvery   = 24 * time.Hour
	LateWatchHorizon = 30 * 24 * time.Hour
)

// watching reports whether a paid withdrawal is still asked about: its
// provider may fail it by hand, and its watch (the dense one, then the
// sparse tail: watchEnd) has not run out.
func (s *Service) watching(w Withdrawal, o Offer, known bool, now time.Time) bool {
	return known && o.Caps.LateFailure && w.WatchUntil != nil && now.Before(watchEnd(w))
}

// watchEnd is when a watched paid withdrawal is no longer asked about:
// LateWatchHorizon after it was paid, or its dense watch's end when that
// is later (pure; WatchUntil set).
func watchEnd(w Withdrawal) time.Time {
	end := *w.WatchUntil
	if w.PaidAt != nil && w.PaidAt.Add(LateWatchHorizon).After(end) {
		end = w.PaidAt.Add(LateWatchHorizon)
	}
	return end
}

// nextPaidCheck is when a watched paid withdrawal (watching at now) is
// asked next: at the worker's back-off during its dense watch, then
// every LateWatchEvery, jittered as the back-off is; false: not again
// (the next would fall after its watch's end).
func (s *Service) nextPaidCheck(w Withdrawal, now time.Time) (time.Time, bool) {
	if now.Before(*w.WatchUntil) {
		return now.Add(s.backoff(w.Checks + 1)), true
	}
	j := 0.5
	if s.cfg.Jitter != nil {
		j = s.cfg.Jitter()
	}
	// In [3/4, 5/4) of LateWatchEvery: spread, about daily.
	next := now.Add(LateWatchEvery*3/4 + time.Duration(j*float64(LateWatchEvery/2)))
	return next, next.Before(watchEnd(w))
}

// backoff is the delay before check n.
func (s *Service) backoff(n int) time.Duration {
	j := 0.5
	if s.cfg.Jitter != nil {
		j = s.cfg.Jitter()
	}
	return lifecycle.Backoff(n, s.cfg.BaseBackoff, s.cfg.MaxBackoff, j)
}

// send hands w to its provider under the lease tok: first the intent is
// written (the move to submitted, or, sending again, the outcome made
// unknown again), then the provider is called, then its answer applied.
func (s *Service) send(ctx context.Context, w Withdrawal, tok string, o Offer, actor Actor) (Withdrawal, error) {
	now := s.clock()
	unknown := ProviderUnknown
	// Sending again while an earlier submit's outcome is unknown: that
	// one may still be paid, so this one's refusal decides nothing
	// (DecideSubmit), and the time it has been unknown keeps counting.
	resend := w.Status == StatusSubmitted && w.ProviderState == ProviderUnknown
	f := Fields{ProviderState: &unknown, CountSubmit: true}
	if !resend || w.UnknownSince == nil {
		f.UnknownSince = &now
	}
	var err error
	if w.Status == StatusSubmitted {
		w, err = s.st.Update(ctx, w.ID, tok, f, true)
	} else {
		f.SubmittedAt = &now
		w, err = s.move(ctx, w, Move{From: w.Status, To: StatusSubmitted, Actor: actor, Reason: ReasonSubmitting, Lease: tok, KeepLease: true, Now: now, Fields: f})
	}
	if err != nil {
		return w, err
	}
	res, serr := o.Provider.Submit(resilient.WithRef(ctx, w.PublicID), payout.Order{ID: w.PublicID, AmountRials: w.AmountRials,
		Sheba: w.Sheba, Rail: railOf(w.Rail), Description: "Kifpool " + w.PublicID})
	if serr == nil {
		testhook.At(testhook.AfterPayoutAccepted)
	} else {
		s.log.WarnContext(ctx, "payout submit", "withdrawal", w.PublicID, "provider", w.Provider, "err", serr)
	}
	return s.apply(ctx, w, tok, o, actor, DecideSubmit(res, serr, resend), false)
}

// policy is what o's decisions depend on besides the provider's answer.
func (s *Service) policy(o Offer) Policy {
	return Policy{IdempotentSubmit: o.Caps.IdempotentSubmit, UnknownReviewAfter: s.cfg.UnknownReviewAfter,
		InProgressReviewAfter: s.cfg.InProgressReviewAfter}
}

// ask asks the provider where w stands, under the lease tok, and applies
// its word.
func (s *Service) ask(ctx context.Context, w Withdrawal, tok string, o Offer, actor Actor) (Withdrawal, error) {
	st, err := o.Provider.Status(resilient.WithRef(ctx, w.PublicID), w.PublicID)
	now := s.clock()
	if err != nil {
		s.log.WarnContext(ctx, "payout status unknown", "withdrawal", w.PublicID, "provider", w.Provider, "err", err)
		if d := DecideUnanswered(w, s.policy(o), now); d.To != "" {
			return s.apply(ctx, w, tok, o, actor, d, true)
		}
		f := Fields{CountCheck: true, LastCheckedAt: &now}
		next, again := now.Add(s.backoff(w.Checks+1)), true
		if w.Status == StatusPaid && w.WatchUntil != nil {
			// Paid: asked again at its watch's pace (the sparse tail's
			// day), not an in-flight payout's.
			next, again = s.nextPaidCheck(w, now)
		}
		if again {
			f.NextCheckAt = &next
		} else {
			f.ClearNext = true
		}
		return s.st.Update(ctx, w.ID, tok, f, false)
	}
	d := DecideStatus(w, st, s.policy(o), now)
	if d.Resubmit {
		return s.send(ctx, w, tok, o, actor)
	}
	return s.apply(ctx, w, tok, o, actor, d, true)
}

// apply writes a decision under the lease tok: a move (and its second,
// a payout found returned), or the fields and the next check.
func (s *Service) apply(ctx context.Context, w Withdrawal, tok string, o Offer, actor Actor, d Decision, checked bool) (Withdrawal, error) {
	now := s.clock()
	f := decisionFields(d, checked, now)
	if d.Anomaly != "" {
		s.log.ErrorContext(ctx, "payout provider contradicts our record", "withdrawal", w.PublicID, "status", w.Status,
			"provider", w.Provider, "anomaly", d.Anomaly)
	}
	if d.To == "" {
		switch {
		case w.Status == StatusPaid && !s.watching(w, o, true, now):
			f.ClearNext = true
		case w.Status == StatusPaid:
			if next, ok := s.nextPaidCheck(w, now); ok {
				f.NextCheckAt = &next
			} else {
				f.ClearNext = true
			}
		case w.Status == StatusNeedsReview:
			next := now.Add(s.cfg.MaxBackoff)
			f.NextCheckAt = &next
		default:
			next := now.Add(s.backoff(w.Checks + 1))
			f.NextCheckAt = &next
		}
		return s.st.Update(ctx, w.ID, tok, f, false)
	}
	if d.To == StatusPaid {
		testhook.At(testhook.AfterPayoutTransferred)
		s.watchPaid(o, true, now, &f)
	} else {
		f.ClearNext = true
	}
	if d.To == StatusNeedsReview {
		next := now.Add(s.cfg.MaxBackoff)
		f.ClearNext, f.NextCheckAt = false, &next
	}
	moved, err := s.move(ctx, w, Move{From: w.Status, To: d.To, Actor: actor, Reason: d.Reason, Lease: tok, KeepLease: d.Then != "", Now: now, Fields: f})
	if err != nil || d.Then == "" {
		return moved, err
	}
	return s.move(ctx, moved, Move{From: moved.Status, To: d.Then, Actor: actor, Reason: ReasonReturned, Lease: tok, Now: now,
		Fields: Fields{ClearNext: true}})
}

// decisionFields are the fields d writes at now, with the check counted
// when checked: the provider's word and its reference.
func decisionFields(d Decision, checked bool, now time.Time) Fields {
	f := Fields{}
	if checked {
		f.CountCheck, f.LastCheckedAt = true, &now
	}
	if d.State != "" {
		f.ProviderState = &d.State
		if d.State != ProviderUnknown {
			f.ClearUnknown = true
		}
	}
	if d.Ref != "" {
		f.ProviderRef = &d.Ref
	}
	if d.Lost {
		// Since when it has not known a payout it had: the store keeps
		// the first time while the word is the same (the count goes on;
		// another word starts it again), and the word it heard last.
		f.UnknownSince, f.Contradiction = &now, d.Contradiction
	}
	return f
}

// watchPaid sets f for a move to paid at now: watched for
// WatchPaid when provider o may fail a payout by hand after it paid it,
// else never asked again.
func (s *Service) watchPaid(o Offer, known bool, now time.Time, f *Fields) {
	if known && o.Caps.LateFailure {
		watch, next := now.Add(s.cfg.WatchPaid), now.Add(s.backoff(1))
		f.WatchUntil, f.NextCheckAt, f.ClearNext = &watch, &next, false
		return
	}
	f.ClearNext = true
}

// railOf is a stored rail.
func railOf(s string) rail.Rail { return rail.Rail(s) }
