package charge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/email"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Config are the charges' rules.
type Config struct {
	// BaseURL is the app's address (BASE_URL), for checkout_url.
	BaseURL string
	// CheckoutTTL is how long a checkout waits for the payer (30
	// minutes).
	CheckoutTTL time.Duration
	// HoldTTL is how long an authorization holds the payer's money
	// (CHARGE_HOLD_HOURS, 168 hours).
	HoldTTL time.Duration
}

// Hooks are told of committed moves (to wake the webhook sender, the
// metrics); nil: nothing is.
type Hooks struct {
	WebhookQueued func()
	Observer      Observer
}

// Observer learns of every committed charge move (the metrics), after
// its transaction; replays and refused moves that wrote nothing are not
// moves.
type Observer interface {
	// ChargeMoved: a charge was created, confirmed (succeeded or
	// authorized), captured, canceled, expired or refunded (ObservedMove)
	// by actor. rials is the money the move took to the merchant (an
	// automatic confirm, a capture) or gave back to the payer (a
	// refund); 0 for the others.
	ChargeMoved(move ObservedMove, actor Actor, rials int64)
}

// ObservedMove names a committed move for the metrics.
type ObservedMove string

// The observed moves.
const (
	MoveCreated   ObservedMove = "created"
	MoveConfirmed ObservedMove = "confirmed"
	MoveCaptured  ObservedMove = "captured"
	MoveCanceled  ObservedMove = "canceled"
	MoveExpired   ObservedMove = "expired"
	MoveRefunded  ObservedMove = "refunded"
)

// observedMove is the name of an applied decision d, and the rials it
// took to the merchant.
func observedMove(d Decision, c Charge) (ObservedMove, int64) {
	switch d.To {
	case StatusSucceeded:
		if d.Money == MoneyCapture {
			return MoveCaptured, d.CaptureRials
		}
		return MoveConfirmed, c.AmountRials
	case StatusAuthorized:
		return MoveConfirmed, 0
	case StatusCanceled:
		return MoveCanceled, 0
	default:
		return MoveExpired, 0
	}
}

func (s *Service) observe(m ObservedMove, actor Actor, rials int64) {
	if s.hooks.Observer != nil {
		s.hooks.Observer.ChargeMoved(m, actor, rials)
	}
}

// Service is the one use case of merchants and charges: the API, the
// checkout page, the merchant's page, the admin console, the CLI and the
// worker call it and nothing else. Its methods:
//
// Merchants:
//   - MakeMerchant(ctx, userID, name, by): makes a user a merchant with a
//     display name and a merchant ledger account (again: renames it);
//     MakeMerchantByEmail is the CLI's form.
//   - Merchant(ctx, userID): the merchant with its balance (posted, held,
//     AvailableRials); ErrNotMerchant for a user who is not one.
//
// The merchant's calls (merchantUserID is the caller; another merchant's
// charge is ErrNotFound):
//   - Create(ctx, CreateRequest): a charge requires_confirmation, once per
//     Idempotency token (a replay answers the first, Replayed) and per
//     order id (ErrOrderIDTaken).
//   - Get(ctx, merchantUserID, publicID): one charge with its refunds.
//   - List(ctx, Filter): a page of charges, newest first, by status, with
//     a cursor (the next page's Before).
//   - Capture(ctx, merchantUserID, publicID, amountRials): an authorized
//     charge captured once (succeeded, captured_rials = amount, the rest
//     released); a second capture of that amount answers with the first,
//     of another amount it is ErrCapturedOtherAmount; past its hold's
//     time the charge expires and the capture is ErrExpired.
//   - Cancel(ctx, merchantUserID, publicID): a checkout or an
//     authorization canceled once (its hold released); a replay answers
//     the first; a succeeded charge is ErrNotCancelable (refund it).
//   - Refund(ctx, RefundRequest): a refund of a succeeded charge, partial
//     and repeated, total ≤ captured (ErrRefundExceeds), merchant →
//     payer wallet (ErrInsufficientFunds when the merchant is short);
//     once per token (Replayed).
//   - Events(ctx, chargeID): a charge's history.
//
// The payer's checkout (/checkout/{id}; payerUserID is the signed-in
// person):
//   - Checkout(ctx, publicID): the charge as the checkout shows it (the
//     merchant's name, amount, description), whoever asks.
//   - Confirm(ctx, payerUserID, publicID): pays (automatic capture →
//     succeeded, payer wallet → merchant account) or authorizes (manual →
//     authorized, a hold on the payer's wallet for HoldTTL); confirmed
//     twice, or from two tabs, it is paid once (the second answers the
//     first); ErrInsufficientFunds writes nothing (the page offers a
//     top-up and comes back); past 30 minutes it expires (ErrExpired).
//   - CancelCheckout(ctx, payerUserID, publicID): the payer cancels an
//     unconfirmed checkout.
//   - ReturnTarget(c) (a function): where the browser goes after (return_url with
//     charge_id and status).
//
// Others:
//   - ExpireDue(ctx, limit): the worker's round: checkouts unconfirmed
//     after CheckoutTTL and authorizations past their hold end expired
//     (their holds expired), each in its own transaction, going past
//     those that fail. ExpirySweep(): one tick's rounds of it, each after
//     the last charge the round before read.
//   - ByReferences(ctx, payerUserID, refs): the charges of a payer's
//     wallet history rows (kinds charge, capture, refund), for the labels
//     "paid to {merchant}" and "refund from {merchant}".
//   - Search(ctx, q, limit) and Admin(ctx, publicID): the admin console's
//     (by public id, order id or either party's e-mail).
//   - View(c): the API's and the webhooks' view of a charge.
//
// Every state change is one transaction (charge row, event, ledger,
// outbox): see the package comment.
type Service struct {
	st    Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
	hooks Hooks
}

