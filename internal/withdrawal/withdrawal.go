// Package withdrawal runs cash-out to a user's bank account: a withdrawal
// is requested (its amount held on the wallet), approved by an admin when
// it is large, submitted to a payout provider under its own public id,
// paid (the hold captured into the payouts-in-flight account, settled
// later by reconciliation), or failed, rejected or cancelled (the hold
// released), and returned when the provider fails it after paying it (a
// withdrawal_return transaction gives the money back, once).
//
// It is an instance of the lifecycle skeleton (internal/lifecycle): the
// table of edges (machine.go), one writer (the store's Move: a
// conditional UPDATE on the expected status, and on the lease where the
// edge needs it, with its event, its ledger movement and an admin's audit
// row, in one transaction), pure decisions of what a provider's answer
// means (decide.go), and a worker that claims due withdrawals and asks
// the provider (worker.go). No SQL here: the store (withdrawal/sqlstore)
// holds it.
//
// Exactly once, whatever dies when:
//   - A form or an Idempotency-Key submitted twice is one withdrawal: a
//     unique (user, form token).
//   - The move to submitted is written before the provider is called (the
//     intent): a cancel cannot overtake a payout on its way, and a process
//     killed after the provider took it finds "submitted, outcome
//     unknown" and asks the provider by our id.
//   - A submit is repeated only where the provider's answer says nothing
//     was taken (a refusal, an open breaker), or where the provider keeps
//     one payout per id (Capabilities.IdempotentSubmit). Otherwise an
//     unknown outcome is asked about until the provider knows, then waits
//     for a person: one withdrawal is never two payouts.
//   - "Failed" needs the provider's word; a time-out is unknown.
//   - The hold ends once (internal/ledger), the return is one transaction
//     per withdrawal (unique kind and reference).
package withdrawal

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"regexp"
	"strings"
	"time"
)

// Status is where a withdrawal stands.
type Status string

// The statuses.
const (
	// StatusRequested: the amount is held; a small withdrawal is sent by
	// the worker, a large one waits for an admin.
	StatusRequested Status = "requested"
	// StatusApproved: an admin approved a large one; the worker sends it.
	StatusApproved Status = "approved"
	// StatusSubmitted: handed (or perhaps handed) to the provider.
	StatusSubmitted Status = "submitted"
	// StatusPaid: the provider transferred it; the hold is captured. A
	// provider with late failures may still return it.
	StatusPaid Status = "paid"
	// StatusFailed: the provider will not pay it (its word); the hold is
	// released.
	StatusFailed Status = "failed"
	// StatusRejected: an admin refused it; the hold is released.
	StatusRejected Status = "rejected"
	// StatusCancelled: its owner cancelled it before it was sent.
	StatusCancelled Status = "cancelled"
	// StatusReturned: paid, then failed by the provider and the money
	// came back: credited back to the wallet.
	StatusReturned Status = "returned"
	// StatusNeedsReview: the provider's answer is unknown for too long,
	// or in progress for too long (or contradicts itself): a person
	// looks; the hold stays.
	StatusNeedsReview Status = "needs_review"
)

// Statuses lists every status, in the order pages show them.
func Statuses() []Status {
	return []Status{StatusRequested, StatusApproved, StatusSubmitted, StatusNeedsReview, StatusPaid, StatusReturned,
		StatusFailed, StatusRejected, StatusCancelled}
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, x := range Statuses() {
		if x == s {
			return true
		}
	}
	return false
}

// Ended reports a status no edge leaves: the hold has ended for good.
func (s Status) Ended() bool {
	return s == StatusFailed || s == StatusRejected || s == StatusCancelled || s == StatusReturned
}

// Holding reports a status whose amount is still held on the wallet.
func (s Status) Holding() bool {
	return s == StatusRequested || s == StatusApproved || s == StatusSubmitted || s == StatusNeedsReview
}

// Actor is who takes an edge.
type Actor string

// The actors.
const (
	ActorUser      Actor = "user"      // the withdrawal's owner (a cancel)
	ActorWorker    Actor = "worker"    // the background resolver
	ActorReconcile Actor = "reconcile" // the daily reconciliation
	ActorAdmin     Actor = "admin"     // an admin's recorded action
)

// Reason is why a withdrawal changed status: a code pages translate.
type Reason string

