// Package transfer is money sent from one person's wallet to another's
// (ARCHITECTURE §2.2, docs/design/transfers.md): the one use case the
// page /wallet/transfer and POST /api/v1/transfers both call, its
// refusals, and its store (store.go, every SQL string of a transfer).
//
// A transfer is written once, whole, in one database transaction:
//
//  1. its row in transfers, whose unique (sender_user_id, form_token) makes
//     a second submit of one form (a double click, Back then submit) or
//     one Idempotency-Key a replay: the first transfer is the answer;
//  2. the sender's day total, by a guarded upsert (only when
//     TRANSFER_DAILY_MAX_RIALS is on): the daily limit is enforced in the
//     write, racing transfers never pass it;
//  3. the ledger transaction (kind transfer, reference = the transfer's
//     public id), whose guarded UPDATE keeps the sender's available
//     balance at zero or more, its accounts locked in ascending id (A→B
//     and B→A never deadlock);
//  4. the webhook outbox rows (transfer.sent to the sender's endpoints,
//     transfer.received to the recipient's).
//
// Each person's mail is queued after the fact, from the committed
// transfers (notify.ScanTransfers), never in the transfer's transaction.
//
// A refusal (short balance, unknown recipient or self, amount out of
// range, a limit) rolls the whole transaction back: it writes nothing.
package transfer

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/email"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/usertext"
)

// MaxNoteLen is the longest note, in characters.
const MaxNoteLen = 140

// MaxRials is the largest single transfer: far above any balance, it keeps
// the sums of a day within int64.
const MaxRials int64 = 1_000_000_000_000

// StatusCompleted is every transfer's status: a transfer is written whole
// or not at all, so there is no other.
const StatusCompleted = "completed"

// The refusals. Each writes nothing.
var (
	// ErrInsufficientFunds: the sender's available balance is short.
	ErrInsufficientFunds = errors.New("transfer: available balance is short")
	// ErrSenderUnconfirmed: the sender has not confirmed their own
	// address yet; until they do, nothing is sent in its name. It is
	// owner.ErrUnconfirmed, as every service answers it.
	ErrSenderUnconfirmed = owner.ErrUnconfirmed
	// ErrRecipientNotFound: no user has the recipient's address (or its
	// owner has not confirmed it).
	ErrRecipientNotFound = errors.New("transfer: no such recipient")
	// ErrToSelf: the recipient is the sender.
	ErrToSelf = errors.New("transfer: recipient is the sender")
	// ErrDailyLimit: the sender's transfers today would pass
	// TRANSFER_DAILY_MAX_RIALS.
	ErrDailyLimit = errors.New("transfer: daily limit reached")
	// ErrNoteTooLong and ErrNoteInvalid: the note breaks its rules.
	ErrNoteTooLong = errors.New("transfer: note longer than 140 characters")
	ErrNoteInvalid = errors.New("transfer: note holds control, line-break or invisible characters")
	// ErrBadFormToken: the form's token has not the shape of one (an
	// old or forged form).
	ErrBadFormToken = errors.New("transfer: bad form token")
	// ErrTokenReused: the form token (or Idempotency-Key) already made
	// another transfer (another recipient, amount or note). Not a replay.
	ErrTokenReused = errors.New("transfer: form token already used for another transfer")
	// ErrNotFound: no such transfer of the user's.
	ErrNotFound = errors.New("transfer: not found")
)

// Transfer is one transfer, as both people see it.
type Transfer struct {
	ID              int64
	PublicID        string
	SenderUserID    int64
	RecipientUserID int64
	SenderEmail     string
	RecipientEmail  string
	AmountRials     int64
	Note            string
	CreatedAt       time.Time
	// LedgerTransactionID is its ledger transaction's id (0 on a read
	// that does not join it).
	LedgerTransactionID int64
}

// Config are the transfer rules.
type Config struct {
	// MinRials is the smallest transfer (TRANSFER_MIN_RIALS, never off).
	MinRials int64
	// DailyMaxRials is what one sender may send per Tehran day
	// (TRANSFER_DAILY_MAX_RIALS); 0 turns it off.
	DailyMaxRials int64
}

