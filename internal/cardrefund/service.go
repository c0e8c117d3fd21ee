package cardrefund

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Deps are what the service is built with.
type Deps struct {
	Store Store
	// Gateways are the instance's gateways (each through its resilient
	// caller): a card refund goes through its top-up's.
	Gateways gateway.Set
	// Capabilities are a gateway's records by name (drivers.Lookup).
	Capabilities func(name string) (gateway.Capabilities, bool)
	// TopUpView is a top-up as the API shows it (the webhook's "topup").
	TopUpView func(ctx context.Context, t TopUp) (any, error)
	// Now is the instance's clock (the database's).
	Now func() time.Time
	Log *slog.Logger
	// Config tunes the lifecycle (zero: DefaultConfig).
	Config Config
	// Jitter draws the back-off's jitter in [0, 1) (nil: random).
	Jitter func() float64
}

// Service is the card refund's use cases: the offer, an admin's start and
// review, and the worker's resolution of what is unknown.
type Service struct {
	d   Deps
	cfg Config
}

// New returns the service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Jitter == nil {
		d.Jitter = rand.Float64 // #nosec G404 -- spreads retries in time; no secret
	}
	if d.TopUpView == nil {
		d.TopUpView = func(context.Context, TopUp) (any, error) { return nil, nil }
	}
	cfg := d.Config
	if cfg == (Config{}) {
		cfg = DefaultConfig()
	}
	return &Service{d: d, cfg: cfg}
}

// Config is the service's tuning.
func (s *Service) Config() Config { return s.cfg }

// Standing is a top-up's card refunds and what may go back now.
type Standing struct {
	TopUp   TopUp
	Offer   Offer
	Refunds []CardRefund
}

// Offer reads what may go back to the card of the top-up publicID now, and
// its card refunds (ErrTopUpNotFound).
func (s *Service) Offer(ctx context.Context, publicID string) (Standing, error) {
	t, err := s.d.Store.TopUp(ctx, publicID)
	if err != nil {
		return Standing{}, err
	}
	f, err := s.facts(ctx, t)
	if err != nil {
		return Standing{}, err
	}
	list, err := s.d.Store.OfTopUp(ctx, t.ID)
	if err != nil {
		return Standing{}, err
	}
	return Standing{TopUp: t, Offer: OfferFor(f, s.cfg), Refunds: list}, nil
}

// ToCard is what of the top-up topUpID went back to its card, as its
// payer's receipt says it: refunded (the bank accepted it) and on its
// way (held, sent, or waiting for a person); a failed one went back to
// the wallet and counts in neither.
func (s *Service) ToCard(ctx context.Context, topUpID int64) (refunded, onItsWay int64, err error) {
	list, err := s.d.Store.OfTopUp(ctx, topUpID)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range list {
		switch c.Status {
		case StatusRefunded:
			refunded += c.AmountRials
		case StatusFailed:
		default:
			onItsWay += c.AmountRials
		}
	}
	return refunded, onItsWay, nil
}

func (s *Service) facts(ctx context.Context, t TopUp) (Facts, error) {
	open, refunded, available, err := s.d.Store.Standing(ctx, t)
	if err != nil {
		return Facts{}, err
	}
	f := Facts{TopUp: t, Open: open, RefundedRials: refunded, AvailableRials: available, Now: s.d.Now()}
	f.Capabilities, f.Known = s.capabilities(t.Gateway)
	f.CanRefund = s.canRefund(t.Gateway)
	return f, nil
}

func (s *Service) capabilities(gw string) (gateway.Capabilities, bool) {
	if s.d.Capabilities == nil {
		return gateway.Capabilities{}, false
	}
	return s.d.Capabilities(gw)
}

func (s *Service) canRefund(gw string) bool {
	g, ok := s.d.Gateways.Get(gw)
	return ok && g.Ops().Refund != nil
}

// StartRequest is an admin's refund to the card. The admin's second
// factor is the caller's to check, before.
type StartRequest struct {
	TopUpPublicID string
	AmountRials   int64
	AdminID       int64
	Note          string
}

