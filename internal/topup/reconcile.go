package topup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/usertext"
)

// ReconcileItem is one line of a reconciliation report.
type ReconcileItem struct {
	Authority   string `json:"authority"`
	AmountRials int64  `json:"amount_rials"`
	PublicID    string `json:"payment,omitempty"`
	// Kind: credited (ours, verified and credited now, even if it had
	// failed or needed review here), already_resolved (credited here yet
	// listed as unverified), foreign (not ours), amount_mismatch, open
	// (outcome still unknown), unresolved (the bank's verify did not say
	// paid; a person looks), authority_conflict (our payment by its
	// callback URL, with another authority), not_reached (the run's budget
	// ended first), receipt_expired and no_callback (not credited, and the
	// bank's API cannot be asked about it: past the gateway's receipt
	// window, or without the callback's data; a person looks elsewhere),
	// error. ReconcileKinds lists them.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`

	creditedRials int64
}

// Kinds of a reconciliation item that the bank's API could not be asked
// about (ReconcileItem.Kind).
const (
	// KindReceiptExpired: past the gateway's receipt window (SEP keeps a
	// token's receipt one hour), the payment cannot be asked about.
	KindReceiptExpired = "receipt_expired"
	// KindNoCallback: the gateway is asked about a sale only with the
	// callback's data (Mellat's SaleReferenceId), and none came.
	KindNoCallback = "no_callback"
)

// ReconcileKinds lists every ReconcileItem.Kind (pages translate each).
func ReconcileKinds() []string {
	return []string{"credited", "already_resolved", "foreign", "amount_mismatch", "open", "unresolved",
		"authority_conflict", "not_reached", KindReceiptExpired, KindNoCallback, "error"}
}

// ReconcileReport is the stored result of one reconciliation.
type ReconcileReport struct {
	ID         int64
	Gateway    string
	StartedAt  time.Time
	FinishedAt time.Time
	Listed     int
	// Ours counts the report's lines about our own payments that were
	// looked at, in every source alike: not those not reached, nor (in
	// the bank's list) an error, whose line may not be ours.
	Ours          int
	Credited      int
	CreditedRials int64
	ForeignCount  int
	ForeignRials  int64
	Mismatches    int
	Unreached     int
	Details       string // JSON array of ReconcileItem
	Error         string
}

// Items decodes the report's lines.
func (r ReconcileReport) Items() []ReconcileItem {
	var items []ReconcileItem
	_ = json.Unmarshal([]byte(r.Details), &items)
	return items
}

// Left counts the lines this run could not settle: an error (a verify or
// a credit that failed) or not reached (the run's budget spent). They are
// still paid at the bank and not credited: the run must be repeated (kifpool
// reconcile exits non-zero for them).
func (r ReconcileReport) Left() int {
	n := 0
	for _, it := range r.Items() {
		if it.Kind == "error" || it.Kind == "not_reached" {
			n++
		}
	}
	return n
}

// ReconcileConfig bounds one reconciliation.
type ReconcileConfig struct {
	Concurrency int           // items worked at once (default 4)
	Budget      time.Duration // the whole run; items not reached are reported (default 2m)
	// Batch is how many of a gateway's payments one run reads from each
	// of our lists (default 500; ReconcileBatch says in which order).
	Batch int
}

// Reconcile asks the gateway for payments it holds as paid but not
// verified (callbacks lost, windows closed), verifies and credits those
// that are ours, lists those that are not, and stores a report. An item is
// ours when its authority is one of our payments', or, failing that, when
// its callback URL names one of our payments (an authority lost before it
// was stored: the payment gets it back). Items are worked with bounded
// concurrency until the run's budget; those not reached are reported. It
// never touches a wallet for a foreign item.
func (s *Service) Reconcile(ctx context.Context) (ReconcileReport, error) {
	return s.ReconcileWith(ctx, ReconcileConfig{})
}

// ReconcileWith is Reconcile with explicit bounds. Each gateway is
// reconciled from its own source, one after the other within the one
// budget, and gets its own stored report: a gateway's list of paid but
// unverified payments (Zarinpal), or for a gateway without one (Zibal:
// GatewayRules.NoList) an inquiry of each of our recent payments there
// that is not credited, or for a gateway whose verify needs the
// callback's data (GatewayRules.NeedsCallback) the source that data
// allows (reconcileByCallbackData: SEP's receipt within its hour,
// Mellat's inquiry of a sale). The answer sums them (Gateway names them
// all).
func (s *Service) ReconcileWith(ctx context.Context, rc ReconcileConfig) (ReconcileReport, error) {
	return s.reconcileGateways(ctx, rc, s.gws)
}

// ReconcileDue reports whether a gateway's reconciliation is due at now
// (pure): none is stored yet (found false), or its newest started
// interval or more ago.
func ReconcileDue(newest ReconcileReport, found bool, now time.Time, interval time.Duration) bool {
	return !found || !now.Before(newest.StartedAt.Add(interval))
}

