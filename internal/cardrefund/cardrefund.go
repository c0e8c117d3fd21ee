// Package cardrefund gives a credited top-up, part or all of it, back to
// the payer's card through the top-up's own gateway (issue 30 §3): an
// admin starts it from the top-up's page; Zarinpal refunds through its
// refund API (AddRefund), SEP reverses the whole sale within its window;
// Mellat (only before settle, so never once credited) and Zibal (no way
// the references confirm) cannot.
//
// A card refund is a lifecycle on the skeleton of internal/lifecycle: the
// statuses below, the edge table in machine.go, one writer (the store's
// Move: a conditional UPDATE on the expected status, the event row, the
// money, the partners' webhook and the audit row in one transaction),
// pure decisions (decide.go), and a worker round that asks the bank about
// what is still unknown.
//
//	(start)   ──────────▶ held        the wallet's amount is held, with the row, before any call
//	held      ──────────▶ submitted   the call is about to be sent (the attempt is recorded first) [lease]
//	held      ──────────▶ failed      the window closed, or the gateway went away, before it was sent [lease]
//	submitted ──────────▶ held        certainly not sent (a lookup failed, the breaker was open): sent again later [lease]
//	submitted ──────────▶ refunded    the bank accepted it, or its status says it was made (lease or not)
//	submitted ──────────▶ failed      the bank refused it, or its status says it was never made [lease]
//	submitted ──────────▶ needs_review the bank's figures differ, or no answer within the budget [lease]
//	needs_review ───────▶ submitted   an admin asks the bank again [lease]
//	needs_review ───────▶ refunded    an admin saw it made at the bank (a note) [lease]
//	needs_review ───────▶ failed      an admin saw it not made (a note) [lease]
//
// Money: held is a ledger hold on the wallet (the amount leaves what the
// payer may spend, not yet the wallet); refunded captures it into card
// refunds in flight and moves it on to the gateway's clearing side (two
// card_refund transactions, in the move's transaction); failed releases
// it. needs_review keeps it held.
//
// Exactly once: no gateway takes an idempotency key for a refund, so the
// guard is ours. At most one card refund of a top-up is unresolved at a
// time (a unique index on the top-up over the open statuses), the row is
// written before the bank is asked, the call is sent once (never again
// for the same row), and a call whose answer never came is unknown until
// the bank's own record says what became of it (Ops.RefundStatus),
// believed "not made" only long after the call (Config.NotDoneAfter).
package cardrefund

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Status is where a card refund stands.
type Status string

const (
	StatusHeld        Status = "held"
	StatusSubmitted   Status = "submitted"
	StatusRefunded    Status = "refunded"
	StatusFailed      Status = "failed"
	StatusNeedsReview Status = "needs_review"
)

// Open reports whether the card refund is unresolved: a top-up has at most
// one open card refund (the unique index's statuses).
func (s Status) Open() bool {
	return s == StatusHeld || s == StatusSubmitted || s == StatusNeedsReview
}

// Terminal reports whether nothing leaves the status.
func (s Status) Terminal() bool { return s == StatusRefunded || s == StatusFailed }

// Actor is who takes an edge.
type Actor string

const (
	ActorAdmin  Actor = "admin"  // an admin's request (start, review)
	ActorWorker Actor = "worker" // the background worker
)

// Reason says why a card refund moved (card_refund_events.reason,
// card_refunds.status_reason): codes the pages translate.
type Reason string

const (
	ReasonSent           Reason = "sent"            // held → submitted
	ReasonNotSent        Reason = "not_sent"        // submitted → held; held → failed when it could never be sent
	ReasonBankAccepted   Reason = "bank_accepted"   // the bank's answer to the call
	ReasonBankConfirmed  Reason = "bank_confirmed"  // the bank's record, asked after an unknown outcome
	ReasonBankRefused    Reason = "bank_refused"    // the bank's definite refusal
	ReasonNotAtBank      Reason = "not_at_bank"     // the bank's record holds no such refund, long after the call
	ReasonWindowClosed   Reason = "window_closed"   // a reverse's window closed before it was sent
	ReasonUnavailable    Reason = "unavailable"     // the gateway is no longer configured for it
	ReasonBankDiffers    Reason = "bank_differs"    // the bank's figures match neither outcome
	ReasonBudgetSpent    Reason = "budget_spent"    // no definite answer within Config.CheckBudget
	ReasonAdminRecheck   Reason = "admin_recheck"   // an admin asks the bank again
	ReasonAdminConfirmed Reason = "admin_confirmed" // an admin saw it made at the bank
	ReasonAdminClosed    Reason = "admin_closed"    // an admin saw it not made
	// ReasonBankAcceptedLate notes (an event that changes no status) the
	// bank's acceptance of a call whose card refund had meanwhile ended
	// failed here: the money may be out twice.
	ReasonBankAcceptedLate Reason = "bank_accepted_late"
)

// Method is how the gateway gives the money back.
type Method string

const (
	MethodRefund  Method = "refund"  // a refund API (Zarinpal's AddRefund)
	MethodReverse Method = "reverse" // a reversal of the whole sale (SEP)
)

// Waiting is a card refund under review, with its top-up's public id
// (the admin's page where it is resolved).
type Waiting struct {
	CardRefund
	TopUpPublicID string
}