// maxNote bounds an admin's note, in characters.
const maxNote = 500

// checkNote is an admin's note as kept: required, at most maxNote
// characters, nothing invisible.
func checkNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	if note == "" || utf8.RuneCountInString(note) > maxNote || usertext.CheckNote(note) != nil {
		return "", ErrNoteRequired
	}
	return note, nil
}

// Start refunds r.AmountRials of a credited top-up to the card: it holds
// the amount on the wallet with the card refund's row (one transaction),
// then sends the call once and records what the bank said. It returns the
// card refund as the bank left it: refunded, failed, or still unknown
// (submitted: the worker asks the bank's record).
func (s *Service) Start(ctx context.Context, r StartRequest) (CardRefund, error) {
	note, err := checkNote(r.Note)
	if err != nil {
		return CardRefund{}, err
	}
	t, err := s.d.Store.TopUp(ctx, r.TopUpPublicID)
	if err != nil {
		return CardRefund{}, err
	}
	if t.UserID == r.AdminID {
		return CardRefund{}, ErrOwnTopUp
	}
	f, err := s.facts(ctx, t)
	if err != nil {
		return CardRefund{}, err
	}
	o := OfferFor(f, s.cfg)
	if err := o.Check(r.AmountRials); err != nil {
		if o.Why == WhyInProgress {
			return CardRefund{}, ErrInProgress
		}
		return CardRefund{}, err
	}
	now := s.d.Now()
	pub := NewPublicID()
	tid := t.ID
	c, err := s.d.Store.Create(ctx, Draft{PublicID: pub, TopUp: t, Method: o.Method, AmountRials: r.AmountRials,
		RefundedBeforeRials: f.RefundedRials, AdminID: r.AdminID, Note: note, HoldUntil: now.Add(s.cfg.HoldFor),
		// The worker takes it over only if this request dies before sending.
		NextCheckAt: now.Add(s.cfg.Lease), Now: now,
		Audit: audit.Entry{AdminID: r.AdminID, Action: audit.ActionCardRefund, TopUpID: &tid, TargetUserID: &t.UserID,
			Note: fmt.Sprintf("%s %d rials (%s): %s", pub, r.AmountRials, o.Method, note), ToStatus: string(StatusHeld),
			Result: audit.ResultDone, CreatedAt: now}})
	if err != nil {
		return CardRefund{}, err
	}
	s.d.Log.WarnContext(ctx, "card refund started", "card_refund", c.PublicID, "topup", t.PublicID, "amount", c.AmountRials,
		"method", c.Method, "admin", r.AdminID)
	testhook.At(testhook.AfterCardRefundHold) // e2e: held, not sent
	lease := lifecycle.NewLeaseToken()
	c, ok, err := s.d.Store.TakeLease(ctx, c.ID, []Status{StatusHeld}, lease, now.Add(s.cfg.Lease), now)
	if err != nil || !ok {
		return c, err // the worker has it
	}
	return s.send(ctx, c, t, byAdmin(r.AdminID), lease)
}

// by is who acts on a card refund: the worker, or an admin (whose id
// each event of the act records: the outcome of an admin's "ask the bank
// again" says which admin asked).
type by struct {
	actor Actor
	admin int64
}

var byWorker = by{actor: ActorWorker}

func byAdmin(id int64) by { return by{actor: ActorAdmin, admin: id} }

// adminID is the admin's id for an event (0: not an admin's act).
func (b by) adminID() int64 {
	if b.actor != ActorAdmin {
		return 0
	}
	return b.admin
}

// input is what the bank is asked with about c.
func input(c CardRefund, t TopUp) gateway.RefundInput {
	return gateway.RefundInput{
		Payment: gateway.VerifyInput{Authority: t.Authority, AmountRials: t.AmountRials, OrderID: t.PublicID,
			Receipt: t.Receipt, ReceiptConfirmed: t.Receipt != ""},
		RefID: t.RefID, AmountRials: c.AmountRials, RefundedRials: c.RefundedBeforeRials, Reference: c.PublicID,
	}
}

