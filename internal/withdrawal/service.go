package withdrawal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/usertext"
	"github.com/kifpool/kifpool/internal/wallet"
)

// HoldLife is how long a withdrawal's hold is made for: longer than any
// withdrawal stays open, so that it never expires under a payout in
// flight (the hold ends by the withdrawal's own moves, never by time).
const HoldLife = 100 * 365 * 24 * time.Hour

// HoldReason is the reason of a withdrawal's hold (its reference: the
// withdrawal's public id).
const HoldReason = "withdrawal"

// Offer is one payout provider new withdrawals may go to.
type Offer struct {
	Name     string
	Provider payout.Provider
	Caps     payout.Capabilities
}

// Config is the lifecycle's tuning, from the configuration.
type Config struct {
	// MinRials and MaxRials bound one withdrawal (whole tomans).
	MinRials, MaxRials int64
	// DailyMaxRials bounds a person's withdrawals per Tehran day, over
	// every account that gave the same national code (0: no limit);
	// ReviewAboveRials sends larger ones to an admin first (0: none).
	DailyMaxRials, ReviewAboveRials int64
	// UnknownReviewAfter and InProgressReviewAfter: see Policy.
	UnknownReviewAfter, InProgressReviewAfter time.Duration
	// WatchPaid: how long a paid withdrawal is asked about at the
	// back-off when its provider may still fail it; then about once every
	// LateWatchEvery until LateWatchHorizon after it was paid.
	WatchPaid time.Duration
	// LeaseDuration bounds one provider call and its recording.
	LeaseDuration time.Duration
	// BaseBackoff and MaxBackoff pace the worker's checks.
	BaseBackoff, MaxBackoff time.Duration
	Schedule                rail.Schedule
	// Jitter returns a number in [0,1) (nil: none, the back-off's
	// middle).
	Jitter func() float64
}

// Limits are the amount rules.
func (c Config) Limits() money.Limits {
	return money.Limits{MinRials: c.MinRials, MaxRials: c.MaxRials}
}

// Service is the withdrawal lifecycle's use cases.
type Service struct {
	st       Store
	accounts *bankaccount.Service
	wallets  *wallet.Service
	offers   []Offer
	cfg      Config
	now      func() time.Time
	log      *slog.Logger
	wake     chan struct{}
	// OnChange, when set, is told of every committed move (metrics,
	// mail); wiring, set before use.
	OnChange func(w Withdrawal, from Status)
	// lists, when set, is where List and Queue read (ListFrom).
	lists Store
}

// ListFrom sets the store List and Queue read (the pages' read pool);
// wiring, set before use. Every move reads the service's own store.
func (s *Service) ListFrom(st Store) { s.lists = st }

func (s *Service) lister() Store {
	if s.lists != nil {
		return s.lists
	}
	return s.st
}