// Limits are the amount rules of one transfer.
func (c Config) Limits() money.Limits { return money.Limits{MinRials: c.MinRials, MaxRials: MaxRials} }

// Request is one submit of a transfer.
type Request struct {
	SenderUserID int64
	// FormToken makes the submit happen once: the form's hidden token,
	// or the API's, derived from its Idempotency-Key.
	FormToken   string
	ToEmail     string
	AmountRials int64
	Note        string
}

// Quote is what the confirmation step shows before anything is written.
type Quote struct {
	RecipientUserID int64
	RecipientEmail  string
	// RecipientName is the display name the recipient gave on their
	// account page ("" when none).
	RecipientName string
	AmountRials   int64
	Note          string
	// AvailableRials is the sender's available balance now, and
	// AfterRials what it would be after the transfer.
	AvailableRials int64
	AfterRials     int64
}

// Hooks are told of a committed transfer (to wake the webhook sender);
// nil: nothing is.
type Hooks struct {
	WebhookQueued func()
}

// Service is the transfer use case.
type Service struct {
	st    *Store
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
	hooks Hooks
	keys  *idempotency.Store
	pace  *ratelimit.Window // each sender's transfers made a minute (nil: none)
}

// New returns the service over its store.
func New(st *Store, cfg Config, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MinRials <= 0 {
		cfg.MinRials = money.RialsPerToman
	}
	return &Service{st: st, cfg: cfg, now: now, log: log}
}

// WithReadPool returns the service with its lists (List, Search) read
// from pool (DATABASE_READ_URL, else the primary); a transfer, its
// receipt (Get, Admin) and everything Send decides on read the primary
// (docs/design/scaling.md#read-replicas).
func (s *Service) WithReadPool(pool *store.ReadPool) *Service {
	st := *s.st
	st.reads = pool
	cp := *s
	cp.st = &st
	return &cp
}

// WithHooks sets what is told of a committed transfer.
func (s *Service) WithHooks(h Hooks) *Service { s.hooks = h; return s }

// WithKeys sets the API's idempotency keys (SendKeyed).
func (s *Service) WithKeys(k *idempotency.Store) *Service { s.keys = k; return s }

// WithPace bounds each sender's transfers made (RATE_LIMIT_TRANSFERS a
// minute, through the page and every token together) and returns s: a
// transfer past it is refused with a *PaceError, its transaction rolled
// back (it wrote nothing). The place is taken inside the transfer's
// transaction, once the request's Idempotency-Key (claimed) and form
// token (its transfer's row) are its own: a repeat of a form or key
// whose first request is still in flight waits on their unique indexes
// and is answered with the first (a replay, or in use), never refused by
// the pace; a replay is never refused, nor counted.
func (s *Service) WithPace(w *ratelimit.Window) *Service { s.pace = w; return s }

// PaceError refuses a transfer past the sender's RATE_LIMIT_TRANSFERS:
// this request wrote nothing, and its key or form token made no transfer
// (the place is taken only once they are its own); retry after Wait.
type PaceError struct {
	Wait time.Duration
	Max  int
}

func (e *PaceError) Error() string {
	return fmt.Sprintf("transfer: more than %d a minute; retry in %v", e.Max, e.Wait)
}

// paced is the sender's pace for one write (write.pace: nil without a
// pace) and the end of the place it took: done, called once the write
// returned, counts the place when the transfer was made and gives it back
// otherwise (nothing when no place was taken: a replay, a refusal before
// the pace, or the pace's own refusal).
func (s *Service) paced(userID int64) (take func() error, done func(made bool)) {
	if s.pace == nil {
		return nil, func(bool) {}
	}
	var place *ratelimit.Reservation
	take = func() error {
		p, wait, ok := s.pace.Reserve("u" + strconv.FormatInt(userID, 10))
		if !ok {
			return &PaceError{Wait: wait, Max: s.pace.Max()}
		}
		place = p
		return nil
	}
	return take, func(made bool) {
		switch {
		case place == nil:
		case made:
			place.Count()
		default:
			place.Release()
		}
	}
}

// Config is the service's rules (for the form's hints).
func (s *Service) Config() Config { return s.cfg }