// send sends a held card refund, whose lease the caller holds: the
// attempt recorded first (held → submitted), then the one call, then what
// it said.
func (s *Service) send(ctx context.Context, c CardRefund, t TopUp, who by, lease string) (CardRefund, error) {
	now := s.d.Now()
	caps, _ := s.capabilities(t.Gateway)
	if step, ok := BeforeSend(c, t, caps, s.canRefund(t.Gateway), now, s.cfg); !ok {
		return s.apply(ctx, c, t, StatusHeld, step, who, lease, nil)
	}
	c, err := s.d.Store.Move(ctx, Move{CardRefund: c, From: StatusHeld, To: StatusSubmitted, Actor: who.actor, Reason: ReasonSent,
		Lease: lease, KeepLease: true, Sent: true, AdminID: who.adminID(), Now: now})
	if err != nil {
		return c, err
	}
	testhook.At(testhook.BeforeCardRefundCall) // e2e: submitted, never sent
	g := s.d.Gateways.For(t.Gateway)
	refund := g.Ops().Refund
	var res gateway.RefundResult
	callErr := fmt.Errorf("%s: %w", t.Gateway, gateway.ErrUnavailable)
	if refund != nil {
		res, callErr = refund(resilient.WithRef(ctx, t.PublicID), input(c, t))
	}
	if callErr == nil {
		testhook.At(testhook.AfterCardRefundAccepted) // e2e: the bank refunded, nothing recorded
	}
	step := AfterCall(c, callErr, s.d.Now(), s.cfg, s.d.Jitter())
	if callErr != nil && step.Stay {
		s.d.Log.WarnContext(ctx, "card refund: outcome unknown, the bank will be asked", "card_refund", c.PublicID, "err", callErr)
	}
	return s.apply(ctx, c, t, StatusSubmitted, step, who, lease, &res)
}

// apply writes a decided step of c, which is in from and whose lease
// lease holds.
func (s *Service) apply(ctx context.Context, c CardRefund, t TopUp, from Status, step Step, who by, lease string, res *gateway.RefundResult) (CardRefund, error) {
	now := s.d.Now()
	if step.Stay {
		if err := s.d.Store.Schedule(ctx, c.ID, lease, step.NextCheck, false, now); err != nil {
			return c, err
		}
		return s.d.Store.Get(ctx, c.ID)
	}
	m := Move{CardRefund: c, From: from, To: step.To, Actor: who.actor, Reason: step.Reason, Lease: lease, BankCode: step.Code,
		AdminID: who.adminID(), Now: now}
	if res != nil {
		m.BankReference = res.BankReference
	}
	if step.To.Open() {
		next := step.NextCheck
		if next.IsZero() {
			next = now
		}
		m.NextCheckAt = &next
	}
	if step.To == StatusRefunded {
		v, err := s.d.TopUpView(ctx, t)
		if err != nil {
			return c, fmt.Errorf("card refund %s: the top-up's view: %w", c.PublicID, err)
		}
		m.TopUpView = v
	}
	moved, err := s.d.Store.Move(ctx, m)
	if errors.Is(err, ErrNotMoved) {
		// Another actor recorded it first (a late answer of an actor whose
		// lease ran out): what it recorded stands.
		now, gerr := s.d.Store.Get(ctx, c.ID)
		if gerr == nil && step.To == StatusRefunded && (now.Status == StatusFailed || now.Status == StatusNeedsReview) {
			// The bank's definite "made" came too late to be recorded, and
			// the row says otherwise (failed: the money given back to the
			// wallet too; or in review): a person must know.
			s.d.Log.ErrorContext(ctx, "card refund: the bank accepted it, but the row had moved on; the money may be out twice",
				"card_refund", c.PublicID, "status", now.Status, "reason", now.StatusReason, "bank_reference", m.BankReference)
			// And on a failed card refund itself, for the admin who opens it,
			// with the bank's reference of the refund it made (one in review still holds its money: the admin's review
			// decides it, and its reason stays).
			if now.Status == StatusFailed {
				if _, err := s.d.Store.Note(ctx, c.ID, now.Status, who.actor, ReasonBankAcceptedLate, m.BankReference, s.d.Now()); err != nil {
					s.d.Log.ErrorContext(ctx, "card refund: the late acceptance could not be noted", "card_refund", c.PublicID, "err", err)
				}
			}
		}
		return now, gerr
	}
	if err != nil {
		return c, err
	}
	s.d.Log.InfoContext(ctx, "card refund moved", "card_refund", c.PublicID, "from", from, "to", step.To, "reason", step.Reason)
	return moved, nil
}

