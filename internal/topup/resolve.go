package topup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/wallet"
)

// ErrBadCallback: the callback carries no usable token in its gateway's
// own field names, or names a sale that is not this payment's
// (gateway.Ops.MatchCallback).
var ErrBadCallback = errors.New("callback carries no usable token")

// Return is the one entry point of the bank's return (its callback, GET
// or POST) for a payment. The callback proves nothing: it only names the
// payment, by our unguessable id from the callback URL, and its fields are
// read with the parser of the gateway that payment was started at (parse,
// given its stored name: each gateway names its token differently; never
// from a session). The token must match ours (else ErrAuthorityMismatch
// and nothing changes); what a receipt the callback carries (SEP's RefNum,
// Mellat's SaleReferenceId) does is Decide's (StepCallback). The
// callback's own claim (Zarinpal's Status=OK) is logged and otherwise
// ignored. Then, unless the payment is credited, the bank is asked (at
// most once per RecheckDelay, the very first callback at once) with the
// amount from our own row. The returned payment carries the outcome to
// show; an open payment means the outcome is not known yet (the page
// refreshes itself). Return never takes longer than the gateway budget
// (VerifyTimeout).
func (s *Service) Return(ctx context.Context, publicID string, parse func(gateway string) (callback.Params, bool)) (TopUp, callback.Params, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return TopUp{}, callback.Params{}, err
	}
	cb, ok := parse(p.Gateway)
	if !ok {
		return TopUp{}, cb, ErrBadCallback
	}
	if match := s.gw(p).Ops().MatchCallback; match != nil {
		// Another sale's order, or an amount the payer paid other than
		// ours: nothing kept, never verified (the bank returns the sale).
		if err := match(p.PublicID, p.AmountRials, cb); err != nil {
			s.log.WarnContext(ctx, "callback refused: not this payment's sale", "payment", p.PublicID, "err", err)
			return TopUp{}, cb, fmt.Errorf("%w: %w", ErrBadCallback, err)
		}
	}
	p, err = s.returnOf(ctx, p, cb.Authority, cb.Receipt, cb.ClaimsPaid)
	return p, cb, err
}