// CheckNote applies the note's rules: at most MaxNoteLen characters, on
// one line. A note is shown inside the receipts (the recipient's
// plain-text mail among them), so a line break in it could forge a
// receipt's lines: it is a name's text (usertext.CheckName: no Cc
// character, line feeds, carriage returns and tabs included, no Cf but
// the ZWNJ Persian is spelled with), and no line or paragraph separator
// (U+2028, U+2029) either.
func CheckNote(note string) error {
	if utf8.RuneCountInString(note) > MaxNoteLen {
		return ErrNoteTooLong
	}
	if note == "" {
		return nil
	}
	if usertext.CheckName(note) != nil || strings.ContainsFunc(note, lineBreak) {
		return ErrNoteInvalid
	}
	return nil
}

// lineBreak: r ends a line though it is no control character (Zl U+2028,
// Zp U+2029).
func lineBreak(r rune) bool { return unicode.In(r, unicode.Zl, unicode.Zp) }

// check is every rule a request must pass before the database is asked,
// in a fixed order; it returns the recipient's address in its stored form.
func (s *Service) check(r Request) (string, error) {
	if err := s.cfg.Limits().Check(r.AmountRials); err != nil {
		return "", err
	}
	if s.cfg.DailyMaxRials > 0 && r.AmountRials > s.cfg.DailyMaxRials {
		return "", ErrDailyLimit
	}
	if err := CheckNote(r.Note); err != nil {
		return "", err
	}
	to, err := email.Normalize(strings.TrimSpace(r.ToEmail))
	if err != nil {
		return "", ErrRecipientNotFound
	}
	return to, nil
}

// admit is the rules of a transfer's two people, in a fixed order: the
// sender exists (an error, not a refusal, when not) and has confirmed
// their address (a transfer names its sender's address to the recipient,
// and an unconfirmed one may be a stranger's); the sender's available
// balance covers the amount (no wallet yet: nothing available) and the
// day's limit allows it; then only the recipient is known, confirmed and
// not the sender. The sender's own refusals come before any about the
// recipient, so that a refusal never tells whether an address has an
// account unless the request could otherwise have been made: a short
// wallet is refused alike for every address, and its refusal takes
// nothing of the unknown-recipient allowance (docs/design/transfers.md).
// The balance and the day's total are a read here; the write's guarded
// UPDATE and upsert decide. The address is confirmed once for good (a
// confirmation is never undone), so this read outside the write holds at
// the write.
func (s *Service) admit(r Request, sender, rcpt party) error {
	switch {
	case sender.ID == 0:
		return fmt.Errorf("transfer from user %d: %w", r.SenderUserID, ledger.ErrAccountNotFound)
	case !sender.Verified:
		return ErrSenderUnconfirmed
	case sender.AccountID == 0, r.AmountRials > sender.AvailableRials:
		return ErrInsufficientFunds
	case s.cfg.DailyMaxRials > 0 && sender.SentRials+r.AmountRials > s.cfg.DailyMaxRials:
		return ErrDailyLimit
	case rcpt.ID == 0:
		return ErrRecipientNotFound
	case rcpt.ID == r.SenderUserID:
		return ErrToSelf
	}
	return nil
}

// Quote checks a request as Send would, without writing: the sender's
// balance and day, then the recipient, the balance now and after. A
// quote is no promise: Send checks everything again, in the write.
func (s *Service) Quote(ctx context.Context, r Request) (Quote, error) {
	to, err := s.check(r)
	if err != nil {
		return Quote{}, err
	}
	sender, rcpt, err := s.st.parties(ctx, r.SenderUserID, to, limits.DayStart(s.now()))
	if err != nil {
		return Quote{}, err
	}
	if err := s.admit(r, sender, rcpt); err != nil {
		return Quote{}, err
	}
	return Quote{RecipientUserID: rcpt.ID, RecipientEmail: rcpt.Email, RecipientName: rcpt.DisplayName, AmountRials: r.AmountRials, Note: r.Note,
		AvailableRials: sender.AvailableRials, AfterRials: sender.AvailableRials - r.AmountRials}, nil
}