// check asks the bank's record about a submitted card refund whose
// answer never came, and records what it says.
func (s *Service) check(ctx context.Context, c CardRefund, t TopUp, who by, lease string) (CardRefund, error) {
	status := s.d.Gateways.For(t.Gateway).Ops().RefundStatus
	var st gateway.RefundState
	err := fmt.Errorf("%s: no refund status: %w", t.Gateway, gateway.ErrUnavailable)
	if status != nil {
		st, err = status(resilient.WithRef(ctx, t.PublicID), input(c, t))
	}
	now := s.d.Now()
	step := AfterStatus(c, st, err, now, s.cfg, s.d.Jitter())
	if step.Stay {
		if err := s.d.Store.Schedule(ctx, c.ID, lease, step.NextCheck, status != nil, now); err != nil {
			return c, err
		}
		return s.d.Store.Get(ctx, c.ID)
	}
	return s.apply(ctx, c, t, StatusSubmitted, step, who, lease, nil)
}

// Resolve works one card refund for the worker: a held one is sent (or,
// never sent within the budget, failed), a submitted one is asked about.
// ended reports that it is resolved.
func (s *Service) Resolve(ctx context.Context, id int64) (ended bool, err error) {
	c, err := s.d.Store.Get(ctx, id)
	if err != nil {
		return false, err
	}
	if c.Status != StatusHeld && c.Status != StatusSubmitted {
		return c.Status.Terminal(), nil
	}
	now := s.d.Now()
	lease := lifecycle.NewLeaseToken()
	c, ok, err := s.d.Store.TakeLease(ctx, c.ID, []Status{StatusHeld, StatusSubmitted}, lease, now.Add(s.cfg.Lease), now)
	if err != nil || !ok {
		return false, err
	}
	t, err := s.d.Store.TopUpByID(ctx, c.TopUpID)
	if err != nil {
		return false, err
	}
	switch c.Status {
	case StatusHeld:
		if step, never := NeverSent(c, now, s.cfg); never {
			c, err = s.apply(ctx, c, t, StatusHeld, step, byWorker, lease, nil)
		} else {
			c, err = s.send(ctx, c, t, byWorker, lease)
		}
	default:
		c, err = s.check(ctx, c, t, byWorker, lease)
	}
	return c.Status.Terminal(), err
}

// Recheck is an admin's "ask the bank again" about a card refund under
// review: back to submitted, and the bank's record asked now.
func (s *Service) Recheck(ctx context.Context, publicID string, adminID int64) (CardRefund, error) {
	c, t, lease, err := s.review(ctx, publicID, 0)
	if err != nil {
		return c, err
	}
	now := s.d.Now()
	tid := t.ID
	moved, err := s.d.Store.Move(ctx, Move{CardRefund: c, From: StatusNeedsReview, To: StatusSubmitted, Actor: ActorAdmin,
		Reason: ReasonAdminRecheck, Lease: lease, KeepLease: true, AdminID: adminID, Now: now,
		Audit: &audit.Entry{AdminID: adminID, Action: audit.ActionCardRefundRecheck, TopUpID: &tid, Note: c.PublicID,
			FromStatus: string(StatusNeedsReview), ToStatus: string(StatusSubmitted), Result: audit.ResultDone, CreatedAt: now}})
	if err != nil {
		return s.lapsed(ctx, c, err)
	}
	return s.check(ctx, moved, t, byAdmin(adminID), lease)
}