// ReconcileHold is how long a run holds its gateway's turn
// (ClaimReconcileTurn): the default budget of a run (ReconcileConfig)
// and a margin for storing its report. A run keeps its turn while it
// goes on (lifecycle.Turns.Keep, renewed every third of the hold) and
// gives it back when it ends; one killed half-way holds it until then.
const ReconcileHold = 2*time.Minute + time.Minute

// ReconcileIfDue is the periodic loop's step: it reconciles, within one
// run's bounds, the gateways whose reconciliation is due (ReconcileDue of
// each one's newest stored report, whoever stored it: an instance, an
// admin or kifpool reconcile), and reports whether any was. It is decided
// from the stored reports, not from a process's timer, so that several
// instances share one schedule instead of each asking the banks at its
// own, and a restart does not put a gateway's run off; of the instances
// that find a gateway due, the one that takes its turn
// (ClaimReconcileTurn) runs it, the others leave it (their next look
// finds its report).
func (s *Service) ReconcileIfDue(ctx context.Context, interval time.Duration) (ReconcileReport, bool, error) {
	newest, err := s.st.NewestReconcileReports(ctx, gatewayNames(s.gws))
	if err != nil {
		return ReconcileReport{}, false, err
	}
	now := s.clock()
	var due gateway.Set
	for _, gw := range s.gws {
		if rep, found := newest[gw.Name()]; ReconcileDue(rep, found, now, interval) {
			due = append(due, gw)
		}
	}
	// Held at most an interval, so that a run killed half-way puts the
	// next off by no more than the schedule would; a run that goes on
	// keeps it (Turns.Keep), however long it takes, so that no other
	// starts beside it.
	hold := min(ReconcileHold, interval)
	claimed, _, err := s.claimTurns(ctx, due, now, hold, false)
	if err != nil || len(claimed) == 0 {
		return ReconcileReport{}, false, err
	}
	ctx, done := s.turns().Keep(ctx, gatewayNames(claimed), now, hold)
	defer done()
	// A run that ended (and gave its turn back) between the read and
	// the claim has stored its report: read again, and leave what it did.
	if newest, err = s.st.NewestReconcileReports(ctx, gatewayNames(claimed)); err != nil {
		return ReconcileReport{}, false, err
	}
	var run gateway.Set
	for _, gw := range claimed {
		if rep, found := newest[gw.Name()]; ReconcileDue(rep, found, now, interval) {
			run = append(run, gw)
		}
	}
	if len(run) == 0 {
		return ReconcileReport{}, false, nil
	}
	rep, err := s.reconcileGateways(ctx, ReconcileConfig{}, run)
	return rep, true, err
}

// ReconcileNow is an admin's "reconcile now": every gateway, due or not,
// but each only with its turn (ClaimReconcileTurn), the one the periodic
// runs take, so that a double click, a second admin or a retried request
// never starts a second run of a gateway while one is still asking the
// bank. held names the gateways whose turn another run holds, not run
// now (the first held and those after it); ran is false when none was
// run (rep is then empty).
func (s *Service) ReconcileNow(ctx context.Context) (rep ReconcileReport, held []string, ran bool, err error) {
	now := s.clock()
	claimed, held, err := s.claimTurns(ctx, s.gws, now, ReconcileHold, true)
	if err != nil || len(claimed) == 0 {
		return ReconcileReport{}, held, false, err
	}
	ctx, done := s.turns().Keep(ctx, gatewayNames(claimed), now, ReconcileHold)
	defer done()
	rep, err = s.reconcileGateways(ctx, ReconcileConfig{}, claimed)
	return rep, held, true, err
}

// ClaimReconcileTurn takes the reconciliation's turn named name (a
// gateway's, or a payout provider's: withdrawal.TurnName) when it is
// free at now, holding it until next: the store's one conditional
// statement, for the payout reconciliation's turns that share the table.
func (s *Service) ClaimReconcileTurn(ctx context.Context, name string, now, next time.Time) (bool, error) {
	return s.st.ClaimReconcileTurn(ctx, name, now, next)
}

// turns are the reconciliations' turns (ClaimReconcileTurn), in the
// service's clock.
func (s *Service) turns() lifecycle.Turns {
	return lifecycle.Turns{Store: s.st, Clock: s.clock, Log: s.log}
}

// claimTurns is Turns.Claim of the gateways gws: those whose turn this
// run took, and the names of those another run holds.
func (s *Service) claimTurns(ctx context.Context, gws gateway.Set, now time.Time, hold time.Duration, stop bool) (claimed gateway.Set, held []string, err error) {
	names, held, err := s.turns().Claim(ctx, gatewayNames(gws), now, hold, stop)
	for _, gw := range gws {
		if slices.Contains(names, gw.Name()) {
			claimed = append(claimed, gw)
		}
	}
	return claimed, held, err
}

// gatewayNames are the names of gws.
func gatewayNames(gws gateway.Set) []string {
	names := make([]string, len(gws))
	for i, gw := range gws {
		names[i] = gw.Name()
	}
	return names
}