// New returns the service.
func New(st Store, accounts *bankaccount.Service, wallets *wallet.Service, offers []Offer, cfg Config, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxRials == 0 {
		cfg.MaxRials = 1_000_000_000_000
	}
	return &Service{st: st, accounts: accounts, wallets: wallets, offers: offers, cfg: cfg, now: now, log: log, wake: make(chan struct{}, 1)}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Wake is the channel a new withdrawal or an approval signals: the
// worker's loop runs at once instead of at its next tick.
func (s *Service) Wake() <-chan struct{} { return s.wake }

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// On reports whether withdrawals are offered.
func (s *Service) On() bool { return len(s.offers) > 0 }

// Config is the service's tuning.
func (s *Service) Config() Config { return s.cfg }

// Offers are the providers, in the configuration's order.
func (s *Service) Offers() []Offer { return s.offers }

// offer is the provider named, if offered.
func (s *Service) offer(name string) (Offer, bool) {
	for _, o := range s.offers {
		if o.Name == name {
			return o, true
		}
	}
	return Offer{}, false
}

// pick is the provider a new withdrawal of amount goes to, and its rail:
// the first that takes the amount and is up, else the first that takes
// it (the worker sends it when the provider is back).
func (s *Service) pick(amount int64) (Offer, rail.Rail, error) {
	var fallback *Offer
	var fallbackRail rail.Rail
	for i, o := range s.offers {
		r, ok := rail.For(amount, o.Caps.Rails)
		if !ok || amount < o.Caps.MinAmountRials || (o.Caps.MaxAmountRials > 0 && amount > o.Caps.MaxAmountRials) {
			continue
		}
		if !payout.Down(o.Provider) {
			return o, r, nil
		}
		if fallback == nil {
			fallback, fallbackRail = &s.offers[i], r
		}
	}
	if fallback != nil {
		return *fallback, fallbackRail, nil
	}
	return Offer{}, "", ErrNoProvider
}

// Estimate is when a withdrawal of amount requested now would reach the
// account (the rail of the provider it would go to).
func (s *Service) Estimate(amount int64) (rail.Estimate, bool) {
	_, r, err := s.pick(amount)
	if err != nil {
		return rail.Estimate{}, false
	}
	return s.cfg.Schedule.Estimate(r, s.now(), i18n.Tehran()), true
}

// DailyLimitError is a request refused by the daily limit.
type DailyLimitError struct {
	Limit, Left int64
}

func (e *DailyLimitError) Error() string {
	return fmt.Sprintf("withdrawal: daily limit of %d rials reached (%d left today)", e.Limit, e.Left)
}

// DayStart is the start of t's calendar day in Tehran.
func DayStart(t time.Time) time.Time {
	l := t.In(i18n.Tehran())
	y, m, d := l.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, i18n.Tehran()).UTC()
}

// Request is what a withdrawal is asked for with.
type Request struct {
	UserID        int64
	FormToken     string // the form's token, or one derived from an Idempotency-Key
	BankAccountID int64
	AmountRials   int64
}

// Requested is a request's outcome.
type Requested struct {
	Withdrawal Withdrawal
	// Replay: the form (or key) made this withdrawal before.
	Replay bool
}

// Request makes a withdrawal: the amount rules (money's errors), a
// verified bank account of the user's, a provider that takes the amount,
// the daily limit (*DailyLimitError) and the wallet's available balance
// (ErrInsufficientFunds), checked in that order; then one transaction
// writes the withdrawal and holds its amount. The same form token is the
// same withdrawal, answered again (Replay).
func (s *Service) Request(ctx context.Context, r Request) (Requested, error) {
	if !s.On() {
		return Requested{}, ErrOff
	}
	if !formtoken.Valid(r.FormToken) {
		return Requested{}, ErrBadFormToken
	}
	if w, err := s.st.ByFormToken(ctx, r.UserID, r.FormToken); err == nil {
		return Requested{Withdrawal: w, Replay: true}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return Requested{}, err
	}
	if err := s.cfg.Limits().Check(r.AmountRials); err != nil {
		return Requested{}, err
	}
	acct, err := s.accounts.Get(ctx, r.UserID, r.BankAccountID)
	if errors.Is(err, bankaccount.ErrNotFound) {
		return Requested{}, ErrBankAccountMissing
	}
	if err != nil {
		return Requested{}, err
	}
	if !acct.Verified() {
		return Requested{}, ErrBankAccountUnchecked
	}
	offer, rl, err := s.pick(r.AmountRials)
	if err != nil {
		return Requested{}, err
	}
	wal, err := s.wallets.ForUser(ctx, r.UserID)
	if errors.Is(err, wallet.ErrNotFound) {
		// No wallet yet: nothing to cash out, refused as any short
		// balance, and nothing written.
		return Requested{}, fmt.Errorf("%w: %w", ErrInsufficientFunds, ErrNoWallet)
	}
	if err != nil {
		return Requested{}, err
	}
	now := s.clock()
	w := Withdrawal{PublicID: NewPublicID(), UserID: r.UserID, WalletID: wal.ID, BankAccountID: acct.ID, Sheba: acct.Sheba,
		BankCode: acct.BankCode, AmountRials: r.AmountRials, Provider: offer.Name, Rail: string(rl), FormToken: r.FormToken,
		Status: StatusRequested, ReviewRequired: s.cfg.ReviewAboveRials > 0 && r.AmountRials > s.cfg.ReviewAboveRials,
		CreatedAt: now, UpdatedAt: now}
	if !w.ReviewRequired {
		w.NextCheckAt = &now
	}
	q := Quota{DayStart: DayStart(now), Admit: func(used int64) error {
		if s.cfg.DailyMaxRials > 0 && used+r.AmountRials > s.cfg.DailyMaxRials {
			return &DailyLimitError{Limit: s.cfg.DailyMaxRials, Left: max(s.cfg.DailyMaxRials-used, 0)}
		}
		return nil
	}}
	err = s.st.Create(ctx, &w, q)
	if errors.Is(err, ErrDuplicate) {
		first, ferr := s.st.ByFormToken(ctx, r.UserID, r.FormToken)
		if ferr != nil {
			return Requested{}, errors.Join(err, ferr)
		}
		return Requested{Withdrawal: first, Replay: true}, nil
	}
	if err != nil {
		return Requested{}, err
	}
	testhook.At(testhook.AfterWithdrawalHold)
	s.log.InfoContext(ctx, "withdrawal requested", "withdrawal", w.PublicID, "user", w.UserID, "amount", w.AmountRials,
		"provider", w.Provider, "review", w.ReviewRequired)
	if !w.ReviewRequired {
		s.kick()
	}
	return Requested{Withdrawal: w}, nil
}