// Close is an admin's word on a card refund under review, read from the
// bank's own panel: made (refunded) or not (failed), with a note. Not
// made releases the amount to the wallet, so the bank is asked first,
// under the lease (askBeforeNotMade): the close goes on only on its
// definite word that the refund was not made, and only once that word
// is believed, NotDoneAfter after the call, as the worker's
// (ErrBankMadeIt, ErrBankNoAnswer or ErrTooEarlyToCloseNotMade otherwise,
// the amount still held).
func (s *Service) Close(ctx context.Context, publicID string, adminID int64, made bool, note string) (CardRefund, error) {
	note, err := checkNote(note)
	if err != nil {
		return CardRefund{}, err
	}
	c, t, lease, err := s.review(ctx, publicID, adminID)
	if err != nil {
		return c, err
	}
	if !made {
		if err := s.askBeforeNotMade(ctx, c, t); err != nil {
			// Nothing written but the question: the lease given back.
			now := s.d.Now()
			next := now
			if c.NextCheckAt != nil {
				next = *c.NextCheckAt
			}
			if serr := s.d.Store.Schedule(ctx, c.ID, lease, next, false, now); serr != nil {
				return c, errors.Join(err, serr)
			}
			cur, gerr := s.d.Store.Get(ctx, c.ID)
			if gerr != nil {
				return c, errors.Join(err, gerr)
			}
			return cur, err
		}
	}
	now := s.d.Now()
	tid := t.ID
	to, reason, action := StatusFailed, ReasonAdminClosed, audit.ActionCardRefundClose
	if made {
		to, reason, action = StatusRefunded, ReasonAdminConfirmed, audit.ActionCardRefundConfirm
	}
	m := Move{CardRefund: c, From: StatusNeedsReview, To: to, Actor: ActorAdmin, Reason: reason, Lease: lease, AdminID: adminID, Now: now,
		Audit: &audit.Entry{AdminID: adminID, Action: action, TopUpID: &tid, Note: c.PublicID + ": " + note,
			FromStatus: string(StatusNeedsReview), ToStatus: string(to), Result: audit.ResultDone, CreatedAt: now}}
	if made {
		if m.TopUpView, err = s.d.TopUpView(ctx, t); err != nil {
			return c, err
		}
	}
	moved, err := s.d.Store.Move(ctx, m)
	if err != nil {
		return s.lapsed(ctx, c, err)
	}
	return moved, nil
}

// askBeforeNotMade asks the bank's record about c, under the lease the
// caller holds, before an admin closes it as not made, within half the
// lease (the move needs the rest). nil only on the bank's definite word
// that it was not made: the refund call has no idempotency key
// (Zarinpal), and a refund made there and released here too is the
// money out twice. That word is "not made" (the bank's
// refunded total is what it was before ours), or figures that differ
// but are short of what they would be had ours been made (a refund in
// the bank's panel meanwhile, ours not among them: totals only grow).
// The bank's word that it was made, or figures that differ and could
// hold ours (or that it does not give): ErrBankMadeIt. No answer, or no
// way to ask (the gateway no longer configured): ErrBankNoAnswer. And
// the bank's "not made" is believed no sooner than the worker believes
// it (NotMadeFrom: NotDoneAfter after the call): a refund it accepted may
// show as not made, or be missing from its figures, for a while (pending
// at Zarinpal); sooner, a *TooEarlyError (ErrTooEarlyToCloseNotMade, and
// ErrBankNoAnswer too).
func (s *Service) askBeforeNotMade(ctx context.Context, c CardRefund, t TopUp) error {
	status := s.d.Gateways.For(t.Gateway).Ops().RefundStatus
	if status == nil {
		s.d.Log.WarnContext(ctx, "card refund: close as not made refused: the bank cannot be asked", "card_refund", c.PublicID, "gateway", t.Gateway)
		return ErrBankNoAnswer
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.Lease/2)
	st, err := status(resilient.WithRef(sctx, t.PublicID), input(c, t))
	cancel()
	if err != nil {
		s.d.Log.WarnContext(ctx, "card refund: close as not made refused: the bank did not answer", "card_refund", c.PublicID, "err", err)
		return ErrBankNoAnswer
	}
	notMade := false
	switch st.Outcome {
	case gateway.RefundNotDone:
		notMade = true
	case gateway.RefundDiffers:
		notMade = st.RefundedRials >= 0 && st.RefundedRials < c.RefundedBeforeRials+c.AmountRials
	case gateway.RefundDone:
	default:
		s.d.Log.WarnContext(ctx, "card refund: close as not made refused: a word of the bank none known", "card_refund", c.PublicID, "outcome", st.Outcome)
		return ErrBankNoAnswer
	}
	if !notMade {
		s.d.Log.WarnContext(ctx, "card refund: close as not made refused: the bank's record may hold it made", "card_refund", c.PublicID,
			"outcome", st.Outcome, "code", st.Code, "refunded_rials", st.RefundedRials)
		return ErrBankMadeIt
	}
	if from := NotMadeFrom(c, s.cfg); s.d.Now().Before(from) {
		s.d.Log.WarnContext(ctx, "card refund: close as not made refused: too soon after the call to believe the bank's word", "card_refund", c.PublicID,
			"outcome", st.Outcome, "refunded_rials", st.RefundedRials, "closable_from", from)
		return &TooEarlyError{From: from}
	}
	return nil
}