// The reasons.
const (
	ReasonApproved        Reason = "approved"           // an admin approved it
	ReasonRejected        Reason = "rejected"           // an admin rejected it
	ReasonCancelled       Reason = "cancelled"          // its owner cancelled it
	ReasonSubmitting      Reason = "submitting"         // handed to the provider (the intent, before the call)
	ReasonTransferred     Reason = "transferred"        // the provider transferred it
	ReasonProviderFailed  Reason = "provider_failed"    // the provider failed or cancelled it
	ReasonRefused         Reason = "refused"            // the provider refused it for good (its Sheba, its amount)
	ReasonUnknownTooLong  Reason = "unknown_too_long"   // the provider still does not know it, and a submit cannot be repeated
	ReasonContradiction   Reason = "contradiction"      // the provider took it, then did not know it
	ReasonReturned        Reason = "returned"           // failed by the provider after it was paid; money back
	ReasonClosedByAdmin   Reason = "closed_by_admin"    // an admin closed it as failed after checking with the provider
	ReasonReconcileFound  Reason = "reconcile_found"    // reconciliation found the provider's word first
	ReasonAmountDisagrees Reason = "amount_disagrees"   // the provider holds another amount for it
	ReasonNotTakenTooLong Reason = "not_taken_too_long" // the provider refused every submit for now, for too long
	ReasonPaidByAdmin     Reason = "paid_by_admin"      // an admin closed it as paid, on the provider's word that it transferred it
	// ReasonInProgressTooLong: the provider still has it in progress, long
	// after it was sent (InProgressReviewAfter).
	ReasonInProgressTooLong Reason = "in_progress_too_long"
)

// Reasons lists every reason (each has its words in both languages,
// under "admin.wd.reason.").
func Reasons() []Reason {
	return []Reason{ReasonApproved, ReasonRejected, ReasonCancelled, ReasonSubmitting, ReasonTransferred, ReasonProviderFailed,
		ReasonRefused, ReasonUnknownTooLong, ReasonContradiction, ReasonReturned, ReasonClosedByAdmin, ReasonReconcileFound,
		ReasonAmountDisagrees, ReasonNotTakenTooLong, ReasonPaidByAdmin, ReasonInProgressTooLong}
}

// ProviderState is what we last learned from the provider, on the row.
type ProviderState string

// The provider states.
const (
	// ProviderNotSent: never handed to the provider.
	ProviderNotSent ProviderState = ""
	// ProviderUnknown: handed, or being handed: no answer yet (the
	// intent, a time-out, a 5xx).
	ProviderUnknown ProviderState = "unknown"
	// ProviderNotTaken: the provider's word that it took nothing (a
	// refusal for now, an open breaker): safe to send again.
	ProviderNotTaken ProviderState = "not_taken"
	// ProviderInProgress: the provider has it.
	ProviderInProgress  ProviderState = "in_progress"
	ProviderTransferred ProviderState = "transferred"
	ProviderFailed      ProviderState = "failed"
	ProviderReturned    ProviderState = "returned"
)

// Contradiction is the provider's last word that contradicted the one on
// record (Decision.Lost), kept on the row while that contradiction
// counts (UnknownSince): it tells a "failed" that an admin's close as
// failed may follow, once it has stood for UnknownReviewAfter, from a
// "not found" that it never follows (FailMayGo).
type Contradiction string

// The contradictions.
const (
	// ContradictionNone: none heard, or not recorded (a row from before
	// migration 00058, until its next check).
	ContradictionNone Contradiction = ""
	// ContradictionFailed: it said it failed a payout it had said it
	// transferred.
	ContradictionFailed Contradiction = "failed"
	// ContradictionNotFound: it does not know a payout it had said it
	// had (in progress) or transferred.
	ContradictionNotFound Contradiction = "not_found"
)