// UsedToday is the rials withdrawn today (Tehran) that count against
// the user's daily limit: by every account of the person's (the same
// national code).
func (s *Service) UsedToday(ctx context.Context, userID int64) (int64, error) {
	return s.st.UsedToday(ctx, userID, DayStart(s.clock()))
}

// List is the user's withdrawals, newest first, keyset paginated
// (before: the id to list below; next: the next page's cursor, 0 when
// none).
func (s *Service) List(ctx context.Context, userID, before int64, limit int) ([]Withdrawal, int64, error) {
	return s.lister().List(ctx, Filter{UserID: userID, Before: before, Limit: limit})
}

// Queue lists withdrawals by f for the admin's pages (newest first, or
// oldest with f.Oldest); more reports whether others match beyond
// f.Limit.
func (s *Service) Queue(ctx context.Context, f Filter) (ws []Withdrawal, more bool, err error) {
	ws, next, err := s.lister().List(ctx, f)
	return ws, next != 0, err
}

// Reports lists the latest payout reconciliation reports.
func (s *Service) Reports(ctx context.Context, limit int) ([]Report, error) {
	return s.st.Reports(ctx, limit)
}

// LatestReports is each provider's newest reconciliation report: its
// differences are the ones still open (every run compares again the
// last ReconcileLookback, so a difference settled with the provider is
// gone from the next report, and one still there is flagged again).
func (s *Service) LatestReports(ctx context.Context) ([]Report, error) {
	return s.st.LatestReports(ctx)
}

// AwaitingAdmin counts the withdrawals waiting for an admin (to approve
// one above WITHDRAWAL_REVIEW_ABOVE_RIALS, or to resolve one under
// review), their money held meanwhile, with since when the one waiting
// longest has waited.
func (s *Service) AwaitingAdmin(ctx context.Context) (int64, time.Time, error) {
	return s.st.AwaitingAdmin(ctx)
}

// Lister is the store's reading of what reconciliation compares.
func (s *Service) Lister() Lister { return s.st }

// ByPublicIDs maps public ids to the user's withdrawals (the history's
// lines: a withdrawal's transactions carry its public id as their note).
func (s *Service) ByPublicIDs(ctx context.Context, userID int64, ids []string) (map[string]Withdrawal, error) {
	return s.st.ByPublicIDs(ctx, userID, ids)
}

// Get reads one of the user's withdrawals by its public id (ErrNotFound
// for another's).
func (s *Service) Get(ctx context.Context, userID int64, publicID string) (Withdrawal, error) {
	if !ValidPublicID(publicID) {
		return Withdrawal{}, ErrNotFound
	}
	w, err := s.st.ByPublicID(ctx, publicID)
	if err != nil {
		return Withdrawal{}, err
	}
	if w.UserID != userID {
		return Withdrawal{}, ErrNotFound
	}
	return w, nil
}

