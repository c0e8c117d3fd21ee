package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/money"
)

// Errors the web layer turns into pages.
var (
	// ErrAmountTooSmall and ErrAmountTooLarge are money's refusals: the
	// amount rules live in money.Limits alone.
	ErrAmountTooSmall = money.ErrTooSmall
	ErrAmountTooLarge = money.ErrTooLarge
	ErrBadFormToken   = errors.New("form token is missing or malformed")
	// ErrGatewayFailed: the gateway could not start the payment; the
	// payment is failed and no money can have been taken.
	ErrGatewayFailed = errors.New("gateway could not start the payment")
	// ErrStillProcessing: a repeat submit waited for the first one, which is
	// still talking to the bank.
	ErrStillProcessing = errors.New("the first submit of this form is still in progress")
	ErrNotFound        = errors.New("payment not found")
	// ErrAuthorityMismatch: the callback's authority is not this payment's.
	ErrAuthorityMismatch = errors.New("callback authority does not match the payment")
)

// FormReusedError: the form's token was already used for another amount.
type FormReusedError struct{ Existing Payment }

func (e *FormReusedError) Error() string {
	return fmt.Sprintf("form token already used by payment %s for another amount", e.Existing.PublicID)
}

// Config holds the payment rules and time budgets. RequestTimeout,
// VerifyTimeout and RecheckDelay are the operator's settings
// (GATEWAY_REQUEST_TIMEOUT, GATEWAY_BUDGET, PENDING_RECHECK_AFTER: their
// defaults are written once, in internal/config): NewService refuses to
// run without them. The other zero values take the defaults below.
type Config struct {
	BaseURL  string // public URL of the app, for the callback URL
	MinRials int64
	MaxRials int64
	// Description is what the bank shows the payer, in Persian;
	// DescriptionEN the same for a payer who reads English.
	Description   string
	DescriptionEN string

	RequestTimeout time.Duration // budget for the gateway's request call (required)
	// VerifyTimeout is the gateway budget: one whole check of a payment
	// (verify and, after "not paid", inquiry), and the longest any caller
	// waits, for its own check or for another actor's (required).
	VerifyTimeout time.Duration
	ReplayWait    time.Duration // how long a repeat submit waits for the first (default VerifyTimeout)
	// LeaseDuration: how long a check holds a payment (default
	// VerifyTimeout+2s): a holder that died blocks it about one budget.
	LeaseDuration time.Duration
	// RecheckDelay: the bank is asked about a payment at most once per
	// this (callbacks and worker; PENDING_RECHECK_AFTER; required).
	RecheckDelay time.Duration
	PollInterval time.Duration // how often waiters re-read the row (default 50ms)
	// MaxCreditFailures: a bank-verified payment whose credit failed this
	// many times goes to needs_review (credit_failed) instead of being
	// retried, and the bank asked, forever (default 3).
	MaxCreditFailures int
	// CreditedCacheSize: how many credited payments are kept in memory for
	// repeat callbacks and receipt reloads (CREDITED_CACHE_SIZE; 0 or
	// negative: none).
	CreditedCacheSize int

	// Observer, when set, learns of every status change and credit
	// (metrics).
	Observer Observer
}