// reconcileGateways is ReconcileWith over the gateways gws.
func (s *Service) reconcileGateways(ctx context.Context, rc ReconcileConfig, gws gateway.Set) (ReconcileReport, error) {
	if rc.Concurrency <= 0 {
		rc.Concurrency = 4
	}
	if rc.Budget <= 0 {
		rc.Budget = 2 * time.Minute
	}
	if rc.Batch <= 0 {
		rc.Batch = 500
	}
	ctx, cancel := context.WithTimeout(ctx, rc.Budget)
	defer cancel()
	sum := ReconcileReport{StartedAt: s.clock(), Details: "[]"}
	var names, errs []string
	var items []ReconcileItem
	var saveErr error
	for _, gw := range gws {
		var rep ReconcileReport
		var err error
		switch rules := s.cfg.Gateways[gw.Name()]; {
		case rules.NeedsCallback:
			rep, err = s.reconcileByCallbackData(ctx, gw, rules, rc)
		case rules.NoList:
			rep, err = s.reconcileByInquiry(ctx, gw, rc)
		default:
			rep, err = s.reconcileList(ctx, gw, rc)
		}
		if err != nil {
			saveErr = errors.Join(saveErr, err)
		}
		names = append(names, gw.Name())
		if rep.Error != "" {
			errs = append(errs, gw.Name()+": "+rep.Error)
		}
		sum.ID = rep.ID
		sum.Listed += rep.Listed
		sum.Ours += rep.Ours
		sum.Credited += rep.Credited
		sum.CreditedRials += rep.CreditedRials
		sum.ForeignCount += rep.ForeignCount
		sum.ForeignRials += rep.ForeignRials
		sum.Mismatches += rep.Mismatches
		sum.Unreached += rep.Unreached
		items = append(items, rep.Items()...)
	}
	sum.Gateway, sum.Error, sum.FinishedAt = strings.Join(names, ","), strings.Join(errs, "; "), s.clock()
	if b, err := json.Marshal(items); err == nil && len(items) > 0 {
		sum.Details = string(b)
	}
	if saveErr != nil {
		return sum, saveErr
	}
	if sum.Error != "" {
		return sum, errors.New(sum.Error)
	}
	return sum, nil
}

// reconcileList reconciles one gateway from its list of paid but
// unverified payments, and stores its report (an error: the report could
// not be stored).
func (s *Service) reconcileList(ctx context.Context, gw gateway.Gateway, rc ReconcileConfig) (ReconcileReport, error) {
	rep := ReconcileReport{Gateway: gw.Name(), StartedAt: s.clock(), Details: "[]"}
	list, err := gw.ListUnverified(ctx)
	if err != nil {
		rep.Error = "list unverified: " + err.Error()
	}
	rep.Listed = len(list)
	items := make([]ReconcileItem, len(list))
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, rc.Concurrency)
	)
	for i, u := range list {
		items[i] = ReconcileItem{Authority: u.Authority, AmountRials: u.AmountRials}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			mu.Lock()
			items[i] = notReached(items[i])
			rep.Unreached++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			it := items[i]
			if ctx.Err() != nil {
				it = notReached(it)
			} else {
				it, _ = s.guarded(ctx, it, func() (ReconcileItem, bool) { return s.reconcileItem(ctx, gw.Name(), u), true })
				it = cutByBudget(ctx, it)
			}
			mu.Lock()
			defer mu.Unlock()
			items[i] = it
			switch it.Kind {
			case "foreign":
				rep.ForeignCount++
				rep.ForeignRials += u.AmountRials
			case "credited":
				rep.Ours++
				rep.Credited++
				rep.CreditedRials += it.creditedRials
			case "amount_mismatch", "already_resolved", "unresolved", "authority_conflict":
				rep.Ours++
				rep.Mismatches++
			case "not_reached":
				rep.Unreached++
			case "error":
			default:
				rep.Ours++
			}
		}()
	}
	wg.Wait()
	// A payment the bank verified by itself after it ended here is on no
	// list of unverified ones: the ended ones it never gave its word on,
	// not listed, are asked one by one (none when the budget is spent:
	// one item not reached says so, and the run is not done).
	if ctx.Err() != nil {
		items = append(items, ReconcileItem{Kind: "not_reached", Detail: "reconciliation budget spent before our ended payments were asked"})
		rep.Unreached++
	} else {
		listed := make(map[string]bool, len(list))
		for _, u := range list {
			listed[u.Authority] = true
		}
		now := s.clock()
		ended, lerr := s.st.RecentUnsure(ctx, s.batch(gw.Name(), rc, UnsureWindow), now.Add(-UnsureWindow))
		if lerr != nil {
			rep.Error = strings.TrimPrefix(rep.Error+"; list our ended payments: "+lerr.Error(), "; ")
		}
		var unsure []TopUp
		for _, p := range UnsureEnded(ended, now) {
			if !listed[p.AuthorityString()] {
				unsure = append(unsure, p)
			}
		}
		asked := s.inquireEach(ctx, gw, unsure, rc, &rep)
		items = append(items, asked...)
		s.reconciled(ctx, ended, asked)
	}
	err = s.saveReport(ctx, &rep, items, "by its list")
	return rep, err
}