// ByPublicID reads any withdrawal (the admin's).
func (s *Service) ByPublicID(ctx context.Context, publicID string) (Withdrawal, error) {
	if !ValidPublicID(publicID) {
		return Withdrawal{}, ErrNotFound
	}
	return s.st.ByPublicID(ctx, publicID)
}

// Events are a withdrawal's status changes, oldest first (the admin's
// page of one withdrawal).
func (s *Service) Events(ctx context.Context, w Withdrawal) ([]Event, error) {
	return s.st.Events(ctx, w.ID)
}

// move takes one edge through the store's one writer.
func (s *Service) move(ctx context.Context, w Withdrawal, m Move) (Withdrawal, error) {
	if _, err := EdgeNeedsLease(m.From, m.To, m.Actor); err != nil {
		return w, err
	}
	m.ID, m.PublicID = w.ID, w.PublicID
	if m.Now.IsZero() {
		m.Now = s.clock()
	}
	moved, err := s.st.Move(ctx, m)
	if err != nil {
		return w, err
	}
	s.log.InfoContext(ctx, "withdrawal moved", "withdrawal", w.PublicID, "from", m.From, "to", m.To, "actor", m.Actor, "reason", m.Reason)
	if s.OnChange != nil {
		s.OnChange(moved, m.From)
	}
	return moved, nil
}

// Cancel is the owner's cancel of a withdrawal not yet sent: its amount
// is released. ErrNotCancellable once it was handed to the provider.
func (s *Service) Cancel(ctx context.Context, userID int64, publicID string) (Withdrawal, error) {
	w, err := s.Get(ctx, userID, publicID)
	if err != nil {
		return w, err
	}
	if w.Status == StatusCancelled {
		return w, nil
	}
	if w.Status != StatusRequested && w.Status != StatusApproved {
		return w, ErrNotCancellable
	}
	moved, err := s.move(ctx, w, Move{From: w.Status, To: StatusCancelled, Actor: ActorUser, Reason: ReasonCancelled,
		Fields: Fields{ClearNext: true}})
	if errors.Is(err, ErrNotMoved) {
		cur, gerr := s.st.Get(ctx, w.ID)
		switch {
		case gerr == nil && cur.Status == StatusCancelled:
			return cur, nil
		case gerr == nil:
			return cur, ErrNotCancellable // as it stands now: the page says why
		}
		return w, ErrNotCancellable
	}
	return moved, err
}

// CheckNote is an admin's note: required, one line of printable text
// (ErrNoteRequired otherwise); a page checks it before it spends a code.
func CheckNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	if note == "" || len(note) > 500 || usertext.CheckName(note) != nil {
		return "", ErrNoteRequired
	}
	return note, nil
}

// Approve is an admin's approval of a withdrawal waiting for review: the
// worker sends it next. Audited in the move's transaction.
func (s *Service) Approve(ctx context.Context, adminID int64, publicID, note string) (Withdrawal, error) {
	return s.review(ctx, adminID, publicID, note, true)
}

// Reject is an admin's refusal of a withdrawal waiting for review: its
// amount is released. Audited.
func (s *Service) Reject(ctx context.Context, adminID int64, publicID, note string) (Withdrawal, error) {
	return s.review(ctx, adminID, publicID, note, false)
}

func (s *Service) review(ctx context.Context, adminID int64, publicID, note string, approve bool) (Withdrawal, error) {
	note, err := CheckNote(note)
	if err != nil {
		return Withdrawal{}, err
	}
	w, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return w, err
	}
	if w.UserID == adminID {
		return w, ErrOwnWithdrawal
	}
	if w.Status != StatusRequested || !w.ReviewRequired {
		return w, ErrNotReviewable
	}
	now := s.clock()
	to, reason, action := StatusRejected, ReasonRejected, audit.ActionWithdrawalReject
	f := Fields{ReviewedBy: &adminID, ReviewNote: &note, ClearNext: true}
	if approve {
		to, reason, action = StatusApproved, ReasonApproved, audit.ActionWithdrawalApprove
		f = Fields{ReviewedBy: &adminID, ReviewNote: &note, NextCheckAt: &now}
	}
	uid := w.UserID
	moved, err := s.move(ctx, w, Move{From: StatusRequested, To: to, Actor: ActorAdmin, Reason: reason, AdminID: &adminID, Note: note, Now: now,
		Fields: f, Audit: &audit.Entry{AdminID: adminID, Action: action, TargetUserID: &uid, Note: w.PublicID + ": " + note,
			FromStatus: string(StatusRequested), ToStatus: string(to), Result: audit.ResultDone, CreatedAt: now}})
	if errors.Is(err, ErrNotMoved) {
		return w, ErrNotReviewable
	}
	if err == nil && approve {
		s.kick()
	}
	return moved, err
}

