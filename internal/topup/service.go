package topup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
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
	// ErrUnknownGateway: a top-up asked for a gateway this instance does
	// not offer (not in GATEWAYS, or switched off by an operator).
	ErrUnknownGateway = errors.New("no such gateway is offered")
)

// GatewayRules are what the payment code applies per gateway, from the
// gateway's capability record.
type GatewayRules struct {
	// VerifyDeadline: the bank returns a payment still unverified this
	// long after it started to the payer (0: the gateway does not document
	// it; WORKER_MAX_UNKNOWN applies alone).
	VerifyDeadline time.Duration
	// SettleWindow: how long after verify a verified payment can be
	// settled (Mellat; 0: the gateway does not settle, or documents no
	// limit): a settling payment still unknown then goes to review.
	SettleWindow time.Duration
	// NoList: the gateway lists no unverified payments; reconciliation
	// asks it about our recent payments one by one (Zibal's inquiry).
	NoList bool
	// NeedsCallback: its verify needs what only the callback carries
	// (SEP's RefNum, Mellat's SaleReferenceId), so an ended payment that
	// the bank holds paid cannot be verified from our row alone:
	// reconciliation by inquiry leaves such gateways' payments to the
	// callback and the worker.
	NeedsCallback bool
	// ReceiptLife: for a NeedsCallback gateway, how long after a payment
	// was created the bank's receipt of its token still names what the
	// callback carries (SEP's receipt API: one hour, and only before
	// verify or reverse), so that the worker and reconciliation can verify
	// a payment whose callback was lost. 0: only the callback carries it
	// (Mellat): such a payment without a callback cannot be asked about.
	ReceiptLife time.Duration
	// ReverseWindow: how long after a payment a verified one can be
	// reversed (Capabilities.ReverseWindow, for a gateway whose way back
	// is a reverse: SEP, Mellat before settle; 0: none): a verified
	// payment that cannot be credited is reversed within it
	// (StatusReversing), else it goes to review.
	ReverseWindow time.Duration
}

// RulesOf are the payment code's rules of a gateway, from its capability
// record: its verify deadline and settle window when documented, whether it lists
// unverified payments (else reconciliation asks it one by one), whether
// verify needs the callback's data and how long a receipt of the token
// stands in for it.
func RulesOf(c gateway.Capabilities) GatewayRules {
	r := GatewayRules{NoList: c.Reconcile&gateway.ReconcileList == 0, NeedsCallback: c.VerifyData == gateway.VerifyNeedsCallback}
	if c.VerifyDeadline.Kind == gateway.WindowWithin {
		r.VerifyDeadline = c.VerifyDeadline.Within
	}
	if c.Receipt.Kind == gateway.WindowWithin {
		r.ReceiptLife = c.Receipt.Within
	}
	if c.Settle.Kind == gateway.WindowWithin {
		r.SettleWindow = c.Settle.Within
	}
	if c.ReverseWindow.Kind == gateway.WindowWithin && c.CardRefund.Method == gateway.CardRefundReverse {
		r.ReverseWindow = c.ReverseWindow.Within
	}
	return r
}

// callbackOnly reports whether only the callback carries what verify
// needs (Rules.CallbackOnly).
func (r GatewayRules) callbackOnly() bool { return r.NeedsCallback && r.ReceiptLife <= 0 }

// FormReusedError: the form's token was already used for another amount.
type FormReusedError struct{ Existing TopUp }

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
	// Gateways are the rules of each gateway by name (a gateway without
	// an entry has no documented deadline and a list of unverified
	// payments).
	Gateways map[string]GatewayRules
	// Disabled, when set, names the gateways an operator switched off for
	// new top-ups (read at each start; payments already at such a
	// gateway are still verified there).
	Disabled func(ctx context.Context) (map[string]bool, error)
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
		panic("topup.NewService: required Config fields not set: " + strings.Join(missing, ", "))
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
	gws gateway.Set
	now func() time.Time
	log *slog.Logger
	cfg Config
	// credited answers repeat callbacks and receipt reloads of credited
	// payments from memory.
	credited *creditedCache
}

// NewService wires the payment service over the gateways it offers, in
// their order (the first is offered first).
func NewService(st Store, gws gateway.Set, now func() time.Time, log *slog.Logger, cfg Config) *Service {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Service{st: st, gws: gws, now: now, log: log, cfg: cfg, credited: newCreditedCache(cfg.CreditedCacheSize)}
}