func (c *Config) defaults() {
	var missing []string
	for _, r := range []struct {
		name string
		d    time.Duration
	}{{"RequestTimeout", c.RequestTimeout}, {"VerifyTimeout", c.VerifyTimeout}, {"RecheckDelay", c.RecheckDelay}} {
		if r.d <= 0 {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		// A wiring mistake: the configuration always sets them.
		panic("payment.NewService: required Config fields not set: " + strings.Join(missing, ", "))
	}
	if c.ReplayWait == 0 {
		c.ReplayWait = c.VerifyTimeout
	}
	if c.LeaseDuration == 0 {
		// One check (verify, then perhaps inquiry) is bounded by the budget.
		c.LeaseDuration = c.VerifyTimeout + 2*time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 50 * time.Millisecond
	}
	if c.MaxCreditFailures == 0 {
		c.MaxCreditFailures = 3
	}
	if c.Description == "" {
		c.Description = "افزایش موجودی کیف‌پول"
	}
	if c.DescriptionEN == "" {
		c.DescriptionEN = "Kifpool wallet top-up"
	}
}

// Service runs payments. It is safe for concurrent use and across
// several instances sharing one database.
type Service struct {
	st  Store
	gw  gateway.Gateway
	now func() time.Time
	log *slog.Logger
	cfg Config
	// credited answers repeat callbacks and receipt reloads of credited
	// payments from memory.
	credited *creditedCache
}

// NewService wires the payment service.
func NewService(st Store, gw gateway.Gateway, now func() time.Time, log *slog.Logger, cfg Config) *Service {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Service{st: st, gw: gw, now: now, log: log, cfg: cfg, credited: newCreditedCache(cfg.CreditedCacheSize)}
}

// Limits returns the allowed top-up range in rials.
func (s *Service) Limits() (minRials, maxRials int64) { return s.cfg.MinRials, s.cfg.MaxRials }

// Gateway returns the gateway the service talks to.
func (s *Service) Gateway() gateway.Gateway { return s.gw }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// CallbackURL is where the bank sends the payer back for a payment.
func (s *Service) CallbackURL(publicID string) string {
	return s.cfg.BaseURL + "/payments/" + publicID + "/return"
}

// StartInput is a submitted top-up form.
type StartInput struct {
	UserID      int64
	WalletID    int64
	Email       string
	FormToken   string
	AmountRials int64
	// Description, when set, is shown by the bank after ours (the API's
	// optional description).
	Description string
	// English: the payer reads English (the web form in English), so the
	// bank shows our description in English; Persian otherwise.
	English bool
	// Quota, when set, admits the payment in the transaction that inserts
	// it (the payer's limits, atomic under concurrent starts).
	Quota *Quota
}

// Usage is what counts against a payer's limits, as read in the
// transaction that inserts a new payment: the payments created since
// Quota.Since that did not fail (amount and number), the amount of the
// payer's open payments (they may yet be credited) and the wallet's
// balance.
type Usage struct {
	SinceRials, SinceCount, OpenRials, BalanceRials int64
}

// Quota admits a new payment of a payer, or refuses it with Admit's
// error (nothing is written then).
type Quota struct {
	Since time.Time
	Admit func(Usage) error
}

// StartResult says where to send the browser.
type StartResult struct {
	Payment  Payment
	PayURL   string // the bank page, when the payment awaits payment
	Replayed bool   // this answer repeats an earlier submit of the form
}

// ValidateAmount applies the top-up amount rules (money.Limits).
func (s *Service) ValidateAmount(rials int64) error {
	return money.Limits{MinRials: s.cfg.MinRials, MaxRials: s.cfg.MaxRials}.Check(rials)
}

// CheckGateway refuses a new top-up while the gateway's circuit breaker is
// open (ErrGatewayFailed): the bank is known to be down before anything is
// written, so there is no payment and no authority, and no money can have
// been taken. A form already submitted is not refused (nil): its repeat is
// answered as the first submit was, whatever the bank's state now. Callers
// may ask before their own reads (the web form does, so that a refusal
// costs one indexed read only while the breaker is open); StartTopUp asks
// too.
func (s *Service) CheckGateway(ctx context.Context, userID int64, formToken string) error {
	br, ok := s.gw.(BreakerReporter)
	if !ok || !br.BreakerOpen() {
		return nil
	}
	seen, err := s.FormSubmitted(ctx, userID, formToken)
	if err != nil {
		return err
	}
	if seen {
		return nil // a repeat: answered from the first submit
	}
	s.log.WarnContext(ctx, "top-up refused: the gateway's circuit breaker is open")
	return fmt.Errorf("start payment: %w: %w", ErrGatewayFailed, gateway.ErrUnavailable)
}

// StartTopUp creates the payment for a submitted form and asks the gateway
// for a transaction. A repeat (or concurrent) submit of the same form gets
// the first submit's answer; the same token with another amount gets a
// *FormReusedError. On ErrGatewayFailed the result holds the failed payment, or
// none when the gateway's breaker was open (nothing is written then).
func (s *Service) StartTopUp(ctx context.Context, in StartInput) (StartResult, error) {
	if !ValidFormToken(in.FormToken) {
		return StartResult{}, ErrBadFormToken
	}
	if err := s.ValidateAmount(in.AmountRials); err != nil {
		return StartResult{}, err
	}
	if err := s.CheckGateway(ctx, in.UserID, in.FormToken); err != nil {
		return StartResult{}, err
	}
	now := s.clock()
	p := Payment{
		PublicID: newPublicID(), UserID: in.UserID, WalletID: in.WalletID,
		AmountRials: in.AmountRials, Gateway: s.gw.Name(), FormToken: in.FormToken,
		Status: StatusCreated, CreatedAt: now, UpdatedAt: now, OpenedAt: &now,
	}
	var err error
	if in.Quota != nil && in.Quota.Admit != nil {
		err = s.st.CreateAdmitted(ctx, &p, *in.Quota)
	} else {
		err = s.st.Create(ctx, &p)
	}
	if errors.Is(err, ErrDuplicate) {
		// The unique (user_id, form_token) index is the guarantee: this
		// form was submitted before. Answer as the first submit did.
		return s.replayStart(ctx, in)
	}
	if err != nil {
		return StartResult{}, fmt.Errorf("create payment: %w", err)
	}
	log := s.log.With("payment", p.PublicID)

	rctx, cancel := context.WithTimeout(resilient.WithPaymentRef(ctx, p.PublicID), s.cfg.RequestTimeout)
	res, reqErr := s.gw.Request(rctx, gateway.RequestInput{
		AmountRials: p.AmountRials, CallbackURL: s.CallbackURL(p.PublicID),
		Description: s.describe(in.Description, in.English), OrderID: p.PublicID, Email: in.Email,
	})
	cancel()
	d := Decide(Input{Step: StepRequest, Actor: ActorSubmit, Payment: p, Now: s.clock(), Request: res, RequestErr: reqErr})
	if d.To == StatusFailed {
		log.WarnContext(ctx, "gateway request failed", "err", reqErr)
		// No authority reached the payer, so no money can have been taken.
		p, err := s.failCreated(ctx, p, ActorSubmit, d.Reason, d.GatewayCode)
		if err != nil {
			return StartResult{}, err
		}
		return StartResult{Payment: p}, fmt.Errorf("start payment %s: %w: %w", p.PublicID, ErrGatewayFailed, reqErr)
	}

	moved, err := s.move(ctx, p, StatusCreated, change{to: d.To, actor: ActorSubmit,
		reason: d.Reason, gatewayCode: d.GatewayCode, set: Fields{Authority: &d.Authority}})
	switch {
	case errors.Is(err, ErrDuplicate):
		// The gateway handed out an authority we already hold: never
		// send a payer to a transaction that belongs to another payment.
		log.ErrorContext(ctx, "gateway returned a duplicate authority", "authority", res.Authority)
		p, err := s.failCreated(ctx, p, ActorSubmit, ReasonDuplicateAuthority, nil)
		if err != nil {
			return StartResult{}, err
		}
		return StartResult{Payment: p}, fmt.Errorf("start payment %s: %w: duplicate authority", p.PublicID, ErrGatewayFailed)
	case errors.Is(err, errNotMoved):
		// A repeat submit gave up on us and failed the payment meanwhile.
		p, err := s.reload(ctx, p.ID)
		if err != nil {
			return StartResult{}, err
		}
		return s.answerFor(p, false)
	case err != nil:
		return StartResult{}, fmt.Errorf("save authority of %s: %w", p.PublicID, err)
	}
	log.InfoContext(ctx, "payment started", "amount_rials", moved.AmountRials, "authority", res.Authority)
	return StartResult{Payment: moved, PayURL: s.gw.PayURL(res.Authority)}, nil
}

// replayStart answers a repeat submit of a form from the first submit's row.
func (s *Service) replayStart(ctx context.Context, in StartInput) (StartResult, error) {
	deadline := time.Now().Add(s.cfg.ReplayWait)
	for {
		p, err := s.st.ByFormToken(ctx, in.UserID, in.FormToken)
		if err != nil {
			return StartResult{}, err
		}
		if p.AmountRials != in.AmountRials {
			return StartResult{}, &FormReusedError{Existing: p}
		}
		if p.Status != StatusCreated {
			return s.answerFor(p, true)
		}
		// The first submit is still talking to the bank. Its request call
		// is bounded by RequestTimeout; past that (plus a margin) it has
		// died, and this submit fails the payment on its behalf (no
		// authority was saved, so no money can have been taken).
		if s.clock().Sub(p.CreatedAt) > s.cfg.RequestTimeout+2*time.Second {
			p, err := s.failCreated(ctx, p, ActorSubmit, ReasonAbandonedSubmit, nil)
			if err != nil {
				return StartResult{}, err
			}
			return s.answerFor(p, true)
		}
		if time.Now().After(deadline) {
			return StartResult{Payment: p, Replayed: true}, ErrStillProcessing
		}
		select {
		case <-ctx.Done():
			return StartResult{}, ctx.Err()
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// answerFor turns a started payment into the answer for its form.
func (s *Service) answerFor(p Payment, replayed bool) (StartResult, error) {
	r := StartResult{Payment: p, Replayed: replayed}
	switch p.Status {
	case StatusAwaitingPayment:
		r.PayURL = s.gw.PayURL(p.AuthorityString())
	case StatusFailed:
		if p.Authority == nil {
			return r, fmt.Errorf("payment %s: %w", p.PublicID, ErrGatewayFailed)
		}
	}
	return r, nil
}

// failCreated ends a payment that never got an authority: no payer
// reached a bank page, so no money can have been taken.
func (s *Service) failCreated(ctx context.Context, p Payment, actor Actor, reason Reason, code *int) (Payment, error) {
	_, err := s.move(ctx, p, StatusCreated, change{to: StatusFailed, actor: actor, reason: reason, gatewayCode: code})
	if err != nil && !errors.Is(err, errNotMoved) {
		return p, fmt.Errorf("fail payment %s: %w", p.PublicID, err)
	}
	return s.reload(ctx, p.ID)
}

func (s *Service) reload(ctx context.Context, id int64) (Payment, error) {
	return s.st.Get(ctx, id)
}

// ByPublicID returns a payment by its public id; a credited one from
// memory when this instance has seen it credited (it never changes again).
func (s *Service) ByPublicID(ctx context.Context, publicID string) (Payment, error) {
	if !ValidPublicID(publicID) {
		return Payment{}, ErrNotFound
	}
	if p, ok := s.credited.get(publicID); ok {
		return p, nil
	}
	p, err := s.st.ByPublicID(ctx, publicID)
	if err != nil {
		return Payment{}, err
	}
	s.credited.put(p)
	return p, nil
}

// ForOwner returns the payment if it belongs to the user, else ErrNotFound.
func (s *Service) ForOwner(ctx context.Context, publicID string, userID int64) (Payment, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return Payment{}, err
	}
	if p.UserID != userID {
		return Payment{}, ErrNotFound
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// describe is what the bank shows the payer: ours, in the payer's
// language, then the caller's.
func (s *Service) describe(extra string, english bool) string {
	ours := s.cfg.Description
	if english {
		ours = s.cfg.DescriptionEN
	}
	if extra = strings.TrimSpace(extra); extra != "" {
		return ours + " — " + extra
	}
	return ours
}