// guarded runs ask, the work on one item in a goroutine of its own: a
// panic in it (a driver's bug on an odd answer) is that item's error,
// logged with its stack, and the run and the process go on (no loop's
// recovery covers these goroutines). A payment's lease taken meanwhile
// lapses as after a crash.
func (s *Service) guarded(ctx context.Context, it ReconcileItem, ask func() (ReconcileItem, bool)) (out ReconcileItem, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s.log.ErrorContext(ctx, "reconciliation: panic on one item", "authority", it.Authority, "payment", it.PublicID,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			it.Kind, it.Detail = "error", usertext.Cut(fmt.Sprintf("panic: %v", v), 200)
			out, ok = it, true
		}
	}()
	return ask()
}

// notReached is an item the run's budget ran out before: nothing was
// asked of the bank for it (an item begun before, but whose goroutine
// ran after, included).
func notReached(it ReconcileItem) ReconcileItem {
	it.Kind, it.Detail = "not_reached", "reconciliation budget spent"
	return it
}

// budgetCutPrefix begins the detail of an item whose work the run's
// budget cut: the bank may have been asked, so it is an error (left to do,
// as one not reached, and kifpool reconcile exits 1), named for what cut
// it.
const budgetCutPrefix = "cut by the reconciliation budget: "

// cutByBudget names an error met after the budget ran out, and makes one
// an error that the budget left open (its verify cut short: the payment
// still waits for the bank's word).
func cutByBudget(ctx context.Context, it ReconcileItem) ReconcileItem {
	if ctx.Err() == nil {
		return it
	}
	switch it.Kind {
	case "error":
		it.Detail = budgetCutPrefix + it.Detail
	case "open":
		it.Kind, it.Detail = "error", budgetCutPrefix+"still "+it.Detail
	}
	return it
}

// saveReport ends one gateway's report: its end time and lines, stored
// (whatever ctx does now), and logged; how names the gateway's source.
// Listed is what the source listed or what was asked; Ours, what of it
// is ours to report.
func (s *Service) saveReport(ctx context.Context, rep *ReconcileReport, items []ReconcileItem, how string) error {
	rep.FinishedAt = s.clock()
	if b, err := json.Marshal(items); err == nil && len(items) > 0 {
		rep.Details = string(b)
	}
	if err := s.st.SaveReconcileReport(context.WithoutCancel(ctx), rep); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "reconciliation done", "gateway", rep.Gateway, "source", how, "listed", rep.Listed, "ours", rep.Ours,
		"credited", rep.Credited, "foreign", rep.ForeignCount, "mismatches", rep.Mismatches, "unreached", rep.Unreached, "error", rep.Error)
	return nil
}

// reconcileItem works one listed item.
func (s *Service) reconcileItem(ctx context.Context, gwName string, u gateway.Unverified) ReconcileItem {
	it := ReconcileItem{Authority: u.Authority, AmountRials: u.AmountRials}
	p, found, err := s.matchUnverified(ctx, gwName, u)
	switch {
	case err != nil:
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
		return it
	case !found:
		it.Kind = "foreign"
		return it
	}
	it.PublicID = p.PublicID
	if p.Authority != nil && *p.Authority != u.Authority {
		// Our payment, by its callback URL, but with another authority:
		// never verify someone else's transaction against it.
		it.Kind, it.Detail = "authority_conflict", "ours has another authority"
		return it
	}
	mismatch := u.AmountRials != p.AmountRials
	if mismatch {
		it.Kind, it.Detail = "amount_mismatch", fmt.Sprintf("ours %d rials", p.AmountRials)
	}
	before := p.Status
	switch {
	case p.Status == StatusCredited:
		// Credited here but listed as unverified there: should not be.
		if it.Kind == "" {
			it.Kind, it.Detail = "already_resolved", string(p.Status)
		}
		return it
	case p.Authority == nil:
		p, err = s.recoverAuthority(ctx, p, u.Authority)
	case p.Status == StatusFailed || p.Status == StatusNeedsReview:
		// The bank holds the payer's money for a payment that ended here
		// without it: reopen (so a crash cannot lose the answer) and verify.
		p, _, err = s.reopen(ctx, p, ActorReconcile, nil, true)
	default:
		p, err = s.resolveWaiting(ctx, p, ActorReconcile, false, "")
	}
	switch {
	case err != nil:
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
	case p.Status == StatusCredited:
		// Credited now: the bank verified it with our amount (its verify
		// answers -50 otherwise), so the listed amount was the list's to
		// explain; the item is a credit, counted as one (C1: it was
		// counted as a mismatch, and its rials were left out).
		it.Kind, it.Detail = "credited", ""
		if before != StatusPendingVerification && before != StatusAwaitingPayment {
			it.Detail = "was " + string(before) + " here"
		}
		if mismatch {
			it.Detail = strings.TrimPrefix(it.Detail+fmt.Sprintf("; listed %d rials, verified with ours %d", u.AmountRials, p.AmountRials), "; ")
		}
		it.creditedRials = p.AmountRials
	case it.Kind == "":
		it.Kind, it.Detail = "open", string(p.Status)
		if p.Status.Terminal() {
			it.Kind = "unresolved"
		}
	}
	return it
}