// AdminFail closes a withdrawal under review as failed, after the admin
// checked with the provider that it will not pay it: its amount is
// released. The provider is asked first (askBeforeClose) and its answer
// judged (DecideClose): refused (ErrProviderPaid) once the provider has
// said it transferred it, unless it says now, for certain, that it
// failed it (that money left, and released it would be paid twice);
// refused (ErrProviderHasIt, ErrProviderForgot) while it has it, or
// while it has not known a payout it had for UnknownReviewAfter. It
// takes the lease (ErrBusy while the worker asks the provider). Audited.
func (s *Service) AdminFail(ctx context.Context, adminID int64, publicID, note string) (Withdrawal, error) {
	return s.closeReview(ctx, adminID, publicID, note, StatusFailed)
}

// askBeforeClose asks w's provider, under the lease tok, where w stands
// before an admin closes it as to, within half the lease (the move needs
// the rest). A word that moves it otherwise (transferred or returned
// before a fail, returned before a pay) is applied as the worker applies
// it, and ended is true, with ErrProviderEnded or ErrProviderReturned.
// Any other word is recorded on the row and the lease kept for the
// admin's move (audited, with its note), which DecideClose judges by h,
// the word heard now. With no answer (its breaker open, an error;
// unasked, when its provider is no longer offered) h says so: a provider
// no longer configured may still pay what it took, so its silence is no
// answer either.
func (s *Service) askBeforeClose(ctx context.Context, w Withdrawal, tok string, to Status) (_ Withdrawal, ended bool, h Heard, _ error) {
	o, known := s.offer(w.Provider)
	if !known {
		return w, false, Heard{Unoffered: true}, nil
	}
	if payout.Down(o.Provider) {
		return w, false, Heard{}, nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseDuration/2)
	st, err := o.Provider.Status(resilient.WithRef(sctx, w.PublicID), w.PublicID)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "payout status before an admin's close: unknown; the recorded word stands", "withdrawal", w.PublicID, "provider", w.Provider, "to", to, "err", err)
		return w, false, Heard{}, nil
	}
	h = Heard{Answered: true, State: st.State}
	now := s.clock()
	d := DecideStatus(w, st, s.policy(o), now)
	if d.Anomaly != "" {
		s.log.WarnContext(ctx, "payout provider contradicts our record, asked before an admin's close", "withdrawal", w.PublicID,
			"provider", w.Provider, "anomaly", d.Anomaly, "to", to)
	}
	switch {
	case d.To == to && d.Then == "":
		// What the admin asked for: its close (audited, its note) goes
		// on, the provider's word recorded.
		d.To = ""
	case d.To == StatusFailed:
		// Failed, where the admin closes it as paid: refused
		// (DecideClose); its word recorded, the worker's next question
		// ends it.
		d.To = ""
	}
	if d.To != "" {
		// The provider's word, not the admin's: its moves (paid, and then
		// returned when it failed the payout by hand since) are the
		// worker's, as the worker would apply them.
		moved, err := s.apply(ctx, w, tok, o, ActorWorker, d, true)
		switch {
		case err == nil && moved.Status == StatusReturned:
			err = ErrProviderReturned
		case err == nil && moved.Status != to:
			err = ErrProviderEnded
		}
		return moved, true, h, err
	}
	w, err = s.st.Update(ctx, w.ID, tok, decisionFields(d, true, now), true)
	return w, false, h, err
}