// New returns the service over its store.
func New(st Store, cfg Config, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.CheckoutTTL <= 0 {
		cfg.CheckoutTTL = DefaultCheckoutTTL
	}
	if cfg.HoldTTL <= 0 {
		cfg.HoldTTL = DefaultHoldTTL
	}
	return &Service{st: st, cfg: cfg, now: now, log: log}
}

// WithHooks sets what is told of committed moves.
func (s *Service) WithHooks(h Hooks) *Service { s.hooks = h; return s }

// Config is the service's rules.
func (s *Service) Config() Config { return s.cfg }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// View is c as the API and the webhooks show it.
func (s *Service) View(c Charge) View { return ViewOf(c, s.cfg.BaseURL) }

func (s *Service) anyView(c Charge) any { return s.View(c) }

func (s *Service) kick() {
	if s.hooks.WebhookQueued != nil {
		s.hooks.WebhookQueued()
	}
}

// ---- merchants ----

// MakeMerchant makes user userID a merchant named name (by: the admin,
// nil for the CLI); created is false when it was one (renamed).
func (s *Service) MakeMerchant(ctx context.Context, userID int64, name string, by *int64) (Merchant, bool, error) {
	if by != nil && *by == userID {
		return Merchant{}, false, ErrOwnMerchant
	}
	name = strings.TrimSpace(name)
	if err := CheckDisplayName(name); err != nil {
		return Merchant{}, false, err
	}
	return s.st.MakeMerchant(ctx, userID, name, by, s.clock())
}

// MakeMerchantByEmail is MakeMerchant of the user of addr (ErrNotFound:
// no such user).
func (s *Service) MakeMerchantByEmail(ctx context.Context, addr, name string) (Merchant, bool, error) {
	norm, err := email.Normalize(strings.TrimSpace(addr))
	if err != nil {
		return Merchant{}, false, ErrNotFound
	}
	id, err := s.st.UserByEmail(ctx, norm)
	if err != nil {
		return Merchant{}, false, err
	}
	return s.MakeMerchant(ctx, id, name, nil)
}

// Merchant reads the merchant of userID with its balance.
func (s *Service) Merchant(ctx context.Context, userID int64) (Merchant, error) {
	return s.st.Merchant(ctx, userID)
}

// ---- the merchant's calls ----

// CreateRequest is one charge to make.
type CreateRequest struct {
	MerchantUserID int64
	// FormToken makes the request happen once: derived from the API's
	// Idempotency-Key (or a page's form token).
	FormToken   string
	AmountRials int64
	Description string
	OrderID     string
	// ReturnURL is where the payer goes after, already checked against
	// the merchant's return origins ("" : none).
	ReturnURL string
	Capture   CaptureMethod
}

// Result is a write's answer.
type Result struct {
	Charge Charge
	// Replayed: the token had made it already; nothing new was written.
	Replayed bool
}