// Limits returns the allowed top-up range in rials.
func (s *Service) Limits() (minRials, maxRials int64) { return s.cfg.MinRials, s.cfg.MaxRials }

// Gateways returns the gateways the service talks to, in order.
func (s *Service) Gateways() gateway.Set { return s.gws }

// gw is the gateway a payment was started at (its stored name).
func (s *Service) gw(p TopUp) gateway.Gateway { return s.gws.For(p.Gateway) }

// PayURL is the bank page of a payment awaiting payment ("" without an
// authority).
func (s *Service) PayURL(p TopUp) string {
	if p.Authority == nil {
		return ""
	}
	return s.gw(p).PayURL(*p.Authority)
}

// PayForm is the POST form to the bank page of a payment awaiting payment
// at a gateway reached only by POST (SEP, Mellat); nil otherwise.
func (s *Service) PayForm(p TopUp) *gateway.PayForm {
	if p.Authority == nil {
		return nil
	}
	return payForm(s.gw(p), *p.Authority)
}

// Offered are the gateways a new top-up may go to now, in order: those
// an operator has not switched off. Healthy reports, for each, whether
// its breaker is closed.
func (s *Service) Offered(ctx context.Context) ([]GatewayOffer, error) {
	off, err := s.switchedOff(ctx)
	if err != nil {
		return nil, err
	}
	var out []GatewayOffer
	for _, g := range s.gws {
		if !off[g.Name()] {
			out = append(out, GatewayOffer{Name: g.Name(), Healthy: !gateway.Down(g)})
		}
	}
	return out, nil
}

// switchesKey is the context key of ReadSwitchesOnce's memo.
type switchesKey struct{}

// switchesMemo holds the gateways switched off as one request read them.
type switchesMemo struct {
	read bool
	off  map[string]bool
}

// ReadSwitchesOnce returns a context under which Offered reads the
// operator's gateway switches from the database at most once: a request
// that asks twice (a top-up refused by an open breaker, then the fresh
// form it shows) pays one round trip. The breakers' health is still read
// at each call. The context is one request's: not shared between
// goroutines.
func ReadSwitchesOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, switchesKey{}, &switchesMemo{})
}

// switchedOff names the gateways an operator switched off.
func (s *Service) switchedOff(ctx context.Context) (map[string]bool, error) {
	if s.cfg.Disabled == nil {
		return nil, nil
	}
	m, _ := ctx.Value(switchesKey{}).(*switchesMemo)
	if m != nil && m.read {
		return m.off, nil
	}
	off, err := s.cfg.Disabled(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the gateways switched off: %w", err)
	}
	if m != nil {
		m.read, m.off = true, off
	}
	return off, nil
}

// SwitchGateway switches a gateway off (disabled) or back on for new
// top-ups, as an admin did, with their note: every instance stops (or
// starts) offering it at its next top-up, without a restart. Payments
// already at it are still verified there. Recorded in the audit log in
// the switch's own transaction. ErrUnknownGateway for a gateway this
// instance does not talk to.
func (s *Service) SwitchGateway(ctx context.Context, adminID int64, name string, disabled bool, note string) error {
	if _, ok := s.gws.Get(name); !ok {
		return fmt.Errorf("switch %q: %w", name, ErrUnknownGateway)
	}
	how := "on"
	if disabled {
		how = "off"
	}
	text := name + " " + how
	if note = strings.TrimSpace(note); note != "" {
		text += ": " + note
	}
	e := audit.Entry{AdminID: adminID, Action: audit.ActionGatewaySwitch, Note: text, Result: audit.ResultDone, CreatedAt: s.clock()}
	if err := s.st.SwitchGateway(ctx, name, disabled, e); err != nil {
		return err
	}
	s.log.WarnContext(ctx, "gateway switched by an admin", "gateway", name, "disabled", disabled, "admin", adminID)
	return nil
}

// GatewayOffer is one gateway a top-up may go to.
type GatewayOffer struct {
	Name    string
	Healthy bool
}

