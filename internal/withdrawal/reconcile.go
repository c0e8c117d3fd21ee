package withdrawal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/payout"
)

// Report is one payout reconciliation with one provider: what was
// compared, what it confirmed, and every difference, flagged for an
// admin and never fixed silently.
type Report struct {
	ID         int64
	Provider   string
	StartedAt  time.Time
	FinishedAt time.Time
	// Checked: our withdrawals compared; Paid and PaidRials: those both
	// sides call paid; Returned: both call returned; InFlight: submitted
	// here, in progress there; Settled: paid ones settled by this run.
	Checked, Paid, Returned, InFlight, Settled, Differences int
	PaidRials                                               int64
	// Details is a JSON array of Difference.
	Details string
	Error   string
}

// Items decodes the report's differences.
func (r Report) Items() []Difference {
	var out []Difference
	_ = json.Unmarshal([]byte(r.Details), &out)
	return out
}

// Difference is one thing the two sides disagree on.
type Difference struct {
	// Kind names it (admin.payout_diff.* in the pages).
	Kind string `json:"kind"`
	// PublicID is ours ("" for a payout of the provider's we do not know).
	PublicID    string `json:"id"`
	Ours        Status `json:"ours,omitempty"`
	Theirs      string `json:"theirs"`
	AmountRials int64  `json:"amount_rials"`
}

// The kinds of difference.
const (
	// DiffUnknownPayout: the provider lists a payout no withdrawal of
	// ours has (the list's providers only).
	DiffUnknownPayout = "unknown_payout"
	// DiffPaidNotTheirs: paid here; there in progress, failed or unknown.
	DiffPaidNotTheirs = "paid_not_theirs"
	// DiffEndedButTheirs: failed, rejected or cancelled here (the money
	// back in the wallet); there taken or transferred: a payout we do not
	// pay for.
	DiffEndedButTheirs = "ended_but_theirs"
	// DiffReturnedNotTheirs: returned here; not there.
	DiffReturnedNotTheirs = "returned_not_theirs"
	// DiffAmount: the provider holds another amount.
	DiffAmount = "amount"
	// DiffUnreached: the provider could not be asked about it.
	DiffUnreached = "unreached"
	// DiffLateReturn: paid here, failed by hand at the provider after
	// it was transferred (Jibit's MANUALLY_FAILED), first seen by
	// reconciliation (between two of the worker's asks: its sparse
	// tail asks once a day). The
	// lifecycle's own edge is taken (returned: the money back in the
	// wallet, once), and the report flags it for an admin to match with
	// the provider's statement: money came back from a payout we had
	// called paid. The next run finds both sides returned.
	DiffLateReturn = "late_return"
)

// ReconcileLookback is how far back reconciliation compares.
const ReconcileLookback = 7 * 24 * time.Hour

// Lister reads the withdrawals reconciliation compares (of a provider,
// created at or after since, every status but those never sent).
type Lister interface {
	ForReconcile(ctx context.Context, provider string, since time.Time) ([]Withdrawal, error)
}

// Reconcile compares each provider's word with our withdrawals of the
// last ReconcileLookback and stores one report per provider. Open ones
// the provider has ended are moved as the worker would (the provider's
// word, recorded with its event); paid ones the provider confirms are
// settled (payouts in flight → the provider's rail); everything else
// that disagrees is a difference for an admin, and nothing is changed
// for it.
func (s *Service) Reconcile(ctx context.Context, l Lister) ([]Report, error) {
	var out []Report
	var errs []error
	for _, o := range s.offers {
		r, err := s.reconcileOne(ctx, l, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Name, err))
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// Turns hold the reconciliations' turns (reconcile_turns, shared with
// the top-ups' gateways: topup.Service implements it): one conditional
// statement takes the turn named name when it is free at now (or has
// none yet) and holds it until next; false: another run holds it.
type Turns interface {
	ClaimReconcileTurn(ctx context.Context, name string, now, next time.Time) (bool, error)
}

// ReconcileHold is how long a payout reconciliation holds its provider's
// turn: a run gives it back when it ends, one killed half-way holds it
// until then.
const ReconcileHold = 15 * time.Minute

// TurnName is a provider's turn among the reconciliations' turns (apart
// from a gateway's of the same name).
func TurnName(provider string) string { return "payout:" + provider }

// ReconcileNow is an admin's "reconcile now": Reconcile, each provider
// only with its turn (Turns), so that a double click, a second admin, a
// retried request or the periodic run never starts a second run with a
// provider while one is still asking it. held names the providers not
// reconciled now: the first whose turn another run holds, and those
// after it.
func (s *Service) ReconcileNow(ctx context.Context, l Lister, turns Turns) (reps []Report, held []string, err error) {
	now := s.clock()
	// In the offers' order, up to the first held: two runs at once do
	// not share the providers out, one runs and the other runs none.
	claimed, held, err := s.claimTurns(ctx, turns, s.offers, now, ReconcileHold, true)
	if err != nil {
		return nil, nil, err
	}
	ctx, done := s.keepTurns(ctx, turns, claimed, now, ReconcileHold)
	defer done()
	var errs []error
	for _, o := range claimed {
		r, rerr := s.reconcileOne(ctx, l, o)
		if rerr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Name, rerr))
		}
		reps = append(reps, r)
	}
	return reps, held, errors.Join(errs...)
}