// Check applies the rules of a request that need no database.
func (r CreateRequest) Check() error {
	if err := CheckAmount(r.AmountRials); err != nil {
		return err
	}
	if r.Capture != CaptureAutomatic && r.Capture != CaptureManual {
		return ErrBadCapture
	}
	if err := CheckOrderID(r.OrderID); err != nil {
		return err
	}
	return CheckDescription(r.Description)
}

// Create makes a charge waiting for the payer (requires_confirmation,
// expiring after CheckoutTTL).
func (s *Service) Create(ctx context.Context, r CreateRequest) (Result, error) {
	if r.FormToken == "" || len(r.FormToken) > 64 {
		return Result{}, ErrBadToken
	}
	if err := r.Check(); err != nil {
		return Result{}, err
	}
	if _, err := s.st.Merchant(ctx, r.MerchantUserID); err != nil {
		return Result{}, err
	}
	now := s.clock()
	c := Charge{PublicID: NewPublicID(), MerchantUserID: r.MerchantUserID, AmountRials: r.AmountRials,
		Description: r.Description, OrderID: r.OrderID, ReturnURL: r.ReturnURL, Capture: r.Capture,
		Status: StatusRequiresConfirmation, ExpiresAt: now.Add(s.cfg.CheckoutTTL), CreatedAt: now, UpdatedAt: now}
	err := s.st.Insert(ctx, &c, r.FormToken)
	if errors.Is(err, ErrDuplicate) {
		first, ferr := s.st.ByToken(ctx, r.MerchantUserID, r.FormToken)
		if ferr != nil {
			return Result{}, errors.Join(err, ferr)
		}
		if first.AmountRials != r.AmountRials || first.OrderID != r.OrderID || first.Description != r.Description ||
			first.ReturnURL != r.ReturnURL || first.Capture != r.Capture {
			return Result{Charge: first}, ErrTokenReused
		}
		return Result{Charge: first, Replayed: true}, nil
	}
	if err != nil {
		return Result{}, err
	}
	s.observe(MoveCreated, ActorMerchant, 0)
	s.log.InfoContext(ctx, "charge created", "charge", c.PublicID, "amount_rials", c.AmountRials)
	c.Refunds = []Refund{}
	return Result{Charge: c}, nil
}

// Get reads the merchant's charge with its refunds.
func (s *Service) Get(ctx context.Context, merchantUserID int64, publicID string) (Charge, error) {
	c, err := s.st.Get(ctx, publicID)
	if err != nil {
		return Charge{}, err
	}
	if c.MerchantUserID != merchantUserID {
		return Charge{}, ErrNotFound
	}
	return c, nil
}

// List reads a page of charges by f (f.MerchantUserID: the merchant's).
func (s *Service) List(ctx context.Context, f Filter) ([]Charge, int64, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, 0, fmt.Errorf("charge: unknown status %q", f.Status)
	}
	return s.st.List(ctx, f)
}

// Events reads a charge's history, oldest first.
func (s *Service) Events(ctx context.Context, chargeID int64) ([]Event, error) {
	return s.st.Events(ctx, chargeID)
}

// move runs one decided move and interprets its decision.
func (s *Service) move(ctx context.Context, publicID string, merchantUserID int64, actor Actor, r Request) (Result, error) {
	return s.moveWith(ctx, Move{PublicID: publicID, MerchantUserID: merchantUserID, Actor: actor, Request: r})
}

// moveWith runs move m (its time, hold and view filled in here).
func (s *Service) moveWith(ctx context.Context, m Move) (Result, error) {
	m.Request.Now, m.HoldTTL, m.View = s.clock(), s.cfg.HoldTTL, s.anyView
	actor := m.Actor
	c, d, err := s.st.Move(ctx, m)
	if err != nil {
		return Result{Charge: c}, err
	}
	if d.Apply {
		s.kick()
		m, rials := observedMove(d, c)
		s.observe(m, actor, rials)
		s.log.InfoContext(ctx, "charge moved", "charge", c.PublicID, "status", c.Status, "actor", actor)
	}
	if d.Err != nil {
		return Result{Charge: c}, d.Err
	}
	return Result{Charge: c, Replayed: d.Replay}, nil
}