// Result is Send's answer.
type Result struct {
	Transfer Transfer
	// Replayed: the form token (or key) had made this transfer already;
	// nothing new was written.
	Replayed bool
}

// Send makes the transfer once: a second submit with the same form token
// answers with the first transfer (Replayed); with the same token and
// another recipient, amount or note, ErrTokenReused. Every refusal writes
// nothing.
func (s *Service) Send(ctx context.Context, r Request) (Result, error) {
	if !formtoken.Valid(r.FormToken) {
		return Result{}, ErrBadFormToken
	}
	to, err := s.check(r)
	if err != nil {
		return s.refuse(ctx, r, err)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	sender, rcpt, err := s.st.parties(ctx, r.SenderUserID, to, limits.DayStart(now))
	if err != nil {
		return Result{}, err
	}
	if err := s.admit(r, sender, rcpt); err != nil {
		if errors.Is(err, ledger.ErrAccountNotFound) {
			return Result{}, err
		}
		return s.refuse(ctx, r, err)
	}
	t := Transfer{PublicID: NewPublicID(), SenderUserID: sender.ID, RecipientUserID: rcpt.ID, SenderEmail: sender.Email,
		RecipientEmail: rcpt.Email, AmountRials: r.AmountRials, Note: r.Note, CreatedAt: now}
	take, done := s.paced(r.SenderUserID)
	w := write{t: t, token: r.FormToken, from: sender.AccountID, to: rcpt.AccountID, dailyMax: s.cfg.DailyMaxRials, day: limits.DayStart(now),
		pace: take}
	made := false
	defer func() { done(made) }() // a panic in the write gives the place back too
	out, err := s.st.write(ctx, w)
	made = err == nil
	switch {
	case errors.Is(err, ErrDailyLimit), errors.Is(err, ledger.ErrInsufficientFunds):
		// Refused by the write; a replay never reaches it (its insert
		// conflicts first).
		if errors.Is(err, ledger.ErrInsufficientFunds) {
			err = fmt.Errorf("%w: %w", ErrInsufficientFunds, err)
		}
		return Result{}, err
	case errors.Is(err, errReplay):
		first, ferr := s.st.byToken(ctx, r.SenderUserID, r.FormToken)
		if ferr != nil {
			return Result{}, errors.Join(err, ferr)
		}
		return s.replay(ctx, r, first)
	case err != nil:
		// A *PaceError too: the form's token was this request's (its
		// row inserted, then rolled back), so it made no transfer.
		return Result{}, err
	}
	if out.webhooks > 0 && s.hooks.WebhookQueued != nil {
		s.hooks.WebhookQueued()
	}
	s.log.InfoContext(ctx, "transfer made", "transfer", out.t.PublicID, "amount_rials", out.t.AmountRials)
	return Result{Transfer: out.t}, nil
}

// Keyed is SendKeyed's answer. Outcome Acquired: the transfer was made
// now (Transfer) and Answer is the response stored with its key; Replay:
// Answer is the response the key's first request stored; InUse and
// Mismatch as idempotency.Store.Begin decides them (nothing written).
type Keyed struct {
	Outcome  idempotency.Outcome
	Answer   idempotency.Answer
	Transfer Transfer
}

// The API's answer to a transfer made: 201 and the transfer as the sender
// sees it.
const (
	answerStatus = 201
	answerType   = "application/json"
)

// SendKeyed is POST /api/v1/transfers: Send for a request with an
// Idempotency-Key, the key's record, the transfer and the stored answer
// written in one database transaction (one commit):
//
//   - a key whose request finished answers with its stored response
//     (one read, nothing written); a key of another request is a
//     Mismatch, one still leased InUse;
//   - a new key is claimed (idempotency.Store.Claim, its record already
//     holding the answer) as the transaction's first statement, so that
//     its unique index orders racing requests with one key before they
//     touch anything else; the loser answers from the winner's record;
//   - the sender's place in RATE_LIMIT_TRANSFERS (WithPace) is taken in
//     that transaction, after the key's claim: a request whose key is
//     held by another, in flight or done, is answered from it (replay or
//     in use), never paced before its key is settled;
//   - a refusal (every one Send has, and the pace's) rolls the key back
//     with the rest: nothing is stored, and the same key works again
//     once the balance or the limit allows it;
//   - a key left unfinished by an older instance (Begin, Release) goes
//     the old way: Begin takes it over, Send finds the transfer it may
//     have made, Finish stores the answer.
func (s *Service) SendKeyed(ctx context.Context, r Request, k idempotency.Request) (Keyed, error) {
	if s.keys == nil {
		return Keyed{}, errors.New("transfer: no idempotency keys (WithKeys)")
	}
	// A few rounds: a key claimed by a racing request that then rolled
	// back, or deleted by the keys' cleanup, between the read and the
	// claim, is looked at again.
	for attempt := 0; attempt < 5; attempt++ {
		out, rec, found, err := s.keys.Lookup(ctx, k)
		switch {
		case err != nil:
			return Keyed{}, err
		case found && out == idempotency.Acquired:
			return s.sendLegacy(ctx, r, k)
		case found:
			return keyedAnswer(out, rec), nil
		}
		res, err := s.sendClaimed(ctx, r, k)
		if errors.Is(err, errKeyTaken) {
			continue
		}
		var pace *PaceError
		if errors.As(err, &pace) || errors.Is(err, ErrInsufficientFunds) || errors.Is(err, ErrDailyLimit) {
			// Paced only once the key was this request's (claimed, then
			// rolled back with the rest): a request with the same key
			// that was waiting on its unique index may have claimed it
			// since, and is answered (in use, or its replay) rather than
			// a refusal. The balance and the day's total are read before
			// the claim too (admit): a request with the same key that
			// committed after the lookup above may be what made them
			// short, and this one is its replay, not a refusal.
			if out, rec, found, lerr := s.keys.Lookup(ctx, k); lerr == nil && found && out != idempotency.Acquired {
				return keyedAnswer(out, rec), nil
			}
		}
		return res, err
	}
	return Keyed{Outcome: idempotency.InUse}, nil
}

// errKeyTaken: the request's key was claimed by another request first.
var errKeyTaken = errors.New("transfer: idempotency key taken by another request")

func keyedAnswer(out idempotency.Outcome, rec idempotency.Record) Keyed {
	k := Keyed{Outcome: out}
	if out == idempotency.Replay {
		k.Answer = idempotency.Answer{Status: *rec.ResponseStatus, ContentType: rec.ResponseType, Body: []byte(*rec.ResponseBody)}
	}
	return k
}

// sendClaimed is Send with the key claimed inside the transfer's
// transaction.
func (s *Service) sendClaimed(ctx context.Context, r Request, k idempotency.Request) (Keyed, error) {
	to, err := s.check(r)
	if err != nil {
		return Keyed{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	sender, rcpt, err := s.st.parties(ctx, r.SenderUserID, to, limits.DayStart(now))
	if err != nil {
		return Keyed{}, err
	}
	if err := s.admit(r, sender, rcpt); err != nil {
		return Keyed{}, err
	}
	t := Transfer{PublicID: NewPublicID(), SenderUserID: sender.ID, RecipientUserID: rcpt.ID, SenderEmail: sender.Email,
		RecipientEmail: rcpt.Email, AmountRials: r.AmountRials, Note: r.Note, CreatedAt: now}
	// The answer is known before the write: every field of the view is.
	body, err := json.Marshal(EventView(t, sender.ID))
	if err != nil {
		return Keyed{}, fmt.Errorf("transfer's answer: %w", err)
	}
	ans := idempotency.Answer{Status: answerStatus, ContentType: answerType, Body: body}
	// The sender's place in the pace is taken in the write, after the
	// key's claim: a request whose key another request holds (in flight
	// or done) waits on the key's unique index and answers from it, never
	// refused by the pace before its key is settled.
	take, done := s.paced(r.SenderUserID)
	w := write{t: t, from: sender.AccountID, to: rcpt.AccountID, dailyMax: s.cfg.DailyMaxRials, day: limits.DayStart(now), pace: take,
		claim: func(tx *gorm.DB) (string, error) {
			rec, ok, err := s.keys.Claim(tx, k, now, ans)
			switch {
			case err != nil:
				return "", err
			case !ok:
				return "", errKeyTaken
			}
			return s.keys.FormToken(rec), nil
		}}
	made := false
	defer func() { done(made) }() // a panic in the write gives the place back too
	out, err := s.st.write(ctx, w)
	made = err == nil
	switch {
	case errors.Is(err, ledger.ErrInsufficientFunds):
		return Keyed{}, fmt.Errorf("%w: %w", ErrInsufficientFunds, err)
	case err != nil:
		// errKeyTaken, ErrDailyLimit, a *PaceError, or a failure: the
		// transaction rolled back, the key with it.
		return Keyed{}, err
	}
	if out.webhooks > 0 && s.hooks.WebhookQueued != nil {
		s.hooks.WebhookQueued()
	}
	s.log.InfoContext(ctx, "transfer made", "transfer", out.t.PublicID, "amount_rials", out.t.AmountRials)
	return Keyed{Outcome: idempotency.Acquired, Answer: ans, Transfer: out.t}, nil
}

// sendLegacy is the way of a key its request left unfinished (an older
// instance's Begin and Release): Begin takes it over, Send makes the
// transfer or finds the one the first request made (the key's form
// token), Finish stores the answer; a refusal only releases the key it
// took over (Discard: that request may have made its effect), as a
// failure does, for a retry.
func (s *Service) sendLegacy(ctx context.Context, r Request, k idempotency.Request) (Keyed, error) {
	out, rec, err := s.keys.Begin(ctx, k)
	if err != nil {
		return Keyed{}, err
	}
	if out != idempotency.Acquired {
		return keyedAnswer(out, rec), nil
	}
	r.FormToken = s.keys.FormToken(rec)
	res, err := s.Send(ctx, r)
	switch {
	case errors.Is(err, ErrInsufficientFunds), errors.Is(err, ErrRecipientNotFound), errors.Is(err, ErrToSelf),
		errors.Is(err, ErrSenderUnconfirmed), errors.Is(err, ErrDailyLimit), errors.Is(err, ErrNoteTooLong), errors.Is(err, ErrNoteInvalid), isAmountRule(err):
		if derr := s.keys.Discard(ctx, rec); derr != nil {
			s.log.ErrorContext(ctx, "discard idempotency key", "err", derr)
		}
		return Keyed{}, err
	case err != nil:
		if rerr := s.keys.Release(ctx, rec); rerr != nil {
			s.log.ErrorContext(ctx, "release idempotency key", "err", rerr)
		}
		return Keyed{}, err
	}
	body, err := json.Marshal(EventView(res.Transfer, r.SenderUserID))
	if err != nil {
		return Keyed{}, errors.Join(fmt.Errorf("transfer's answer: %w", err), s.keys.Release(ctx, rec))
	}
	ans := idempotency.Answer{Status: answerStatus, ContentType: answerType, Body: body}
	if _, err := s.keys.Finish(ctx, rec, ans.Status, ans.ContentType, ans.Body, nil); err != nil {
		s.log.ErrorContext(ctx, "store idempotent response", "err", err)
	}
	return Keyed{Outcome: idempotency.Acquired, Answer: ans, Transfer: res.Transfer}, nil
}

// isAmountRule: err is one of the amount's rules (money's errors).
func isAmountRule(err error) bool {
	for _, e := range []error{money.ErrNotPositive, money.ErrNotWholeTomans, money.ErrTooSmall, money.ErrTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// refuse answers a request the rules refuse, unless its form token made a
// transfer already: a replay is answered with that transfer whatever the
// rules say now (a transfer made yesterday is made, whatever today's
// limit), so the lookup is only on the way to a refusal, never on a new
// transfer's path.
func (s *Service) refuse(ctx context.Context, r Request, refusal error) (Result, error) {
	first, err := s.st.byToken(ctx, r.SenderUserID, r.FormToken)
	switch {
	case err == nil:
		return s.replay(ctx, r, first)
	case errors.Is(err, ErrNotFound):
		return Result{}, refusal
	}
	return Result{}, errors.Join(refusal, err)
}

// replay answers a submit whose token made a transfer already: that
// transfer when the request is the same, ErrTokenReused when not.
func (s *Service) replay(ctx context.Context, r Request, first Transfer) (Result, error) {
	if !SameRequest(r, first) {
		return Result{Transfer: first}, ErrTokenReused
	}
	return Result{Transfer: first, Replayed: true}, nil
}

// SameRequest reports whether r asks for the transfer first made: the
// same amount and note, and the same recipient once its address is
// normalised as the transfer's was (an address typed in another case,
// in full-width letters or with an IDN domain in Unicode is the same).
func SameRequest(r Request, first Transfer) bool {
	to, _ := email.Normalize(strings.TrimSpace(r.ToEmail))
	return to == first.RecipientEmail && r.AmountRials == first.AmountRials && r.Note == first.Note
}

// Get reads a transfer the user sent or received.
func (s *Service) Get(ctx context.Context, userID int64, publicID string) (Transfer, error) {
	return s.st.get(ctx, userID, publicID)
}

// List returns up to limit of the transfers the user sent or received,
// newest first, older than the transfer id before (0: from the newest),
// and the cursor of the next page (0: none).
func (s *Service) List(ctx context.Context, userID, before int64, limit int) ([]Transfer, int64, error) {
	return s.st.list(ctx, userID, before, limit)
}

// ByReferences reads the user's transfers of the given public ids (the
// references of the ledger rows of a wallet's history), by public id,
// without their LedgerTransactionID (0): the caller read them from the
// ledger.
func (s *Service) ByReferences(ctx context.Context, userID int64, publicIDs []string) (map[string]Transfer, error) {
	return s.st.byPublicIDs(ctx, userID, publicIDs)
}

// Search finds transfers for the admin console: by public id, or by the
// e-mail address of either person; newest first, at most limit. The
// list and the address search leave LedgerTransactionID 0 (the
// transfer's page reads its ledger transaction).
func (s *Service) Search(ctx context.Context, q string, limit int) ([]Transfer, error) {
	return s.st.search(ctx, strings.TrimSpace(q), limit)
}

// Admin reads any transfer by public id (the admin console).
func (s *Service) Admin(ctx context.Context, publicID string) (Transfer, error) {
	return s.st.get(ctx, 0, publicID)
}

// NewPublicID returns a fresh transfer id: "tr_" and 26 base32 characters.
func NewPublicID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "tr_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// MaskEmail shows an address the way a confirmation step names its
// recipient: the first character of its local part, stars, and the
// domain ("a***@example.com").
func MaskEmail(addr string) string {
	local, domain, ok := strings.Cut(addr, "@")
	if !ok || local == "" {
		return "***"
	}
	r, _ := utf8.DecodeRuneInString(local)
	return string(r) + "***@" + domain
}

// Direction says how a transfer looks to userID: "sent" or "received".
func (t Transfer) Direction(userID int64) string {
	if t.SenderUserID == userID {
		return "sent"
	}
	return "received"
}

// Counterparty is the other person's address, as userID sees it.
func (t Transfer) Counterparty(userID int64) string {
	if t.SenderUserID == userID {
		return t.RecipientEmail
	}
	return t.SenderEmail
}

// View is a transfer as the API shows it (GET /api/v1/transfers/{id}) and
// as its webhook events carry it: one type for both.
type View struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	Direction   string    `json:"direction"`
	AmountRials int64     `json:"amount_rials"`
	FromEmail   string    `json:"from_email"`
	ToEmail     string    `json:"to_email"`
	Note        string    `json:"note"`
	CreatedAt   time.Time `json:"created_at"`
}

// EventView is t as userID sees it.
func EventView(t Transfer, userID int64) View {
	return View{ID: t.PublicID, Status: StatusCompleted, Direction: t.Direction(userID), AmountRials: t.AmountRials,
		FromEmail: t.SenderEmail, ToEmail: t.RecipientEmail, Note: t.Note, CreatedAt: t.CreatedAt.UTC()}
}

// ByToken reads the sender's transfer made with form token (ErrNotFound:
// none yet).
func (s *Service) ByToken(ctx context.Context, senderID int64, token string) (Transfer, error) {
	return s.st.byToken(ctx, senderID, token)
}