// claimTurns is lifecycle.Turns.Claim of the providers offers (turns
// nil: every one, no turns kept): those whose turn this run took, and
// the names of those another run holds.
func (s *Service) claimTurns(ctx context.Context, turns Turns, offers []Offer, now time.Time, hold time.Duration, stop bool) (claimed []Offer, held []string, err error) {
	if turns == nil {
		return offers, nil, nil
	}
	names := make([]string, len(offers))
	for i, o := range offers {
		names[i] = TurnName(o.Name)
	}
	took, heldTurns, err := s.turnsOf(turns).Claim(ctx, names, now, hold, stop)
	for _, o := range offers {
		if slices.Contains(took, TurnName(o.Name)) {
			claimed = append(claimed, o)
		}
		if slices.Contains(heldTurns, TurnName(o.Name)) {
			held = append(held, o.Name)
		}
	}
	return claimed, held, err
}

// keepTurns is lifecycle.Turns.Keep of the turns of offers, claimed at
// claimedAt for hold: the run's context, which ends when a turn could
// not be kept, and done, which gives them back.
func (s *Service) keepTurns(ctx context.Context, turns Turns, offers []Offer, claimedAt time.Time, hold time.Duration) (context.Context, func()) {
	if turns == nil {
		return ctx, func() {}
	}
	names := make([]string, len(offers))
	for i, o := range offers {
		names[i] = TurnName(o.Name)
	}
	return s.turnsOf(turns).Keep(ctx, names, claimedAt, hold)
}

// turnsOf is turns in the service's clock.
func (s *Service) turnsOf(turns Turns) lifecycle.Turns {
	return lifecycle.Turns{Store: turns, Clock: s.clock, Log: s.log}
}

// ReconcileRetry is how soon a provider whose last reconciliation ended
// in an error (its list or inquiry unreached) is tried again, when the
// interval is longer.
const ReconcileRetry = time.Hour

// ReconcileDue reports whether a provider's reconciliation is due at now
// (pure): it has no report yet, its newest started interval or more ago,
// or that one ended in an error ReconcileRetry (at most interval) ago.
func ReconcileDue(latest *Report, now time.Time, interval time.Duration) bool {
	if latest == nil {
		return true
	}
	wait := interval
	if latest.Error != "" {
		wait = min(interval, ReconcileRetry)
	}
	return !now.Before(latest.StartedAt.Add(wait))
}