// matchUnverified finds our payment for a listed item: by authority, else
// by the public id in its callback URL.
func (s *Service) matchUnverified(ctx context.Context, gwName string, u gateway.Unverified) (TopUp, bool, error) {
	p, found, err := s.st.ByAuthority(ctx, gwName, u.Authority)
	if found || err != nil {
		return p, found, err
	}
	id := PublicIDFromCallbackURL(u.CallbackURL)
	if id == "" {
		return p, false, nil
	}
	return s.st.ByGatewayPublicID(ctx, gwName, id)
}

// PublicIDFromCallbackURL returns the top-up's public id in one of our
// callback URLs (…/topups/{id}/return, or …/payments/{id}/return that
// top-ups started before the rename gave the bank), or "".
func PublicIDFromCallbackURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	for _, pattern := range []string{routes.TopUpReturnPattern, routes.LegacyTopUpReturnPattern} {
		if args, ok := routes.MatchEnd(pattern, u.Path); ok && ValidPublicID(args[0]) {
			return args[0]
		}
	}
	return ""
}

// recoverAuthority gives a payment whose authority was lost (the bank
// answered, we never stored it) the authority the bank lists for its
// callback URL, moves it to pending_verification and verifies it.
func (s *Service) recoverAuthority(ctx context.Context, p TopUp, authority string) (TopUp, error) {
	// The verify is bounded by one budget from the moment the lease is
	// taken (sized to it), as every bank check: the move between them,
	// however slow, does not let the verify outlive the lease.
	vctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	tok, cur, err := s.claim(ctx, p.ID, []Status{StatusCreated, StatusFailed})
	if err != nil || tok == "" {
		return cur, err
	}
	d := Decide(Input{Step: StepRecover, Actor: ActorReconcile, TopUp: cur, Now: s.clock(), Rules: s.rules(), Authority: authority})
	if d.Action != ActionMove {
		return s.release(ctx, cur, tok, Fields{})
	}
	moved, err := s.move(ctx, cur, cur.Status, change{to: d.To, actor: ActorReconcile,
		reason: d.Reason, lease: tok, keepLease: d.KeepLease,
		set: Fields{Authority: &d.Authority, OpenedAt: d.OpenedAt, NextCheckAt: d.NextCheckAt}})
	if err != nil {
		if _, rerr := s.release(ctx, cur, tok, Fields{}); rerr != nil {
			s.log.ErrorContext(ctx, "release after failed recovery", "payment", p.PublicID, "err", rerr)
		}
		return cur, fmt.Errorf("recover authority of %s: %w", p.PublicID, err)
	}
	s.log.WarnContext(ctx, "authority recovered from the bank's list", "payment", p.PublicID)
	return s.verifyAndApply(vctx, moved, tok, ActorReconcile, "")
}

// ReconcileLookback is how far back reconciliation by inquiry looks for a
// gateway's ended payments (a bank that lists nothing still answers an
// inquiry about a payment for at least a day).
const ReconcileLookback = 24 * time.Hour

// reconcileByInquiry reconciles a gateway that lists no unverified
// payments (Zibal): each of our payments there created within
// ReconcileLookback that ended failed or under review is inquired; one
// the bank holds as paid or verified is reopened and verified (so a crash
// cannot lose the answer), which credits it. Open payments are the
// worker's. Items are the payments the bank holds paid; the others are
// counted as listed only.
func (s *Service) reconcileByInquiry(ctx context.Context, gw gateway.Gateway, rc ReconcileConfig) (ReconcileReport, error) {
	rep := ReconcileReport{Gateway: gw.Name(), StartedAt: s.clock(), Details: "[]"}
	ended, err := s.st.RecentEnded(ctx, s.batch(gw.Name(), rc, UnsureWindow))
	if err != nil {
		rep.Error = "list our ended payments: " + err.Error()
	}
	rep.Listed = len(ended)
	items := s.inquireEach(ctx, gw, ended, rc, &rep)
	s.reconciled(ctx, ended, items)
	err = s.saveReport(ctx, &rep, items, "by inquiry")
	return rep, err
}