// PickGateway chooses the gateway of a new top-up: the preferred one
// ("" for the first in order) when its breaker is closed, else the next
// healthy one after it in order (failover by health, never by probing
// the bank). ErrUnknownGateway when the preferred one is not offered;
// ErrGatewayFailed (wrapping gateway.ErrUnavailable) when none is healthy.
func PickGateway(offers []GatewayOffer, preferred string) (string, error) {
	start := 0
	if preferred != "" {
		start = -1
		for i, o := range offers {
			if o.Name == preferred {
				start = i
			}
		}
		if start < 0 {
			return "", fmt.Errorf("gateway %q: %w", preferred, ErrUnknownGateway)
		}
	}
	for i := range offers {
		if o := offers[(start+i)%len(offers)]; o.Healthy {
			return o.Name, nil
		}
	}
	return "", fmt.Errorf("start payment: %w: %w", ErrGatewayFailed, gateway.ErrUnavailable)
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// CallbackURL is where the bank sends the payer back for a payment.
func (s *Service) CallbackURL(publicID string) string {
	return s.cfg.BaseURL + routes.TopUpReturn(publicID)
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
	// Gateway is the payer's choice ("": the first offered); when its
	// breaker is open, the next healthy one is used (StartResult's
	// payment says which).
	Gateway string
	// Quota, when set, admits the payment in the transaction that inserts
	// it (the payer's limits, atomic under concurrent starts).
	Quota *Quota
	// ReturnURL, when set, is where the payer's browser goes after the
	// bank (an API top-up's return_url, checked by the caller).
	ReturnURL string
}

// Usage is what counts against a payer's limits, as read in the
// transaction that inserts a new payment: the payments created since
// Quota.Since that did not fail (amount and number), the amount of the
// payer's open payments (they may yet be credited), the wallet's balance,
// and how many of the payer's payments wait for payment (created or
// awaiting_payment: the bank was asked for a page the payer has not
// come back from).
type Usage struct {
	SinceRials, SinceCount, OpenRials, BalanceRials, WaitingCount int64
}

// Quota admits a new payment of a payer, or refuses it with Admit's
// error (nothing is written then).
type Quota struct {
	Since time.Time
	Admit func(Usage) error
}

// StartResult says where to send the browser.
type StartResult struct {
	TopUp  TopUp
	PayURL string // the bank page, when the payment awaits payment
	// PayForm, when set, is how the browser must reach the bank page: a
	// POST of this form (SEP, Mellat) instead of a GET of PayURL.
	PayForm  *gateway.PayForm
	Replayed bool // this answer repeats an earlier submit of the form
}

// ValidateAmount applies the top-up amount rules (money.Limits).
func (s *Service) ValidateAmount(rials int64) error {
	return money.Limits{MinRials: s.cfg.MinRials, MaxRials: s.cfg.MaxRials}.Check(rials)
}

// CheckGateway refuses a new top-up when no gateway it may go to is
// healthy (every offered one's circuit breaker is open: ErrGatewayFailed),
// or the preferred one is not offered (ErrUnknownGateway): before anything
// is written, so there is no payment and no authority, and no money can
// have been taken. It returns the gateway the top-up goes to (the
// preferred one, or the next healthy one). A form already submitted is not
// refused ("" and nil): its repeat is answered as the first submit was,
// whatever the banks' state now. Callers may ask before their own reads;
// StartTopUp asks too.
func (s *Service) CheckGateway(ctx context.Context, userID int64, formToken, preferred string) (string, error) {
	offers, err := s.Offered(ctx)
	if err != nil {
		return "", err
	}
	name, pickErr := PickGateway(offers, preferred)
	if pickErr == nil {
		if preferred != "" && name != preferred {
			s.log.WarnContext(ctx, "top-up goes to the next healthy gateway", "preferred", preferred, "gateway", name)
		}
		return name, nil
	}
	if errors.Is(pickErr, ErrUnknownGateway) {
		return "", pickErr
	}
	seen, err := s.FormSubmitted(ctx, userID, formToken)
	if err != nil {
		return "", err
	}
	if seen {
		return "", nil // a repeat: answered from the first submit
	}
	s.log.WarnContext(ctx, "top-up refused: every gateway's circuit breaker is open")
	return "", pickErr
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
	gwName, err := s.CheckGateway(ctx, in.UserID, in.FormToken, in.Gateway)
	if err != nil {
		return StartResult{}, err
	}
	if gwName == "" {
		return s.replayStart(ctx, in) // a repeat while every gateway is down
	}
	gw := s.gws.For(gwName)
	now := s.clock()
	p := TopUp{
		PublicID: newPublicID(), UserID: in.UserID, WalletID: in.WalletID,
		AmountRials: in.AmountRials, Gateway: gwName, FormToken: in.FormToken,
		Status: StatusCreated, CreatedAt: now, UpdatedAt: now, OpenedAt: &now,
	}
	if in.ReturnURL != "" {
		p.ReturnURL = &in.ReturnURL
	}
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

	rctx, cancel := context.WithTimeout(resilient.WithRef(ctx, p.PublicID), s.cfg.RequestTimeout)
	res, reqErr := gw.Request(rctx, gateway.RequestInput{
		AmountRials: p.AmountRials, CallbackURL: s.CallbackURL(p.PublicID),
		Description: s.describe(in.Description, in.English), OrderID: p.PublicID, Email: in.Email,
	})
	cancel()
	d := Decide(Input{Step: StepRequest, Actor: ActorSubmit, TopUp: p, Now: s.clock(), Request: res, RequestErr: reqErr})
	if d.To == StatusFailed {
		log.WarnContext(ctx, "gateway request failed", "err", reqErr)
		// No authority reached the payer, so no money can have been taken.
		p, err := s.failCreated(ctx, p, ActorSubmit, d.Reason, d.GatewayCode)
		if err != nil {
			return StartResult{}, err
		}
		return StartResult{TopUp: p}, fmt.Errorf("start payment %s: %w: %w", p.PublicID, ErrGatewayFailed, reqErr)
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
		return StartResult{TopUp: p}, fmt.Errorf("start payment %s: %w: duplicate authority", p.PublicID, ErrGatewayFailed)
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
	return StartResult{TopUp: moved, PayURL: gw.PayURL(res.Authority), PayForm: payForm(gw, res.Authority)}, nil
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
			return StartResult{TopUp: p, Replayed: true}, ErrStillProcessing
		}
		select {
		case <-ctx.Done():
			return StartResult{}, ctx.Err()
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// payForm is the POST form to gw's bank page for an authority, when the
// gateway sends its payer by POST; nil for a GET redirect.
func payForm(gw gateway.Gateway, authority string) *gateway.PayForm {
	if form := gw.Ops().PayForm; form != nil {
		f := form(authority)
		return &f
	}
	return nil
}

// answerFor turns a started payment into the answer for its form.
func (s *Service) answerFor(p TopUp, replayed bool) (StartResult, error) {
	r := StartResult{TopUp: p, Replayed: replayed}
	switch p.Status {
	case StatusAwaitingPayment:
		r.PayURL, r.PayForm = s.PayURL(p), payForm(s.gw(p), p.AuthorityString())
	case StatusFailed:
		if p.Authority == nil {
			return r, fmt.Errorf("payment %s: %w", p.PublicID, ErrGatewayFailed)
		}
	}
	return r, nil
}

// failCreated ends a payment that never got an authority: no payer
// reached a bank page, so no money can have been taken.
func (s *Service) failCreated(ctx context.Context, p TopUp, actor Actor, reason Reason, code *int) (TopUp, error) {
	_, err := s.move(ctx, p, StatusCreated, change{to: StatusFailed, actor: actor, reason: reason, gatewayCode: code})
	if err != nil && !errors.Is(err, errNotMoved) {
		return p, fmt.Errorf("fail payment %s: %w", p.PublicID, err)
	}
	return s.reload(ctx, p.ID)
}

func (s *Service) reload(ctx context.Context, id int64) (TopUp, error) {
	return s.st.Get(ctx, id)
}

// ByPublicID returns a payment by its public id; a credited one from
// memory when this instance has seen it credited (it never changes again).
func (s *Service) ByPublicID(ctx context.Context, publicID string) (TopUp, error) {
	if !ValidPublicID(publicID) {
		return TopUp{}, ErrNotFound
	}
	if p, ok := s.credited.get(publicID); ok {
		return p, nil
	}
	p, err := s.st.ByPublicID(ctx, publicID)
	if err != nil {
		return TopUp{}, err
	}
	s.credited.put(p)
	return p, nil
}

// Dismiss notes that the payer will not pay p ("I won't pay this one"):
// it leaves their list of payments in progress. Nothing else changes: the
// worker keeps asking the bank, which alone may end the payment.
func (s *Service) Dismiss(ctx context.Context, p TopUp) error {
	return s.st.Dismiss(ctx, p.UserID, p.ID, s.clock())
}

// ForOwner returns the payment if it belongs to the user, else ErrNotFound.
func (s *Service) ForOwner(ctx context.Context, publicID string, userID int64) (TopUp, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return TopUp{}, err
	}
	if p.UserID != userID {
		return TopUp{}, ErrNotFound
	}
	return p, nil
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