// Capture captures amountRials of the merchant's authorized charge, once.
func (s *Service) Capture(ctx context.Context, merchantUserID int64, publicID string, amountRials int64) (Result, error) {
	return s.move(ctx, publicID, merchantUserID, ActorMerchant, Request{Action: ActCapture, AmountRials: amountRials})
}

// Cancel cancels the merchant's charge (a checkout, or an authorization
// whose hold is released), once.
func (s *Service) Cancel(ctx context.Context, merchantUserID int64, publicID string) (Result, error) {
	return s.move(ctx, publicID, merchantUserID, ActorMerchant, Request{Action: ActCancel})
}

// RefundRequest is one refund to make.
type RefundRequest struct {
	MerchantUserID int64
	ChargeID       string // the charge's public id
	// FormToken makes the refund happen once (from the Idempotency-Key).
	FormToken   string
	AmountRials int64
}

// RefundResult is Refund's answer: the charge after, and the refund.
type RefundResult struct {
	Charge   Charge
	Refund   Refund
	Replayed bool
}

// Refund gives amountRials of a succeeded charge back to its payer.
func (s *Service) Refund(ctx context.Context, r RefundRequest) (RefundResult, error) {
	if r.FormToken == "" || len(r.FormToken) > 64 {
		return RefundResult{}, ErrBadToken
	}
	if r.AmountRials <= 0 || r.AmountRials > MaxRials {
		return RefundResult{}, ErrBadAmount
	}
	now := s.clock()
	ref := Refund{PublicID: NewRefundID(), AmountRials: r.AmountRials, CreatedAt: now}
	c, got, err := s.st.Refund(ctx, RefundWrite{ChargePublicID: r.ChargeID, MerchantUserID: r.MerchantUserID, Token: r.FormToken,
		Refund: ref, View: s.anyView, RefundView: func(rf Refund, c Charge) any { return RefundViewOf(rf, c.PublicID) }})
	if errors.Is(err, ErrDuplicate) {
		if got.AmountRials != r.AmountRials {
			return RefundResult{Charge: c, Refund: got}, ErrTokenReused
		}
		return RefundResult{Charge: c, Refund: got, Replayed: true}, nil
	}
	if err != nil {
		return RefundResult{}, err
	}
	s.kick()
	s.observe(MoveRefunded, ActorMerchant, got.AmountRials)
	s.log.InfoContext(ctx, "charge refunded", "charge", c.PublicID, "refund", got.PublicID, "amount_rials", got.AmountRials)
	return RefundResult{Charge: c, Refund: got}, nil
}

// ---- the payer's checkout ----

// Checkout reads a charge for its checkout page: the merchant's name,
// the amount and the description (whoever is signed in may see a
// checkout; its link is its secret).
func (s *Service) Checkout(ctx context.Context, publicID string) (Charge, error) {
	return s.st.Get(ctx, publicID)
}

// Confirm pays (automatic) or authorizes (manual) the charge from the
// payer's wallet, once.
func (s *Service) Confirm(ctx context.Context, payerUserID int64, publicID string) (Result, error) {
	return s.move(ctx, publicID, 0, ActorPayer, Request{Action: ActConfirm, PayerUserID: payerUserID})
}

// ConfirmForm is Confirm from the checkout's form, with its per-form
// token (formtoken, as the top-up's and the transfer's forms): a token not
// of a form's shape is ErrBadFormToken; the token is kept with the charge
// it confirms, so that a second submit of the form (a double click,
// another tab, a replay) answers the first result and a token that
// confirmed another charge is ErrFormReused. Neither writes anything.
func (s *Service) ConfirmForm(ctx context.Context, payerUserID int64, publicID, token string) (Result, error) {
	if !formtoken.Valid(token) {
		return Result{}, ErrBadFormToken
	}
	return s.moveWith(ctx, Move{PublicID: publicID, Actor: ActorPayer, Request: Request{Action: ActConfirm, PayerUserID: payerUserID},
		FormToken: token})
}

// CancelCheckout cancels an unconfirmed charge at its checkout.
func (s *Service) CancelCheckout(ctx context.Context, payerUserID int64, publicID string) (Result, error) {
	return s.move(ctx, publicID, 0, ActorPayer, Request{Action: ActCancelCheckout, PayerUserID: payerUserID})
}

// ---- the worker, history, admin ----