// inquireEach asks the bank about each of the ended payments ps, with
// rc's concurrency, until the run's budget (inquireEnded: one the bank
// holds paid or verified is reopened and verified); it counts into rep
// and returns the report's lines (those the bank holds paid, errors,
// and those not reached).
func (s *Service) inquireEach(ctx context.Context, gw gateway.Gateway, ps []TopUp, rc ReconcileConfig, rep *ReconcileReport) []ReconcileItem {
	var (
		items []ReconcileItem
		mu    sync.Mutex
		wg    sync.WaitGroup
		sem   = make(chan struct{}, rc.Concurrency)
	)
	for _, p := range ps {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		unreached := func() {
			mu.Lock()
			defer mu.Unlock()
			items = append(items, notReached(ReconcileItem{Authority: p.AuthorityString(), AmountRials: p.AmountRials, PublicID: p.PublicID}))
			rep.Unreached++
		}
		if ctx.Err() != nil {
			unreached()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if ctx.Err() != nil {
				unreached()
				return
			}
			it, ok := s.guarded(ctx, ReconcileItem{Authority: p.AuthorityString(), AmountRials: p.AmountRials, PublicID: p.PublicID},
				func() (ReconcileItem, bool) { return s.inquireEnded(ctx, gw, p) })
			if !ok {
				return
			}
			it = cutByBudget(ctx, it)
			mu.Lock()
			defer mu.Unlock()
			items = append(items, it)
			rep.Ours++
			switch it.Kind {
			case "credited":
				rep.Credited++
				rep.CreditedRials += p.AmountRials
			case "amount_mismatch", "unresolved":
				rep.Mismatches++
			}
		}()
	}
	wg.Wait()
	return items
}

// reconciled records that the run looked at ps (their turn in the lists
// comes after the others'), except those its items say it did not reach
// within its budget: those keep their place at the front. One whose
// question failed (an error) takes its turn like the others: failing at
// every run, at the front it would take the batch from them. A failure
// to record is logged: the next run looks at them again.
func (s *Service) reconciled(ctx context.Context, ps []TopUp, items []ReconcileItem) {
	again := map[string]bool{}
	for _, it := range items {
		if it.Kind == "not_reached" && it.PublicID != "" {
			again[it.PublicID] = true
		}
	}
	ids := make([]int64, 0, len(ps))
	for _, p := range ps {
		if !again[p.PublicID] {
			ids = append(ids, p.ID)
		}
	}
	if err := s.st.Reconciled(context.WithoutCancel(ctx), ids, s.clock()); err != nil {
		s.log.WarnContext(ctx, "reconcile: record the payments looked at", "err", err)
	}
}

// ReconcileBatch is what one of reconciliation's lists reads: up to
// Limit of a gateway's payments created at or after Since. Those created
// at or after Hot come first, newest first: they are asked at every run
// while what the bank holds of them can still change (a payer still
// paying, a receipt the bank keeps for an hour). Then the others, those
// reconciliation looked at least recently first (never, then longest
// ago; newest first among equals), so that a day with more payments
// than one run reads is covered over the runs.
type ReconcileBatch struct {
	Gateway    string
	Since, Hot time.Time
	Limit      int
}

// batch is rc's batch of gw's payments at now, hot for the last hot.
func (s *Service) batch(gw string, rc ReconcileConfig, hot time.Duration) ReconcileBatch {
	now := s.clock()
	return ReconcileBatch{Gateway: gw, Since: now.Add(-ReconcileLookback), Hot: now.Add(-hot), Limit: rc.Batch}
}

// UnsureWindow is how long after a payment failed at its page's lifetime
// reconciliation asks the bank about it by inquiry (UnsureEnded): a payer
// still on the bank's page then pays within minutes, and a bank that
// verifies by itself does so at once. Every payment abandoned at the
// bank ends so: asked at every run for a day, they would be most of the
// bank's calls.
const UnsureWindow = time.Hour

// UnsureEnded are the payments of ps (ended: failed or under review)
// whose end was not the bank's word that nothing was paid, at now:
// failed when the page's lifetime passed with no word from the bank,
// within UnsureWindow of that end, or waiting for a person. A gateway
// that lists its paid, unverified payments (Zarinpal) lists no payment
// it verified by itself (its panel's auto-verify) after ours had ended:
// those are asked one by one. Pure.
func UnsureEnded(ps []TopUp, now time.Time) []TopUp {
	var out []TopUp
	for _, p := range ps {
		ended := p.UpdatedAt
		if p.ResolvedAt != nil {
			ended = *p.ResolvedAt
		}
		switch {
		case p.Status == StatusNeedsReview:
			out = append(out, p)
		case p.Status == StatusFailed && Reason(p.StatusReason) == ReasonNotPaidAfterLife && now.Sub(ended) <= UnsureWindow:
			out = append(out, p)
		}
	}
	return out
}