// Withdrawal is one cash-out.
type Withdrawal struct {
	ID             int64
	PublicID       string
	UserID         int64
	WalletID       int64
	BankAccountID  int64
	Sheba          string
	BankCode       string
	AmountRials    int64
	Provider       string
	Rail           string
	FormToken      string
	Status         Status
	StatusReason   string
	ReviewRequired bool
	HoldID         int64
	ProviderState  ProviderState
	ProviderRef    string
	Submits        int
	Checks         int
	UnknownSince   *time.Time    // the submit's outcome unknown, or a payout it had not known (Decision.Lost), since
	Contradiction  Contradiction // the provider's last word that contradicted the one on record, while UnknownSince counts it
	SubmittedAt    *time.Time
	PaidAt         *time.Time
	SettledAt      *time.Time
	ReturnedAt     *time.Time
	ResolvedAt     *time.Time
	WatchUntil     *time.Time
	NextCheckAt    *time.Time
	LastCheckedAt  *time.Time
	LeaseOwner     string
	LeaseUntil     *time.Time
	ReviewedBy     *int64
	ReviewNote     string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Last4 is the account's last four digits.
func (w Withdrawal) Last4() string {
	if len(w.Sheba) < 4 {
		return ""
	}
	return w.Sheba[len(w.Sheba)-4:]
}

// Event is one status change (withdrawal_events, append-only).
type Event struct {
	ID           int64
	WithdrawalID int64
	FromStatus   Status
	ToStatus     Status
	Actor        Actor
	Reason       Reason
	AdminID      *int64
	Note         string
	CreatedAt    time.Time
}

// publicIDShape is a withdrawal's public id: "wd_" and 24 base32
// characters (lower case), 120 random bits.
var publicIDShape = regexp.MustCompile(`^wd_[a-z2-7]{24}$`)

// NewPublicID returns a fresh public id.
func NewPublicID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return "wd_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// ValidPublicID reports whether s has the shape of a public id.
func ValidPublicID(s string) bool { return publicIDShape.MatchString(s) }

// The refusals of a request (test them with errors.Is).
var (
	ErrNotFound             = errors.New("withdrawal: not found")
	ErrBadFormToken         = errors.New("withdrawal: bad form token")
	ErrBankAccountMissing   = errors.New("withdrawal: no such bank account")
	ErrBankAccountUnchecked = errors.New("withdrawal: the bank account is not verified")
	ErrInsufficientFunds    = errors.New("withdrawal: the wallet's available balance is short")
	ErrNoProvider           = errors.New("withdrawal: no payout provider takes this amount")
	ErrOff                  = errors.New("withdrawal: withdrawals are off")
	ErrNotCancellable       = errors.New("withdrawal: already sent to the bank")
	ErrNotReviewable        = errors.New("withdrawal: not waiting for an admin")
	ErrNoteRequired         = errors.New("withdrawal: a note is required")
	ErrBusy                 = errors.New("withdrawal: being worked on right now")
	// ErrProviderPaid: the provider said it transferred the withdrawal;
	// closed as failed, its amount would be paid twice.
	ErrProviderPaid = errors.New("withdrawal: the payout provider said it transferred it: close it as paid")
	// ErrProviderHasIt: the provider has the payout in progress: it is
	// not failed under it (a transfer sent is not called back); its word
	// ends it.
	ErrProviderHasIt = errors.New("withdrawal: the payout provider has it in progress")
	// ErrProviderEnded: asked before an admin's close, the provider said
	// it transferred (or returned) the payout: its word ended the
	// withdrawal, as the worker's would.
	ErrProviderEnded = errors.New("withdrawal: the payout provider just said it transferred it")
	// ErrOwnWithdrawal: an admin does not approve, reject or close their
	// own withdrawal; another admin does.
	ErrOwnWithdrawal = errors.New("withdrawal: an admin's own withdrawal is reviewed by another admin")
	// ErrProviderUnreachable: an admin's fail of a withdrawal whose
	// provider never said whether it took it, while that provider does
	// not answer, or cannot be asked (no longer configured): nothing is
	// released until it answers.
	ErrProviderUnreachable = errors.New("withdrawal: the payout provider did not answer, and it may have the payout")
	// ErrProviderReturned: asked before an admin's fail, the provider
	// said it transferred the withdrawal and failed it by hand since
	// (Jibit's MANUALLY_FAILED): both were recorded, the amount is back in
	// the wallet (returned), and the admin's close was not needed.
	ErrProviderReturned = errors.New("withdrawal: the payout provider just said it failed the transfer by hand")
	// ErrProviderNotPaid: closing as paid needs the provider's word that
	// it transferred the withdrawal.
	ErrProviderNotPaid = errors.New("withdrawal: the payout provider has not said it transferred it")
	ErrNoWallet        = errors.New("withdrawal: no wallet")
	// ErrPaidUnconfirmed: asked before an admin's close as paid, the
	// provider did not say it transferred the withdrawal (no answer, in
	// progress, not found, failed): its hold is not captured for money
	// that may never have left. Is ErrProviderNotPaid (the admin's page
	// shows that message).
	ErrPaidUnconfirmed error = &refusal{msg: "withdrawal: the payout provider did not say just now that it transferred it", is: ErrProviderNotPaid}
	// ErrProviderForgot: the provider had the payout (in progress) and
	// now does not know it: not failed by an admin until it has not
	// known it for UnknownReviewAfter (an inquiry that forgets payouts
	// once they leave its queue may still pay them). Is ErrProviderHasIt
	// (the admin's page shows that message).
	// ErrFailedAfterTransferred: the provider said it transferred the
	// payout and now says it failed it: not failed by an admin until
	// that has stood for UnknownReviewAfter (a stale or flapping inquiry
	// believed at once would pay the amount twice). Is ErrProviderPaid.
	ErrFailedAfterTransferred error = &refusal{msg: "withdrawal: the payout provider said it transferred it and says now it failed: a failure waits until it has said so for the unknown-review time", is: ErrProviderPaid}
	ErrProviderForgot         error = &refusal{msg: "withdrawal: the payout provider had it and does not know it now: a failure waits until it has not known it for the unknown-review time", is: ErrProviderHasIt}
)

// refusal is a sentinel refusal that is also (errors.Is) the refusal an
// older caller already shows.
type refusal struct {
	msg string
	is  error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.is }