// returnOf is Return for a payment as read: parse (done), Decide
// (StepCallback: the token, the receipt and its provenance, the pacing),
// keep the callback's receipt when the decision says so, record the
// return, claim, ask the bank (verifyAndApply: Decide on its answers, one
// conditional write).
func (s *Service) returnOf(ctx context.Context, p TopUp, authority, receipt string, claimsPaid bool) (TopUp, error) {
	in := Input{Step: StepCallback, Actor: ActorCallback, TopUp: p, Now: s.clock(), Rules: s.rules(),
		Callback: Callback{Authority: authority, Receipt: receipt}}
	for {
		d := Decide(in)
		switch d.Action {
		case ActionRefuse:
			s.logRefusal(ctx, p, d.Refusal)
			return TopUp{}, d.Refusal
		case ActionKeepReceipt:
			kept, hold, err := s.keepReceipt(ctx, in.TopUp, d.KeepReceipt)
			if err != nil {
				return TopUp{}, err
			}
			in.TopUp, in.Callback.Holder = kept, hold
			in.Callback.KeptNow = hold == HoldNotAsked && kept.ReceiptString() == d.KeepReceipt
			continue
		case ActionNone:
			if in.TopUp.Status == StatusFailed && !CallbackMayReopen(in.TopUp) {
				s.log.WarnContext(ctx, "callback for a payment an admin closed: answered from the row", "payment", p.PublicID)
			}
			return in.TopUp, nil
		case ActionRecordReturn:
			first, err := s.markReturned(ctx, in.TopUp)
			if err != nil {
				return in.TopUp, err
			}
			in.Callback.Recorded, in.Callback.First, in.Now = true, first, s.clock()
			continue
		}
		// A receipt another payment holds on a callback's word only: the
		// bank is asked with it for this payment, and if it confirms it
		// here, this payment takes it (verifyAndApply); "" when none.
		cand := d.CandidateReceipt
		cur := in.TopUp
		if d.FirstReturn {
			// The usual first callback: record it and take the lease at once
			// (one statement), then ask the bank.
			tok, claimed, ok, err := s.claimFirstReturn(ctx, cur.ID)
			if err != nil {
				return cur, err
			}
			if !ok {
				// Not so (held, or another callback came first): record the
				// return, then decide again.
				first, err := s.markReturned(ctx, cur)
				if err != nil {
					return cur, err
				}
				in.Callback.Recorded, in.Callback.First, in.Now = true, first, s.clock()
				continue
			}
			s.log.InfoContext(ctx, "callback", "payment", p.PublicID, "status", cur.Status, "claims_paid", claimsPaid, "check_now", true)
			ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
			defer cancel()
			return s.verifyAndApply(ctx, claimed, tok, ActorCallback, cand)
		}
		s.log.InfoContext(ctx, "callback", "payment", p.PublicID, "status", cur.Status, "claims_paid", claimsPaid,
			"check_now", d.Action == ActionVerify || d.CheckNow)
		if d.Action == ActionReopen {
			// The payer may have paid after we gave up (the bank page was
			// still open): reopen and ask the bank — now, or when the
			// pacing window ends, by the worker. The pacing is checked in
			// the claim itself: due was read from a row another callback
			// may have checked since (N2).
			return s.reopenWaiting(ctx, cur, ActorCallback, d.CheckNow, d.Paced, cand)
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
		defer cancel()
		return s.resolveWaiting(ctx, cur, ActorCallback, d.Paced, cand)
	}
}

// logRefusal logs why a callback was refused.
func (s *Service) logRefusal(ctx context.Context, p TopUp, err error) {
	switch {
	case errors.Is(err, ErrAuthorityMismatch):
		s.log.WarnContext(ctx, "callback authority mismatch", "payment", p.PublicID)
	case errors.Is(err, ErrReceiptTooSoon):
		// A new receipt the bank cannot be asked about now (asked moments
		// ago) is refused, never kept unchecked: kept, a forged one would
		// hold another payment's receipt against that payment's real
		// callback until the worker asks.
		s.log.WarnContext(ctx, "callback brings a new receipt within the pacing window: refused", "payment", p.PublicID)
	case errors.Is(err, ErrReceiptReused):
		s.log.ErrorContext(ctx, "callback receipt already used by another payment (replay)", "payment", p.PublicID)
	case errors.Is(err, ErrReceiptMismatch):
		s.log.WarnContext(ctx, "callback receipt differs from the payment's", "payment", p.PublicID)
	}
}

// Errors of a callback's receipt.
var (
	// ErrReceiptReused: another payment holds the callback's receipt.
	ErrReceiptReused = errors.New("the callback's receipt belongs to another payment")
	// ErrReceiptMismatch: the payment keeps another receipt.
	ErrReceiptMismatch = errors.New("the callback's receipt is not the payment's")
)

// ErrReceiptTooSoon: a callback brings a payment a new receipt within
// its pacing window (not its first callback): refused, nothing kept. It
// is an ErrReceiptMismatch (the callback is answered as one).
var ErrReceiptTooSoon = fmt.Errorf("%w: a new receipt within the pacing window", ErrReceiptMismatch)

// keepReceipt stores a callback's receipt on p, which holds none, as the
// callback's (one conditional UPDATE) and returns the row after it. When
// another payment holds it (unique (gateway, receipt)), nothing is kept
// and the hold found is reported: unconfirmed when that payment holds it
// on a callback's word only, else confirmed.
func (s *Service) keepReceipt(ctx context.Context, p TopUp, receipt string) (TopUp, Hold, error) {
	kept, err := s.st.KeepReceipt(ctx, p.ID, receipt, ReceiptFromCallback)
	if errors.Is(err, ErrDuplicate) {
		holder, found, herr := s.st.ReceiptHolder(ctx, p.Gateway, receipt)
		if herr != nil {
			return TopUp{}, HoldNotAsked, herr
		}
		if found && !holder.ReceiptConfirmed() && holder.ID != p.ID {
			s.log.WarnContext(ctx, "callback receipt held unconfirmed by another payment: the bank is asked", "payment", p.PublicID, "holder", holder.PublicID)
			return p, HoldUnconfirmed, nil
		}
		return p, HoldConfirmed, nil
	}
	if err != nil {
		return TopUp{}, HoldNotAsked, err
	}
	return kept, HoldNotAsked, nil
}

// markReturned records the first callback of a payment; it reports
// whether this is that first one.
func (s *Service) markReturned(ctx context.Context, p TopUp) (bool, error) {
	if p.ReturnedAt != nil {
		return false, nil
	}
	return s.st.MarkReturned(ctx, p.ID, s.clock())
}

// dueForCheck reports whether the bank may be asked about p now: at most
// once per RecheckDelay.
func (s *Service) dueForCheck(p TopUp) bool {
	return DueForCheck(p, s.clock(), s.cfg.RecheckDelay)
}

// Resolve asks the bank about an open payment and records the outcome,
// waiting (bounded by the budget) for another actor that holds the
// payment's lease. Used by reconciliation and tests; callbacks use Return.
func (s *Service) Resolve(ctx context.Context, p TopUp) (TopUp, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	return s.resolveWaiting(ctx, p, ActorReconcile, false, "")
}

// resolveWaiting takes the lease and asks the bank, or waits for the
// actor holding it until ctx's deadline; if the holder died (its lease ran
// out) and time is left, it takes over. When paced, the bank is not asked
// if it was asked within RecheckDelay (the row is the answer).
func (s *Service) resolveWaiting(ctx context.Context, p TopUp, actor Actor, paced bool, cand string) (TopUp, error) {
	start := s.clock()
	for {
		tok, cur, err := s.claimPaced(ctx, p.ID, openForVerify(), paced)
		if err != nil {
			return p, err
		}
		if tok != "" {
			return s.verifyAndApply(ctx, cur, tok, actor, cand)
		}
		if actor == ActorCallback && cur.Status.Terminal() && cur.Status != StatusCredited && !freshBankWord(cur, start) &&
			CallbackMayReopen(cur) && ctx.Err() == nil {
			// Ended by another actor on what it read before this payer came
			// back (the worker's last lifetime check, an expiry that
			// committed after our read): that is no answer for a payer who
			// just returned from the bank (N1). Reopen, and ask — paced.
			return s.reopenWaiting(ctx, cur, actor, true, true, cand)
		}
		if !cur.Status.open() || cur.LeaseUntil == nil || !cur.LeaseUntil.After(s.clock()) && paced {
			return cur, nil // resolved, or just checked by another actor
		}
		// Another actor is asking the bank right now: its answer is ours
		// too, so from here on this caller obeys the pacing window (an
		// unpaced first callback must not ask again right after it).
		paced = true
		left, ok := ctx.Deadline()
		if ok && time.Until(left) < s.cfg.PollInterval {
			return cur, nil // the budget is spent: the page says we are still confirming
		}
		select {
		case <-ctx.Done():
			return cur, nil
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// freshBankWord reports whether p ended on the bank's own answer to a
// check made since start: an answer made for this caller too.
func freshBankWord(p TopUp, start time.Time) bool {
	return Reason(p.StatusReason).bankAnswer() && p.LastCheckedAt != nil && !p.LastCheckedAt.Before(start.Add(-time.Second))
}

// resolveNow asks the bank about an open payment if its lease is free; it
// does not wait for another holder (worker, admin). When paced, the claim
// also requires the pacing window since the last check to have passed
// (the worker's: a callback may have asked since it read the row, N3).
// ran is false when the payment was not checked.
func (s *Service) resolveNow(ctx context.Context, id int64, actor Actor, paced bool) (p TopUp, ran bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	tok, cur, err := s.claimPaced(ctx, id, openForVerify(), paced)
	if err != nil || tok == "" {
		return cur, false, err
	}
	p, err = s.verifyAndApply(ctx, cur, tok, actor, "")
	return p, true, err
}

// reopen moves a failed or needs-review payment back to
// pending_verification so that asking the bank again survives a crash (the
// worker finishes an open payment), then, if check, asks the bank at once
// under the same lease; otherwise the worker asks when the pacing window
// ends. ran is false when another actor held the payment.
func (s *Service) reopen(ctx context.Context, p TopUp, actor Actor, adminID *int64, check bool) (TopUp, bool, error) {
	return s.reopenPaced(ctx, p, actor, adminID, check, false, "")
}

// reopenPaced is reopen whose check, when paced, is taken only if the
// bank was not asked within the pacing window — in the claiming
// statement. A payment asked within the window is reopened all the same,
// and the worker asks when the window ends.
func (s *Service) reopenPaced(ctx context.Context, p TopUp, actor Actor, adminID *int64, check, paced bool, cand string) (TopUp, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	tok, cur, err := s.claimPaced(ctx, p.ID, []Status{StatusFailed, StatusNeedsReview}, check && paced)
	if err != nil {
		return cur, false, err
	}
	if tok == "" {
		if check && paced && (cur.Status == StatusFailed || cur.Status == StatusNeedsReview) &&
			(cur.LeaseUntil == nil || !cur.LeaseUntil.After(s.clock())) {
			// Free, but asked within the window: reopen without asking.
			return s.reopenPaced(ctx, cur, actor, adminID, false, false, cand)
		}
		return cur, false, nil
	}
	d := Decide(Input{Step: StepReopen, Actor: actor, TopUp: cur, Now: s.clock(), Rules: s.rules(), CheckNow: check})
	if d.Action != ActionMove {
		cur, err = s.release(ctx, cur, tok, Fields{})
		return cur, false, err
	}
	moved, err := s.move(ctx, cur, cur.Status, change{to: d.To, actor: actor, reason: d.Reason,
		adminID: adminID, lease: tok, keepLease: d.KeepLease, set: Fields{OpenedAt: d.OpenedAt, NextCheckAt: d.NextCheckAt}})
	if err != nil {
		if errors.Is(err, errNotMoved) {
			p, err := s.reload(ctx, p.ID)
			return p, false, err
		}
		return cur, false, err
	}
	s.log.WarnContext(ctx, "payment reopened to ask the bank again", "payment", p.PublicID, "was", cur.Status, "actor", actor)
	testhook.At(testhook.AfterReopen) // e2e: reopened, the bank not asked yet
	if !check {
		return moved, true, nil
	}
	moved, err = s.verifyAndApply(ctx, moved, tok, actor, cand)
	return moved, true, err
}

// reopenWaiting is a callback's reopen of a failed or needs-review
// payment (see reopenPaced), which never answers from the row read before
// it: when another actor holds the payment (reconciliation rescuing it, a
// check in flight), it waits for that actor's result, bounded by the
// budget, and goes on from there.
func (s *Service) reopenWaiting(ctx context.Context, p TopUp, actor Actor, check, paced bool, cand string) (TopUp, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	start := s.clock()
	for {
		cur, ran, err := s.reopenPaced(ctx, p, actor, nil, check, paced, cand)
		if err != nil || ran {
			return cur, err
		}
		switch {
		case cur.Status == StatusCredited, freshBankWord(cur, start), actor == ActorCallback && !CallbackMayReopen(cur):
			return cur, nil
		case cur.Status.open():
			// Reopened or checked by another actor: its check is ours too.
			return s.resolveWaiting(ctx, cur, actor, true, cand)
		}
		// Another actor holds the ended payment: wait for its result.
		p, check, paced = cur, true, true
		left, ok := ctx.Deadline()
		if ok && time.Until(left) < s.cfg.PollInterval {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return cur, nil
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// verifyAndApply asks the bank and records the answer. The caller holds
// the lease tok; ctx bounds the whole check (verify and, after "not
// paid", inquiry) to one budget. What the answers mean is Decide's. cand
// is a callback's receipt that another payment holds unconfirmed, to be
// asked about for this payment ("" when none; only a callback's check
// carries one, passed down explicitly through the waits and reopens).
func (s *Service) verifyAndApply(ctx context.Context, p TopUp, tok string, actor Actor, cand string) (TopUp, error) {
	// Every bank check, whoever makes it, is bounded by one gateway
	// budget from the moment its lease was taken, so the lease (the
	// budget and a margin) never runs out while the check is in flight and
	// no second check can start (N4: reconciliation's ran on the run's
	// whole budget).
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	log := s.log.With("payment", p.PublicID, "actor", actor)
	bctx := resilient.WithRef(ctx, p.PublicID)
	// The verify's attempts are written with a credit, in its transaction;
	// with any other outcome, on their own before it is recorded.
	vctx, held := withHeldCalls(bctx)
	gw := s.gw(p)
	vin := gateway.VerifyInput{Authority: p.AuthorityString(), AmountRials: p.AmountRials,
		PageTime: PageTime(p, s.clock()), OrderID: p.PublicID, Receipt: p.ReceiptString()}
	if s.tokenNamesReceipt(p) {
		// The bank's record of our token first: a verify names only a
		// receipt the row holds (Decide, StepTokenReceipt).
		kept, ref, d := s.askTokenReceipt(bctx, p, gw, actor)
		if d.Action != ActionVerify {
			return s.apply(context.WithoutCancel(ctx), p, tok, actor, d)
		}
		p = kept
		if ref != "" {
			vin.Receipt, vin.ReceiptFromBank = ref, true
		}
	}
	vin.ReceiptConfirmed = p.ReceiptConfirmed()
	// A callback's receipt another payment holds unconfirmed is asked
	// about here, at a gateway whose verify binds it to our order
	// (Mellat's sale order): a success confirms that very receipt for this
	// payment. At SEP the bank's receipt of our token names it instead
	// (keepBankReceipt above takes it then); a verify there may confirm
	// another RefNum than the callback's, so the candidate is not used.
	if cand != "" && p.Receipt == nil && vin.Receipt == "" && s.cfg.Gateways[p.Gateway].ReceiptLife <= 0 {
		vin.Receipt = cand // the payer's word: asked, not kept (yet)
	} else {
		cand = ""
	}
	settler := gw.Ops().Settle // nil: verify alone makes the money ours
	needsSettle := settler != nil
	if p.Status == StatusSettling && needsSettle && Verified(p) {
		// Verified before, its facts and its verify on record: only the
		// settle is asked (the bank answers 45 when it was settled).
		return s.settleAndApply(vctx, p, tok, actor, settler, vin, held, false)
	}
	vr, err := gw.Verify(vctx, vin)
	in := Input{Step: StepCheck, Actor: actor, TopUp: p, Now: s.clock(), Rules: s.checkRules(p), Verify: vr, VerifyErr: err,
		NeedsSettle: needsSettle, CandidateReceipt: cand, CanReverse: canReverse(gw)}
	d := Decide(in)
	if d.TakeReceipt != "" {
		// The bank confirmed, for this payment, the receipt another
		// payment held on a callback's word: it is this payment's.
		p = s.takeReceipt(ctx, p, d.TakeReceipt)
	}
	if d.Action == ActionSettle {
		return s.beginSettling(vctx, p, tok, actor, d, settler, vin, held)
	}
	// Whatever the caller's context does now, the answer must be recorded.
	ctx = context.WithoutCancel(ctx)
	if d.Action != ActionCredit {
		s.writeHeld(ctx, held)
	}
	if d.Action == ActionInquire {
		// The inquiry runs in what is left of the check's one budget.
		ir, ierr := gw.Inquire(bctx, p.AuthorityString())
		in.Inquired, in.Inquiry, in.InquiryErr, in.Now = true, ir, ierr, s.clock()
		d = Decide(in)
		switch {
		case ierr != nil:
			log.WarnContext(ctx, "inquiry after not-paid failed; outcome unknown", "err", ierr)
		case ir.Status == gateway.InquiryInBank:
			log.InfoContext(ctx, "payer still at the bank")
		case d.To != StatusFailed:
			log.WarnContext(ctx, "inquiry does not confirm not-paid; keep asking", "inquiry", ir.Status)
		}
	}
	switch {
	case err != nil && gateway.IsRejected(err):
		log.ErrorContext(ctx, "verify rejected by gateway", "err", err)
	case err != nil:
		// A time-out is not a failure: the outcome is unknown.
		log.WarnContext(ctx, "verify outcome unknown", "err", err)
	case d.Reason == ReasonNoRefID:
		log.ErrorContext(ctx, "bank confirmed payment without a reference", "code", vr.Code)
	case d.Reason == ReasonAmountMismatch:
		log.ErrorContext(ctx, "bank reports another amount than ours", "code", vr.Code)
	case d.Reason == ReasonVerifyRejected:
		log.ErrorContext(ctx, "verify refused by gateway", "code", vr.Code, "outcome", vr.Outcome)
	}
	if d.Action == ActionCredit {
		testhook.At(testhook.AfterVerify) // e2e: the bank counts it verified, we have not credited
		return s.credit(ctx, p, tok, actor, d, held)
	}
	return s.apply(ctx, p, tok, actor, d)
}

// takeReceipt gives p the receipt the bank just confirmed for it,
// taking it from the payment that held it unconfirmed (or keeping it, if
// that one gave it up meanwhile). On failure p is returned as it was: the
// check goes on with the bank's answer, which stands either way.
func (s *Service) takeReceipt(ctx context.Context, p TopUp, receipt string) TopUp {
	ctx = context.WithoutCancel(ctx)
	taken, err := s.st.TakeReceipt(ctx, p.ID, receipt)
	if errors.Is(err, ErrNotMoved) {
		taken, err = s.st.KeepReceipt(ctx, p.ID, receipt, ReceiptFromBank)
	}
	if err == nil && taken.ReceiptString() != receipt {
		err = ErrReceiptMismatch
	}
	if err != nil {
		s.log.ErrorContext(ctx, "keep the receipt the bank confirmed for this payment", "payment", p.PublicID, "err", err)
		return p
	}
	s.log.WarnContext(ctx, "receipt held unconfirmed by another payment taken: the bank confirmed it for this one", "payment", p.PublicID)
	taken.LeaseOwner, taken.LeaseUntil = p.LeaseOwner, p.LeaseUntil
	return taken
}

// tokenNamesReceipt reports whether p's check asks the bank's record of
// its token first: at a gateway whose record of the token names what
// verify takes (SEP's RefNum: GatewayRules.ReceiptLife), while the bank
// keeps it, for a payment it has not verified (no reference on the row).
func (s *Service) tokenNamesReceipt(p TopUp) bool {
	life := s.cfg.Gateways[p.Gateway].ReceiptLife
	return life > 0 && s.clock().Sub(p.CreatedAt) <= life && p.RefID == nil
}

// askTokenReceipt asks the bank's record of p's token (the inquiry) and
// decides with its answer (Decide, StepTokenReceipt). When the decision is
// to verify with the receipt the bank names, that receipt is kept on the
// row as the bank's BEFORE the verify: the bank forgets its record once
// verified, so a crash after the verify (in the credit's transaction)
// would leave nothing to verify again (SEP's "already verified") with,
// and a payment the bank took the money for would wait for a receipt
// nobody can give. A kept callback receipt the bank does not name
// (forged, or another payment's) gives way to the bank's, so it holds no
// other payment's receipt against that payment's real callback. It
// returns the row, the receipt kept ("" when none), and the decision:
// ActionVerify, or what the answer means without a verify.
func (s *Service) askTokenReceipt(ctx context.Context, p TopUp, gw gateway.Gateway, actor Actor) (TopUp, string, Decision) {
	ir, err := gw.Inquire(ctx, p.AuthorityString())
	in := Input{Step: StepTokenReceipt, Actor: actor, TopUp: p, Now: s.clock(), Rules: s.checkRules(p), Token: ir, TokenErr: err}
	d := Decide(in)
	if d.Action != ActionVerify || d.KeepReceipt == "" {
		if err != nil {
			s.log.WarnContext(ctx, "the token's receipt before verify: outcome unknown", "payment", p.PublicID, "err", err)
		}
		return p, "", d
	}
	kept, err := s.keepBankReceipt(ctx, p, d.KeepReceipt)
	if err != nil {
		s.log.WarnContext(ctx, "keep the bank's receipt before verify: not verified", "payment", p.PublicID, "err", err)
		in.TokenKeepFailed, in.Now = true, s.clock()
		return p, "", Decide(in)
	}
	return kept, d.KeepReceipt, d
}

// keepBankReceipt keeps receipt, which the bank's record of p's token
// names, on p as the bank's: over no receipt or the same one (confirming
// a callback's), in place of another one a callback brought, or taken
// from another payment that holds it on a callback's word only. A hold
// the bank confirmed elsewhere stays (an error).
func (s *Service) keepBankReceipt(ctx context.Context, p TopUp, receipt string) (TopUp, error) {
	var kept TopUp
	var err error
	switch {
	case p.Receipt == nil || *p.Receipt == receipt:
		// Kept as the bank's (a callback's same receipt is confirmed).
		kept, err = s.st.KeepReceipt(ctx, p.ID, receipt, ReceiptFromBank)
	default:
		s.log.WarnContext(ctx, "the kept receipt is not the one the bank names for the token: the bank's is kept", "payment", p.PublicID)
		kept, err = s.st.ReplaceReceipt(ctx, p.ID, *p.Receipt, receipt)
	}
	if errors.Is(err, ErrDuplicate) {
		// Another payment holds it. If only on a callback's word (forged,
		// or sent for the wrong payment), the bank's word for our token
		// takes it back; a hold the bank confirmed stays.
		kept, err = s.st.TakeReceipt(ctx, p.ID, receipt)
		if err == nil {
			s.log.WarnContext(ctx, "a receipt another payment held unconfirmed is the one the bank names for this payment's token: taken", "payment", p.PublicID)
		}
	}
	if err == nil && kept.ReceiptString() != receipt {
		err = ErrReceiptMismatch
	}
	if err != nil {
		return p, err
	}
	kept.LeaseOwner, kept.LeaseUntil = p.LeaseOwner, p.LeaseUntil
	return kept, nil
}

// beginSettling takes a payment the bank just verified (d: ActionSettle)
// to settling — with the verified facts, opened_at (the settle window
// counts from it) and the verify's attempts, in the move's transaction,
// keeping the lease — and settles it. A crash after this move leaves it
// settling, and the next check only settles; a crash before it leaves it
// open as it was, and the next check verifies (43) again. When the move
// is not taken (another actor changed the row, the lease ran out) the
// settle is still asked: a settled payment is credited, lease or not. A
// reference another payment holds sends it to review, never settled.
func (s *Service) beginSettling(ctx context.Context, p TopUp, tok string, actor Actor, d Decision,
	settler gateway.SettleFunc, vin gateway.VerifyInput, held *heldCalls) (TopUp, error) {
	sp := p
	sp.RefID, sp.VerifiedAmountRials, sp.CardPANMasked = &d.RefID, &d.CreditedRials, d.CardPANMasked
	lost := false
	if p.Status != StatusSettling {
		set := checkedSet(d, s.clock())
		set.OpenedAt, set.RefID, set.VerifiedAmountRials, set.CardPANMasked = d.OpenedAt, &d.RefID, &d.CreditedRials, &d.CardPANMasked
		calls := held.take()
		c := change{to: StatusSettling, actor: actor, reason: d.Reason, gatewayCode: d.GatewayCode, lease: tok, keepLease: true, set: set, calls: calls}
		moved, err := s.move(context.WithoutCancel(ctx), p, p.Status, c)
		switch {
		case err == nil:
			sp = moved
		case errors.Is(err, errNotMoved):
			lost = true
			for _, c := range calls {
				held.add(c)
			}
		case errors.Is(err, ErrDuplicate):
			// unique (gateway, ref_id): the bank's reference belongs to
			// another payment. Never settle or credit it; a person looks.
			for _, c := range calls {
				held.add(c)
			}
			wctx := context.WithoutCancel(ctx)
			s.writeHeld(wctx, held)
			s.log.ErrorContext(ctx, "bank reference already used by another payment", "payment", p.PublicID, "ref_id", d.RefID)
			rd := Decide(Input{Step: StepRefReused, Actor: actor, TopUp: p, Now: s.clock(), Rules: s.checkRules(p), CanReverse: canReverse(s.gw(p))})
			rd.GatewayCode = d.GatewayCode
			return s.apply(wctx, p, tok, actor, rd)
		default:
			for _, c := range calls {
				held.add(c)
			}
			s.writeHeld(context.WithoutCancel(ctx), held)
			_, _ = s.release(context.WithoutCancel(ctx), p, tok, Fields{})
			return p, fmt.Errorf("payment %s to settling: %w", p.PublicID, err)
		}
	}
	testhook.At(testhook.AfterVerifyBeforeSettle) // e2e: verified at the bank (settling), not settled
	return s.settleAndApply(ctx, sp, tok, actor, settler, vin, held, lost)
}

// settleAndApply asks the bank to settle a verified payment p (its facts
// on p) and records the answer under the lease tok; lost: the lease (or
// the row) is no longer the caller's, and only a credit is written. The
// settle's attempts are held with the check's (written with a credit).
func (s *Service) settleAndApply(ctx context.Context, p TopUp, tok string, actor Actor,
	settler gateway.SettleFunc, vin gateway.VerifyInput, held *heldCalls, lost bool) (TopUp, error) {
	log := s.log.With("payment", p.PublicID, "actor", actor)
	sr, serr := settler(ctx, vin)
	d := Decide(Input{Step: StepSettle, Actor: actor, TopUp: p, Now: s.clock(), Rules: s.checkRules(p), LeaseLost: lost,
		NeedsSettle: true, Settle: sr, SettleErr: serr, CanReverse: canReverse(s.gw(p))})
	ctx = context.WithoutCancel(ctx)
	switch {
	case serr != nil:
		log.WarnContext(ctx, "settle outcome unknown; the payment stays settling", "err", serr)
	case d.Action == ActionCredit:
		testhook.At(testhook.AfterSettle) // e2e: settled at the bank, the credit not committed
		return s.credit(ctx, p, tok, actor, d, held)
	default:
		log.ErrorContext(ctx, "settle refused by the bank", "code", sr.Code, "outcome", sr.Outcome)
	}
	s.writeHeld(ctx, held)
	return s.apply(ctx, p, tok, actor, d)
}

// rules are the decision core's time rules of this service.
func (s *Service) rules() Rules {
	return Rules{RecheckDelay: s.cfg.RecheckDelay, MaxCreditFailures: s.cfg.MaxCreditFailures}
}

// checkRules are rules() with p's gateway's verify window and whether its
// verify needs the callback's data (a check that could ask nothing looks
// again when the window closes).
func (s *Service) checkRules(p TopUp) Rules {
	r := s.rules()
	g := s.cfg.Gateways[p.Gateway]
	r.VerifyDeadline, r.CallbackOnly = g.VerifyDeadline, g.callbackOnly()
	r.ReverseWindow, r.ReverseLands = g.ReverseWindow, s.cfg.LeaseDuration
	return r
}

// checkedSet is what a decision's record of a check writes: when the bank
// was asked, one more attempt if the call reached it (an open breaker
// postpones a check, it does not spend one), and the next check.
func checkedSet(d Decision, now time.Time) Fields {
	f := Fields{CountAttempt: d.CountAttempt, NextCheckAt: d.NextCheckAt, CountCreditFailure: d.CountCreditFailure, ClearReceipt: d.ClearReceipt,
		ClearReverseSent: d.ClearReverseSent}
	if d.Checked {
		f.LastCheckedAt = &now
	}
	return f
}

func rejectedCode(err error) *int {
	var r *gateway.RejectedError
	if errors.As(err, &r) {
		return &r.Code
	}
	return nil
}

// apply records a decision (not a credit) under the lease tok: the status
// changes through the state machine, or, when it stays, only the
// decision's record is written. Either way the lease is released. If the
// lease is no longer ours, nothing but the release is attempted and the
// row is returned as it stands.
func (s *Service) apply(ctx context.Context, p TopUp, tok string, actor Actor, d Decision) (TopUp, error) {
	set := checkedSet(d, s.clock())
	switch d.Action {
	case ActionMove:
		moved, err := s.move(ctx, p, p.Status, change{to: d.To, actor: actor, reason: d.Reason, gatewayCode: d.GatewayCode, lease: tok, set: set})
		if errors.Is(err, errNotMoved) {
			return s.release(ctx, p, tok, Fields{})
		}
		return moved, err
	case ActionKeep:
		return s.release(ctx, p, tok, set)
	}
	return s.release(ctx, p, tok, Fields{})
}

// credit records a verified payment and credits the wallet, in one
// transaction: the state machine's move to credited, the ledger entry and
// the balance.
//
// The bank saying paid (100, or 101 "already verified") for our authority
// and our amount means the money is ours to credit, whatever this row says
// meanwhile: a payment another actor ended on a stale view is credited,
// not lost. The unique ledger entry per payment and unique (gateway,
// ref_id) keep it to one credit.
func (s *Service) credit(ctx context.Context, p TopUp, tok string, actor Actor, d Decision, held *heldCalls) (TopUp, error) {
	amount := d.CreditedRials
	set := checkedSet(d, s.clock())
	set.RefID, set.VerifiedAmountRials, set.CardPANMasked = &d.RefID, &amount, &d.CardPANMasked
	c := change{to: StatusCredited, actor: actor, reason: d.Reason, gatewayCode: d.GatewayCode, set: set}
	calls := held.take()
	out, was, err := s.st.Credit(ctx, moveOf(p, p.Status, c, s.clock()), p.WalletID, calls)
	if err != nil {
		s.outboxFailed(ctx, p, err)
		// Rolled back: the attempts are written on their own.
		for _, c := range calls {
			held.add(c)
		}
		s.writeHeld(ctx, held)
	}
	switch {
	case err == nil:
		testhook.At(testhook.AfterCredit) // e2e: credited with its webhook rows, nothing delivered
		s.credited.put(out)
		s.observe(p.Gateway, was, c)
		if s.cfg.Observer != nil {
			s.cfg.Observer.Credited(p.Gateway, amount)
		}
		if !was.open() {
			s.log.ErrorContext(ctx, "bank verified a payment that was not open here; credited", "payment", p.PublicID, "was", was, "ref_id", d.RefID)
		}
		s.log.InfoContext(ctx, "payment credited", "payment", p.PublicID, "amount_rials", amount, "ref_id", d.RefID, "actor", actor)
		return out, nil
	case errors.Is(err, errNotMoved), errors.Is(err, wallet.ErrAlreadyCredited):
		return s.release(ctx, p, tok, Fields{}) // someone else credited it: a replay
	case errors.Is(err, ErrReverseSent):
		s.log.ErrorContext(ctx, "the bank verified a payment whose reverse was sent; not credited", "payment", p.PublicID, "ref_id", d.RefID)
		return s.release(ctx, p, tok, Fields{})
	case errors.Is(err, ErrDuplicate):
		// unique (gateway, ref_id): the bank's reference already belongs to
		// another payment. Never credit twice for one bank payment.
		s.log.ErrorContext(ctx, "bank reference already used by another payment", "payment", p.PublicID, "ref_id", d.RefID)
		cur, rerr := s.reload(ctx, p.ID)
		if rerr != nil {
			return p, rerr
		}
		rd := Decide(Input{Step: StepRefReused, Actor: actor, TopUp: cur, Now: s.clock(), Rules: s.checkRules(cur),
			LeaseLost: cur.LeaseOwner != tok, CanReverse: canReverse(s.gw(cur))})
		rd.GatewayCode = d.GatewayCode // the verify's code, on the move's event
		return s.apply(ctx, cur, tok, actor, rd)
	}
	err = fmt.Errorf("credit payment %s: %w", p.PublicID, err)
	s.log.ErrorContext(ctx, "credit of a bank-verified payment failed", "payment", p.PublicID, "ref_id", d.RefID, "failures_before", p.CreditFailures, "err", err)
	cur, rerr := s.reload(ctx, p.ID)
	if rerr != nil {
		return p, err
	}
	fd := Decide(Input{Step: StepCreditFailed, Actor: actor, TopUp: cur, Now: s.clock(), Rules: s.rules(), LeaseLost: cur.LeaseOwner != tok})
	if cur.LeaseOwner != tok {
		fd.NextCheckAt = nil
	}
	if _, aerr := s.apply(ctx, cur, tok, actor, fd); aerr != nil {
		s.log.ErrorContext(ctx, "record a failed credit", "payment", p.PublicID, "err", aerr)
	}
	escalated := fd.Action == ActionMove
	if escalated {
		s.log.ErrorContext(ctx, "credit failed repeatedly: the payment goes to review", "payment", p.PublicID, "failures", cur.CreditFailures+1)
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.CreditFailed(p.Gateway, escalated)
	}
	return p, err
}