// inquireEnded asks the bank about one ended payment; ok is false when
// the bank does not hold it as paid (nothing to report).
func (s *Service) inquireEnded(ctx context.Context, gw gateway.Gateway, p TopUp) (ReconcileItem, bool) {
	it := ReconcileItem{Authority: p.AuthorityString(), AmountRials: p.AmountRials, PublicID: p.PublicID}
	ictx, cancel := context.WithTimeout(resilient.WithRef(ctx, p.PublicID), s.cfg.VerifyTimeout)
	ir, err := gw.Inquire(ictx, p.AuthorityString())
	cancel()
	switch {
	case err != nil:
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
		return it, true
	case ir.Status != gateway.InquiryPaid && ir.Status != gateway.InquiryVerified:
		return it, false
	}
	before := p.Status
	p, _, err = s.reopen(ctx, p, ActorReconcile, nil, true)
	switch {
	case err != nil:
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
	case p.Status == StatusCredited:
		it.Kind, it.Detail = "credited", "was "+string(before)+" here"
	case p.Status == StatusNeedsReview && p.StatusReason == string(ReasonAmountMismatch):
		it.Kind, it.Detail = "amount_mismatch", string(ir.Status)+" at the bank"
	case p.Status.Terminal():
		it.Kind, it.Detail = "unresolved", string(ir.Status)+" at the bank; "+string(p.Status)+" here"
	default:
		it.Kind, it.Detail = "open", string(p.Status)
	}
	return it, true
}

// CallbackDataAsk is what reconciliation asks the bank about one payment
// of a gateway whose verify needs the callback's data.
type CallbackDataAsk int

const (
	AskNothing CallbackDataAsk = iota // nothing can or need be asked
	AskReceipt                        // the token's receipt (SEP, within its window)
	AskSale                           // the sale's inquiry with the callback's data (Mellat)
)

// CallbackDataPlan is what reconciliation does about one payment of a
// gateway whose verify needs the callback's data: ask its receipt or its
// sale, or nothing — then Kind (and Detail), when not "", is the
// report's line for it.
type CallbackDataPlan struct {
	Ask          CallbackDataAsk
	Kind, Detail string
}

// PlanCallbackData decides what reconciliation asks about p, one of our
// payments not credited at a gateway whose verify needs the callback's
// data, at now. Pure.
//
// A gateway whose receipt of the token stands in for the callback (SEP:
// GatewayRules.ReceiptLife) is asked its receipt while the bank keeps it;
// past that, a payment whose outcome we do not know (open, under review)
// is reported as beyond the bank's API, never guessed at (a failed one
// ended on the bank's word or its page's lifetime). Otherwise (Mellat)
// a payment with the callback's data (its kept receipt) is asked about
// its sale; one whose payer never came back cannot be asked about and,
// once ended, is reported so; one that came back without a sale ended on
// the bank's word, and an open one is still within its window (the
// worker's).
func PlanCallbackData(p TopUp, now time.Time, r GatewayRules) CallbackDataPlan {
	switch {
	case r.ReceiptLife > 0 && now.Sub(p.CreatedAt) <= r.ReceiptLife:
		return CallbackDataPlan{Ask: AskReceipt}
	case r.ReceiptLife > 0 && p.Status == StatusFailed:
		return CallbackDataPlan{}
	case r.ReceiptLife > 0:
		return CallbackDataPlan{Kind: KindReceiptExpired, Detail: fmt.Sprintf("%s here; the bank keeps a token's receipt %s after it is made: ask its merchant portal",
			p.Status, r.ReceiptLife)}
	case p.Receipt != nil:
		return CallbackDataPlan{Ask: AskSale}
	case p.ReturnedAt != nil || p.Status.open():
		return CallbackDataPlan{}
	}
	return CallbackDataPlan{Kind: KindNoCallback, Detail: string(p.Status) + " here; the bank is asked about a sale only with its callback's reference, and none came"}
}

// CallbackDataVerdict says what the bank's answer about p means: act
// (verify, and settle where the gateway settles, through the payment's
// check as the worker does: the bank holds it paid or verified, or SEP
// no longer keeps the receipt of a payment whose RefNum we hold, which
// its verify answers), or report a line (Kind, Detail), or neither
// (the bank does not hold it paid). Pure.
func CallbackDataVerdict(p TopUp, ir gateway.InquiryResult) (act bool, kind, detail string) {
	switch ir.Status {
	case gateway.InquiryPaid, gateway.InquiryVerified:
		return true, "", ""
	case gateway.InquiryInBank, gateway.InquiryFailed, gateway.InquiryReversed:
		return false, "", ""
	case gateway.InquiryGone:
		if p.Receipt != nil {
			return true, "", ""
		}
		return false, "unresolved", string(p.Status) + " here; the bank keeps no receipt of it any more (verified or reversed there) and no callback brought its receipt"
	}
	return false, "unresolved", fmt.Sprintf("%s here; the bank answers %s (code %d)", p.Status, ir.Status, ir.Code)
}