// AdminPay closes a withdrawal under review as paid (the provider
// transferred it for another amount than ours, so a person looked): its
// hold is captured, as the worker's move to paid does. The provider is
// asked first, as before a fail, and only its word now that it
// transferred it lets the close go on (ErrPaidUnconfirmed otherwise: no
// answer, in progress, not found, failed; a word on the row from before
// is not enough, unless its provider is not offered now and nothing
// contradicted that word since: DecideClose). It takes the lease (ErrBusy while the worker asks the
// provider). Audited.
func (s *Service) AdminPay(ctx context.Context, adminID int64, publicID, note string) (Withdrawal, error) {
	return s.closeReview(ctx, adminID, publicID, note, StatusPaid)
}

// closeReview is an admin's close of a withdrawal under review, to
// StatusFailed or StatusPaid, after the provider was asked on the row
// it claimed, judged by DecideClose.
func (s *Service) closeReview(ctx context.Context, adminID int64, publicID, note string, to Status) (Withdrawal, error) {
	note, err := CheckNote(note)
	if err != nil {
		return Withdrawal{}, err
	}
	w, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return w, err
	}
	if w.UserID == adminID {
		return w, ErrOwnWithdrawal
	}
	if w.Status != StatusNeedsReview {
		return w, ErrNotReviewable
	}
	now := s.clock()
	tok := lifecycle.NewLeaseToken()
	w, ok, err := s.st.Claim(ctx, Claim{ID: w.ID, Statuses: []Status{StatusNeedsReview}, Token: tok, Now: now, Until: now.Add(s.cfg.LeaseDuration)})
	if err != nil {
		return w, err
	}
	if !ok {
		if w.Status != StatusNeedsReview {
			return w, ErrNotReviewable
		}
		return w, ErrBusy
	}
	// The provider's word now, not as the last check left it: a failure
	// releases the amount, which must not be out there too; a close as
	// paid captures it, which must have left.
	w, ended, h, err := s.askBeforeClose(ctx, w, tok, to)
	if err != nil || ended {
		return w, s.lapsed(ctx, w, err)
	}
	o, known := s.offer(w.Provider)
	reason, action := ReasonClosedByAdmin, audit.ActionWithdrawalFail
	f := Fields{ReviewedBy: &adminID, ReviewNote: &note, ClearNext: true}
	// The provider's word as the claimed row holds it, and as heard now:
	// the lease keeps the worker from changing it until this move is
	// written.
	err = DecideClose(w, to, h, s.policy(o), s.clock())
	switch {
	case err != nil:
	case to == StatusFailed && h.Answered && h.State == payout.StateFailed:
		// Its definite word now, recorded over an older one.
		failed := ProviderFailed
		f.ProviderState = &failed
	case to == StatusPaid:
		reason, action = ReasonPaidByAdmin, audit.ActionWithdrawalPaid
		s.watchPaid(o, known, now, &f)
	}
	if err != nil {
		if _, uerr := s.st.Update(ctx, w.ID, tok, Fields{}, false); uerr != nil {
			return w, errors.Join(err, uerr)
		}
		return w, err
	}
	uid := w.UserID
	moved, err := s.move(ctx, w, Move{From: StatusNeedsReview, To: to, Actor: ActorAdmin, Reason: reason, Lease: tok,
		AdminID: &adminID, Note: note, Now: now, Fields: f,
		Audit: &audit.Entry{AdminID: adminID, Action: action, TargetUserID: &uid, Note: w.PublicID + ": " + note,
			FromStatus: string(StatusNeedsReview), ToStatus: string(to), Result: audit.ResultDone, CreatedAt: now}})
	return moved, s.lapsed(ctx, w, err)
}

// lapsed is err, unless it says the lease on w lapsed before a move (a
// stalled database) and another actor took the row: nothing was
// written, and the admin hears it is not under review any more
// (ErrNotReviewable) or is being worked on (ErrBusy), and may try again.
func (s *Service) lapsed(ctx context.Context, w Withdrawal, err error) error {
	if !errors.Is(err, ErrNotMoved) {
		return err
	}
	if cur, gerr := s.st.Get(ctx, w.ID); gerr == nil && cur.Status != StatusNeedsReview {
		return ErrNotReviewable
	}
	return ErrBusy
}