// CardRefund is one card refund.
type CardRefund struct {
	ID          int64
	PublicID    string
	TopUpID     int64
	UserID      int64
	WalletID    int64
	Gateway     string
	Method      Method
	AmountRials int64
	// RefundedBeforeRials is what of the top-up had been refunded to the
	// card when this one started (at most one is open at a time, so it is
	// the bank's figure before this one too).
	RefundedBeforeRials int64
	Status              Status
	StatusReason        Reason
	HoldID              int64
	// BankReference is the bank's id of the refund, once it gave one;
	// BankCode its last definite code.
	BankReference string
	BankCode      *int
	Attempts      int // calls sent (0 or 1: a refund is never sent twice)
	Checks        int // the bank asked about it since
	SubmittedAt   *time.Time
	NextCheckAt   *time.Time
	LastCheckedAt *time.Time
	LeaseUntil    *time.Time
	LeaseOwner    string
	AdminID       int64 // who started it
	Note          string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	ResolvedAt    *time.Time
}

// Event is one status change of a card refund (card_refund_events).
type Event struct {
	ID           int64
	CardRefundID int64
	FromStatus   Status
	ToStatus     Status
	Actor        Actor
	Reason       Reason
	BankCode     *int
	AdminID      *int64
	CreatedAt    time.Time
}

// TopUp is what a card refund needs of its top-up.
type TopUp struct {
	ID          int64
	PublicID    string
	UserID      int64
	WalletID    int64
	Gateway     string
	AmountRials int64
	Credited    bool
	Authority   string
	RefID       int64
	Receipt     string // SEP's RefNum, Mellat's SaleReferenceId
	CreatedAt   time.Time
}

// The errors of the use cases.
var (
	ErrNotFound       = errors.New("card refund: not found")
	ErrTopUpNotFound  = errors.New("card refund: no such top-up")
	ErrNotOffered     = errors.New("card refund: not offered for this top-up")
	ErrAmountTooSmall = errors.New("card refund: amount below the smallest refund")
	ErrAmountTooLarge = errors.New("card refund: amount above what may go back")
	ErrInProgress     = errors.New("card refund: another card refund of this top-up is not resolved")
	ErrOverRefunded   = errors.New("card refund: more than the top-up's un-refunded amount")
	ErrSpent          = errors.New("card refund: the wallet no longer holds the amount")
	ErrNoteRequired   = errors.New("card refund: a note is required")
	ErrNotUnderReview = errors.New("card refund: not under review")
	ErrBusy           = errors.New("card refund: another actor holds it")
	// ErrOwnTopUp: an admin does not refund their own top-up to their
	// card, nor close their own card refund; another admin does.
	ErrOwnTopUp = errors.New("card refund: an admin's own top-up is another admin's to refund")
	// ErrBankMadeIt: an admin's close as not made, refused: asked first,
	// the bank's record shows the refund made, or figures that match
	// neither (a refund made elsewhere, another amount). Released, the
	// amount would be back in the wallet as well as on the card. The
	// admin looks at the bank's panel, and closes it as made or asks the
	// bank again.
	ErrBankMadeIt = errors.New("card refund: the bank's record shows the refund made, or figures that differ; not closed as not made")
	// ErrBankNoAnswer: an admin's close as not made, refused: asked
	// first, the bank gave no definite word that the refund was not made
	// (no answer, or no way to ask it: the gateway not configured). The
	// amount stays held; the admin tries again later.
	ErrBankNoAnswer = errors.New("card refund: the bank gave no definite word that the refund was not made; not closed as not made")
	// ErrTooEarlyToCloseNotMade: an admin's close as not made, refused:
	// the bank's word that the refund was not made is not believed yet,
	// so soon after the call (Config.NotDoneAfter, as the worker's
	// AfterStatus): a refund the bank accepted may not be in its record
	// yet (pending), and released here it would land on the card too. The
	// amount stays held; the admin closes it from TooEarlyError.From on.
	// The refusal is a *TooEarlyError, which is ErrBankNoAnswer too (no
	// definite word yet): pages that know only that one say "try again
	// later".
	ErrTooEarlyToCloseNotMade = errors.New("card refund: too soon after the call to believe the bank's word that the refund was not made; not closed as not made")
	// ErrNotMoved: the row was not in the expected status (or not held
	// by the lease): another actor moved it first.
	ErrNotMoved = errors.New("card refund: not moved")
	// ErrIllegalTransition is a programming error (an edge the table
	// lacks).
	ErrIllegalTransition = errors.New("card refund: illegal transition")
)

// TooEarlyError is an admin's close as not made refused for
// ErrTooEarlyToCloseNotMade: From is when it may be closed as not made
// (the call's time plus Config.NotDoneAfter). errors.Is matches it with
// ErrTooEarlyToCloseNotMade and with ErrBankNoAnswer.
type TooEarlyError struct {
	From time.Time
}

func (e *TooEarlyError) Error() string {
	return fmt.Sprintf("%s (it may be closed as not made from %s)", ErrTooEarlyToCloseNotMade, e.From.UTC().Format(time.RFC3339))
}

// Is makes the refusal both ErrTooEarlyToCloseNotMade and ErrBankNoAnswer.
func (e *TooEarlyError) Is(target error) bool {
	return target == ErrTooEarlyToCloseNotMade || target == ErrBankNoAnswer
}

// NewPublicID is a fresh public id: "cr_" and 26 base32 characters.
func NewPublicID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "cr_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

var publicIDRE = regexp.MustCompile(`^cr_[a-z2-7]{26}$`)

// ValidPublicID reports whether s has the shape of a card refund's id.
func ValidPublicID(s string) bool { return publicIDRE.MatchString(s) }

// HoldLife is how long a card refund's hold is made for (Config.HoldFor):
// as withdrawal.HoldLife, a hundred years, so that only the refund's own
// moves end it.
const HoldLife = 100 * 365 * 24 * time.Hour

// HoldReason is the reason of a card refund's ledger hold (its reference
// is the card refund's public id).
const HoldReason = "card_refund"