// reconcileByCallbackData reconciles a gateway whose verify needs the
// callback's data (SEP, Mellat), which lists nothing: each of our
// payments there created within ReconcileLookback and not credited is
// planned (PlanCallbackData), asked about through the source its data
// allows — SEP's receipt of the token within its hour, Mellat's
// bpInquiryRequest with the kept SaleReferenceId — and, when the bank
// holds it paid or verified, checked exactly as the worker checks it
// (verify, settle, credit), an ended one reopened first so that a crash
// cannot lose the answer. Payments the bank cannot be asked about are
// reported, never guessed at. Items are the payments the bank holds paid,
// those it could not be asked about and errors; Listed counts those
// asked.
func (s *Service) reconcileByCallbackData(ctx context.Context, gw gateway.Gateway, rules GatewayRules, rc ReconcileConfig) (ReconcileReport, error) {
	rep := ReconcileReport{Gateway: gw.Name(), StartedAt: s.clock(), Details: "[]"}
	// Hot while the bank keeps a token's receipt (SEP's hour), and at
	// least UnsureWindow.
	ps, err := s.st.RecentUncredited(ctx, s.batch(gw.Name(), rc, max(UnsureWindow, rules.ReceiptLife)))
	if err != nil {
		rep.Error = "list our uncredited payments: " + err.Error()
	}
	var (
		items []ReconcileItem
		mu    sync.Mutex
		wg    sync.WaitGroup
		sem   = make(chan struct{}, rc.Concurrency)
	)
	add := func(it ReconcileItem) {
		mu.Lock()
		defer mu.Unlock()
		items = append(items, it)
		if it.Kind == "not_reached" {
			rep.Unreached++
			return
		}
		rep.Ours++
		switch it.Kind {
		case "credited":
			rep.Credited++
			rep.CreditedRials += it.creditedRials
		case "amount_mismatch", "unresolved":
			rep.Mismatches++
		}
	}
	for _, p := range ps {
		it := ReconcileItem{Authority: p.AuthorityString(), AmountRials: p.AmountRials, PublicID: p.PublicID}
		plan := PlanCallbackData(p, s.clock(), rules)
		if plan.Ask == AskNothing {
			if plan.Kind != "" {
				it.Kind, it.Detail = plan.Kind, plan.Detail
				add(it)
			}
			continue
		}
		rep.Listed++
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			add(notReached(it))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if ctx.Err() != nil {
				add(notReached(it))
				return
			}
			if it, ok := s.guarded(ctx, it, func() (ReconcileItem, bool) { return s.askByCallbackData(ctx, gw, p, plan.Ask, it) }); ok {
				add(cutByBudget(ctx, it))
			}
		}()
	}
	wg.Wait()
	s.reconciled(ctx, ps, items)
	err = s.saveReport(ctx, &rep, items, "by the callback's data")
	return rep, err
}

// askByCallbackData asks the bank about p (its token's receipt, or its
// sale) and, when the bank holds it paid, checks it as the worker does;
// ok is false when there is nothing to report.
func (s *Service) askByCallbackData(ctx context.Context, gw gateway.Gateway, p TopUp, ask CallbackDataAsk, it ReconcileItem) (ReconcileItem, bool) {
	ictx, cancel := context.WithTimeout(resilient.WithRef(ctx, p.PublicID), s.cfg.VerifyTimeout)
	var ir gateway.InquiryResult
	var err error
	if ask == AskSale {
		inquireSale := gw.Ops().InquireSale
		if inquireSale == nil {
			cancel()
			it.Kind, it.Detail = KindNoCallback, "the driver has no inquiry of a sale"
			return it, true
		}
		ir, err = inquireSale(ictx, gateway.VerifyInput{Authority: p.AuthorityString(), AmountRials: p.AmountRials,
			OrderID: p.PublicID, Receipt: p.ReceiptString()})
	} else {
		ir, err = gw.Inquire(ictx, p.AuthorityString())
	}
	cancel()
	if err != nil {
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
		return it, true
	}
	act, kind, detail := CallbackDataVerdict(p, ir)
	if !act {
		it.Kind, it.Detail = kind, detail
		return it, kind != ""
	}
	before := p.Status
	if p.Status == StatusFailed || p.Status == StatusNeedsReview {
		// The bank holds the payer's money for a payment that ended here
		// without it: reopen (so a crash cannot lose the answer) and check.
		p, _, err = s.reopen(ctx, p, ActorReconcile, nil, true)
	} else {
		p, err = s.Resolve(ctx, p)
	}
	switch {
	case err != nil:
		it.Kind, it.Detail = "error", usertext.Cut(err.Error(), 200)
	case p.Status == StatusCredited:
		it.Kind, it.Detail, it.creditedRials = "credited", "was "+string(before)+" here", p.AmountRials
	case p.Status == StatusNeedsReview && p.StatusReason == string(ReasonAmountMismatch):
		it.Kind, it.Detail = "amount_mismatch", string(ir.Status)+" at the bank"
	case p.Status.Terminal():
		it.Kind, it.Detail = "unresolved", string(ir.Status)+" at the bank; "+string(p.Status)+" ("+p.StatusReason+") here"
	default:
		it.Kind, it.Detail = "open", string(ir.Status)+" at the bank; "+string(p.Status)+" here"
	}
	return it, true
}