// lapsed is an admin's move refused for ErrNotMoved: the lease taken by
// review lapsed before the move (a stalled database) and the worker took
// the card refund. Nothing was written: ErrNotUnderReview when it has
// moved on, ErrBusy while the worker holds it; any other error as it is.
func (s *Service) lapsed(ctx context.Context, c CardRefund, err error) (CardRefund, error) {
	if !errors.Is(err, ErrNotMoved) {
		return c, err
	}
	cur, gerr := s.d.Store.Get(ctx, c.ID)
	if gerr != nil {
		return c, errors.Join(err, gerr)
	}
	if cur.Status != StatusNeedsReview {
		return cur, ErrNotUnderReview
	}
	return cur, ErrBusy
}

// review takes the lease of a card refund under review; closer, when
// not 0, is the admin who would close it, refused on their own.
func (s *Service) review(ctx context.Context, publicID string, closer int64) (CardRefund, TopUp, string, error) {
	c, err := s.d.Store.ByPublicID(ctx, publicID)
	if err != nil {
		return CardRefund{}, TopUp{}, "", err
	}
	if closer != 0 && c.UserID == closer {
		return c, TopUp{}, "", ErrOwnTopUp
	}
	if c.Status != StatusNeedsReview {
		return c, TopUp{}, "", ErrNotUnderReview
	}
	now := s.d.Now()
	lease := lifecycle.NewLeaseToken()
	c, ok, err := s.d.Store.TakeLease(ctx, c.ID, []Status{StatusNeedsReview}, lease, now.Add(s.cfg.Lease), now)
	if err != nil {
		return c, TopUp{}, "", err
	}
	if !ok {
		return c, TopUp{}, "", ErrBusy
	}
	t, err := s.d.Store.TopUpByID(ctx, c.TopUpID)
	return c, t, lease, err
}

// AwaitingAdmin counts the refunds under review (their amount held from
// the payer's wallet until an admin resolves them), with when the one
// waiting longest went to review.
func (s *Service) AwaitingAdmin(ctx context.Context) (int64, time.Time, error) {
	return s.d.Store.AwaitingAdmin(ctx)
}

// UnderReview lists the refunds under review, oldest first (at most
// limit): the admin's dashboard links each to its top-up's page.
func (s *Service) UnderReview(ctx context.Context, limit int) ([]Waiting, error) {
	return s.d.Store.UnderReview(ctx, limit)
}

// Get reads a card refund by its public id, with its events.
func (s *Service) Get(ctx context.Context, publicID string) (CardRefund, []Event, error) {
	c, err := s.d.Store.ByPublicID(ctx, publicID)
	if err != nil {
		return c, nil, err
	}
	evs, err := s.d.Store.EventsOf(ctx, c.ID)
	return c, evs, err
}