// ReconcileIfDue reconciles the providers whose reconciliation is due
// (ReconcileDue of each one's newest stored report): the periodic loop's
// step. It is decided from the stored reports, not from a process's
// timer, so that instances restarted more often than the interval (a
// daily deploy, a 24-hour interval) still reconcile, and an instance
// that finds another's fresh report does not run again. Each due
// provider is run only with its turn (turns; nil: none kept), the one an
// admin's ReconcileNow takes, so that two instances, or an instance and
// an admin, never ask a provider at once; one held is left to the run
// that holds it.
func (s *Service) ReconcileIfDue(ctx context.Context, l Lister, turns Turns, interval time.Duration) ([]Report, error) {
	due, err := s.dueOffers(ctx, interval)
	if err != nil || len(due) == 0 {
		return nil, err
	}
	now := s.clock()
	// Held at most an interval, so that a run killed half-way puts the
	// next off by no more than the schedule would; a run that goes on
	// keeps it (lifecycle.Turns.Keep), however long it takes.
	hold := min(ReconcileHold, interval)
	claimed, _, err := s.claimTurns(ctx, turns, due, now, hold, false)
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	ctx, done := s.keepTurns(ctx, turns, claimed, now, hold)
	defer done()
	if turns != nil {
		// A run that ended (and gave its turn back) between the read and
		// the claim has stored its report: read again, leave what it did.
		still, err := s.dueOffers(ctx, interval)
		if err != nil {
			return nil, err
		}
		// Into a new slice: the deferred release gives back every turn
		// taken, those left to the run that ended too.
		var run []Offer
		for _, o := range claimed {
			if slices.ContainsFunc(still, func(d Offer) bool { return d.Name == o.Name }) {
				run = append(run, o)
			}
		}
		claimed = run
	}
	var out []Report
	var errs []error
	for _, o := range claimed {
		r, err := s.reconcileOne(ctx, l, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Name, err))
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// dueOffers are the offered providers whose reconciliation is due at the
// clock's now, by their newest stored reports.
func (s *Service) dueOffers(ctx context.Context, interval time.Duration) ([]Offer, error) {
	latest, err := s.st.LatestReports(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	var due []Offer
	for i, newest := range newestOfOffers(latest, s.offers) {
		if newest.StartedAt.IsZero() || ReconcileDue(&newest, now, interval) {
			due = append(due, s.offers[i])
		}
	}
	return due, nil
}

// NewestReports is each offered provider's newest stored report, in the
// offers' order; a provider never reconciled has a Report of its name
// alone (zero times), so that the metrics can say "never" rather than
// say nothing (an alert on a stale report cannot fire without one).
func (s *Service) NewestReports(ctx context.Context) ([]Report, error) {
	latest, err := s.st.LatestReports(ctx)
	if err != nil {
		return nil, err
	}
	return newestOfOffers(latest, s.offers), nil
}

// newestOfOffers picks each offer's report from latest (pure).
func newestOfOffers(latest []Report, offers []Offer) []Report {
	byName := make(map[string]Report, len(latest))
	for _, r := range latest {
		byName[r.Provider] = r
	}
	out := make([]Report, 0, len(offers))
	for _, o := range offers {
		r, ok := byName[o.Name]
		if !ok {
			r = Report{Provider: o.Name}
		}
		out = append(out, r)
	}
	return out
}

func (s *Service) reconcileOne(ctx context.Context, l Lister, o Offer) (Report, error) {
	now := s.clock()
	r := Report{Provider: o.Name, StartedAt: now}
	var diffs []Difference
	since := now.Add(-ReconcileLookback)
	ours, err := l.ForReconcile(ctx, o.Name, since)
	if err != nil {
		return r, err
	}
	theirs := map[string]payout.Listed{}
	listed := false
	if o.Caps.Reconcile == payout.ReconcileList && o.Provider.Ops().List != nil {
		// The provider lists by when it took a payout: from the earliest
		// of ours first sent, so that one taken before the lookback and
		// paid or returned within it is on its list, never "not theirs".
		from := listFrom(ours, since)
		items, lerr := o.Provider.Ops().List(ctx, from.Add(-time.Hour), now.Add(time.Minute))
		if lerr != nil {
			r.Error = lerr.Error()
		} else {
			listed = true
			for _, it := range items {
				theirs[it.ID] = it
			}
		}
	}
	known := map[string]bool{}
	for _, w := range ours {
		known[w.PublicID] = true
		var st payout.Status
		if listed {
			it, ok := theirs[w.PublicID]
			st = payout.Status{State: payout.StateNotFound}
			if ok {
				st = payout.Status{State: it.State, Raw: it.Raw, AmountRials: it.AmountRials}
			}
		} else {
			var qerr error
			st, qerr = o.Provider.Status(resilient.WithRef(ctx, w.PublicID), w.PublicID)
			if qerr != nil {
				diffs = append(diffs, Difference{Kind: DiffUnreached, PublicID: w.PublicID, Ours: w.Status, AmountRials: w.AmountRials})
				continue
			}
		}
		r.Checked++
		diffs = append(diffs, s.compare(ctx, w, st, o, &r)...)
	}
	for id, it := range theirs {
		if known[id] || (it.State != payout.StateTransferred && it.State != payout.StateInProgress && it.State != payout.StateReturned) {
			continue
		}
		// Listed by the provider's own time: one of ours sent or paid
		// before the lookback is compared all the same, never taken for a
		// payout of no withdrawal (its late return gives the money back).
		if w, err := s.st.ByPublicID(ctx, id); err == nil && w.Provider == o.Name && w.Submits > 0 {
			r.Checked++
			diffs = append(diffs, s.compare(ctx, w, payout.Status{State: it.State, Raw: it.Raw, AmountRials: it.AmountRials}, o, &r)...)
			continue
		}
		diffs = append(diffs, Difference{Kind: DiffUnknownPayout, PublicID: id, Theirs: string(it.State), AmountRials: it.AmountRials})
	}
	if diffs == nil {
		diffs = []Difference{}
	}
	b, _ := json.Marshal(diffs)
	r.Details, r.Differences, r.FinishedAt = string(b), len(diffs), s.clock()
	// Stored even when the run was stopped (its turn lost, the process
	// ending): what it found is said.
	if err := s.st.SaveReport(context.WithoutCancel(ctx), &r); err != nil {
		return r, err
	}
	if len(diffs) > 0 {
		s.log.WarnContext(ctx, "payout reconciliation: differences for an admin", "provider", o.Name, "differences", len(diffs), "report", r.ID)
	}
	return r, nil
}

// listFrom is where the provider's list must start to hold every one of
// ours: since, or the earliest first submit among them (pure).
func listFrom(ours []Withdrawal, since time.Time) time.Time {
	from := since
	for _, w := range ours {
		if w.SubmittedAt != nil && w.SubmittedAt.Before(from) {
			from = *w.SubmittedAt
		}
	}
	return from
}

// compare is one withdrawal against the provider's word.
func (s *Service) compare(ctx context.Context, w Withdrawal, st payout.Status, o Offer, r *Report) []Difference {
	d := func(kind string) []Difference {
		return []Difference{{Kind: kind, PublicID: w.PublicID, Ours: w.Status, Theirs: string(st.State), AmountRials: w.AmountRials}}
	}
	// Another amount than ours is reported; it stops nothing the
	// provider's word does to our record where that word is plain: a
	// return gives back what our wallet gave, whatever amount it names,
	// and a paid withdrawal (one an admin closed as paid on that very
	// word) is settled all the same. Elsewhere it is reported alone, and
	// the worker sends the withdrawal to a person.
	var amount []Difference
	if st.AmountRials != 0 && st.AmountRials != w.AmountRials && st.State != payout.StateNotFound {
		amount = []Difference{{Kind: DiffAmount, PublicID: w.PublicID, Ours: w.Status, Theirs: fmt.Sprintf("%s %d", st.State, st.AmountRials), AmountRials: w.AmountRials}}
		if st.State != payout.StateReturned && (w.Status != StatusPaid || st.State != payout.StateTransferred) {
			return amount
		}
	}
	switch w.Status {
	case StatusSubmitted, StatusNeedsReview:
		switch st.State {
		case payout.StateTransferred, payout.StateFailed, payout.StateReturned:
			moved, err := s.resolveWith(ctx, w, st, o)
			if err != nil {
				return d(DiffUnreached)
			}
			if moved.Status == StatusPaid {
				r.Paid++
				r.PaidRials += moved.AmountRials
				if ok, _ := s.st.Settle(ctx, moved.ID, s.clock()); ok {
					r.Settled++
				}
			}
			if moved.Status == StatusReturned {
				r.Returned++
			}
		case payout.StateInProgress:
			r.InFlight++
		}
		return amount
	case StatusPaid:
		switch st.State {
		case payout.StateTransferred:
			r.Paid++
			r.PaidRials += w.AmountRials
			if w.SettledAt == nil {
				if ok, _ := s.st.Settle(ctx, w.ID, s.clock()); ok {
					r.Settled++
				}
			}
			return amount
		case payout.StateReturned:
			// Returned whatever amount the provider names (as the worker
			// does): the money came back to the provider, and what our
			// wallet gets back is what it gave. A different amount is
			// reported beside it.
			if moved, err := s.resolveWith(ctx, w, st, o); err == nil && moved.Status == StatusReturned {
				r.Returned++
				return append(d(DiffLateReturn), amount...)
			}
			return d(DiffUnreached)
		}
		return d(DiffPaidNotTheirs)
	case StatusReturned:
		if st.State == payout.StateReturned {
			r.Returned++
			return amount
		}
		return d(DiffReturnedNotTheirs)
	case StatusFailed, StatusRejected, StatusCancelled:
		if st.State == payout.StateTransferred || st.State == payout.StateInProgress || st.State == payout.StateReturned {
			return d(DiffEndedButTheirs)
		}
	}
	return nil
}

// resolveWith applies the provider's word st to w as the worker would,
// under w's lease, as reconciliation.
func (s *Service) resolveWith(ctx context.Context, w Withdrawal, st payout.Status, o Offer) (Withdrawal, error) {
	now := s.clock()
	tok := lifecycle.NewLeaseToken()
	w, ok, err := s.st.Claim(ctx, Claim{ID: w.ID, Statuses: []Status{w.Status}, Token: tok, Now: now, Until: now.Add(s.cfg.LeaseDuration)})
	if err != nil {
		return w, err
	}
	if !ok {
		return w, ErrBusy
	}
	dec := DecideStatus(w, st, s.policy(o), now)
	dec.Resubmit = false // reconciliation never sends
	if dec.To == "" {
		_, err := s.st.Update(ctx, w.ID, tok, Fields{}, false)
		return w, err
	}
	return s.apply(ctx, w, tok, o, ActorReconcile, dec, true)
}