// ExpireDue expires up to limit charges past their time, each in its own
// transaction; it returns how many it expired, and the failures of those
// it could not expire (the others are expired all the same).
//
// The due charges are read a page of limit at a time in the order of
// their time, then id (Store.Due), each page after the last charge of the
// one before, until limit charges are expired or none is left: a charge
// that cannot expire (its data inconsistent, say its hold ended outside
// its own moves) is gone past and reported, never read again in the same
// call, so that however many of them there are, the charges due after
// them are expired (and their payers' holds released).
//
// Each call starts from the first charge due: one that failed is tried
// again by the next call. The worker's loop, which calls it round after
// round while a round expires a whole batch, uses an ExpirySweep instead,
// whose rounds go on after the last charge the round before read.
func (s *Service) ExpireDue(ctx context.Context, limit int) (int, error) {
	n, _, err := s.expireDue(ctx, limit, nil)
	return n, err
}

// ExpirySweep is one tick of the worker's expiry: its rounds (ExpireDue)
// read on in the charges' (due time, id) order after the last charge the
// round before read, so that a charge that cannot expire is tried once a
// tick, not once a round, and never stands in front of the charges due
// after it. A new sweep (the next tick) starts from the first charge due:
// a charge whose expiry failed is tried again then, never skipped for
// good; its expiry, when it comes, is one transaction from its status, so
// it is applied once. One sweep is for one goroutine; it holds no more
// than its cursor.
type ExpirySweep struct {
	s     *Service
	after *DueCharge
}

// ExpirySweep starts a sweep from the first charge due.
func (s *Service) ExpirySweep() *ExpirySweep { return &ExpirySweep{s: s} }

// ExpireDue is Service.ExpireDue from after the last charge the sweep's
// previous round read (expired, gone past or failed).
func (w *ExpirySweep) ExpireDue(ctx context.Context, limit int) (int, error) {
	n, last, err := w.s.expireDue(ctx, limit, w.after)
	w.after = last
	return n, err
}

// expireDue is ExpireDue from after the charge after (nil: from the
// first); it also returns the last charge it read (after when none).
func (s *Service) expireDue(ctx context.Context, limit int, after *DueCharge) (int, *DueCharge, error) {
	if limit <= 0 {
		limit = 100
	}
	now := s.clock()
	n := 0
	var errs []error
	last := after
	for n < limit {
		page, err := s.st.Due(ctx, now, last, limit)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, d := range page {
			if n == limit {
				break
			}
			if err := ctx.Err(); err != nil {
				return n, last, errors.Join(append(errs, err)...)
			}
			res, err := s.move(ctx, d.PublicID, 0, ActorWorker, Request{Action: ActExpire})
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("expire charge %s (due %s): %w", d.PublicID, d.DueAt.UTC().Format(time.RFC3339), err))
			case !res.Replayed && res.Charge.Status == StatusExpired:
				n++
			}
			last = &d
		}
		if len(page) < limit {
			break
		}
	}
	return n, last, errors.Join(errs...)
}

// ByReferences maps the references of the payer's wallet history rows to
// their charges.
func (s *Service) ByReferences(ctx context.Context, payerUserID int64, refs []string) (map[string]Charge, error) {
	return s.st.ByReferences(ctx, payerUserID, refs)
}

// Search finds charges for the admin console: by public id, by order id,
// or by the e-mail address of the merchant or the payer; newest first.
func (s *Service) Search(ctx context.Context, q string, limit int) ([]Charge, error) {
	return s.st.Search(ctx, strings.TrimSpace(q), limit)
}

// Admin reads any charge by public id, with its refunds.
func (s *Service) Admin(ctx context.Context, publicID string) (Charge, error) {
	return s.st.Get(ctx, publicID)
}

// ValidToken reports whether a page's form token has the shape of one
// (pages pass their hidden token as a request's FormToken).
func ValidToken(t string) bool { return formtoken.Valid(t) }

// ReturnTarget is where the payer's browser goes after the checkout:
// the charge's return_url with charge_id and status set in its query
// ("" when the charge has none).
func ReturnTarget(c Charge) string {
	if c.ReturnURL == "" {
		return ""
	}
	target, err := webhook.ReturnWith(c.ReturnURL, "charge_id", c.PublicID, string(c.Status))
	if err != nil {
		return ""
	}
	return target
}
