// Package topup runs the top-up lifecycle: start a top-up with the
// gateway, handle the bank's return, verify and resolve, exactly once.
//
// Every status change is an edge of the state machine in machine.go, taken
// by its one writer (move), which records the change in payment_events in
// the same transaction. The diagram (checked against the table by a test):
//
//	created ──submit──▶ awaiting_payment
//	created ──submit/worker──▶ failed
//	created ──reconcile──▶ pending_verification
//	awaiting_payment ──paid──▶ credited
//	awaiting_payment ──unknown──▶ pending_verification
//	awaiting_payment ──not paid / lifetime──▶ failed
//	awaiting_payment ──refused, mismatch, no ref──▶ needs_review
//	pending_verification ──paid──▶ credited
//	awaiting_payment ──verified, to be settled (Mellat: verify 0/43)──▶ settling
//	pending_verification ──verified, to be settled (Mellat)──▶ settling
//	settling ──settled (0/45)──▶ credited
//	settling ──reversed (48)──▶ failed
//	settling ──settle refused, window closed──▶ needs_review
//	pending_verification ──not paid──▶ failed
//	pending_verification ──refused, too long──▶ needs_review
//	failed ──reopen──▶ pending_verification
//	failed ──paid──▶ credited
//	failed ──paid, reference reused──▶ needs_review
//	needs_review ──reopen──▶ pending_verification
//	needs_review ──admin close──▶ failed
//	needs_review ──paid──▶ credited
//	awaiting_payment ──verified, not creditable, reversible──▶ reversing
//	pending_verification ──verified, not creditable, reversible──▶ reversing
//	settling ──settle refused, reversible──▶ reversing
//	reversing ──reversed (the worker's one reverse, or the bank's record)──▶ failed
//	reversing ──reverse refused, window closed, bank differs──▶ needs_review
//	reversing ──reverse refused as settled (Mellat 45), settle was refused──▶ settling
package topup

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/formtoken"
)

// Status is the state of a payment.
type Status string

const (
	StatusCreated             Status = "created"
	StatusAwaitingPayment     Status = "awaiting_payment"
	StatusPendingVerification Status = "pending_verification"
	// StatusSettling: the bank verified the payment and we are settling
	// it (Mellat's bpSettleRequest); not credited yet. The verified facts
	// (reference, amount, card) are on the row, so the next check asks
	// only for the settle.
	StatusSettling    Status = "settling"
	StatusCredited    Status = "credited"
	StatusFailed      Status = "failed"
	StatusNeedsReview Status = "needs_review"
	// StatusReversing: the bank verified the payment (the money is the
	// merchant's), but it cannot be credited (another amount, no
	// reference, a receipt verified on its own, a reference another
	// payment holds, a settle refused): the worker asks the bank to
	// reverse it, once (ReverseSentAt is written before the call), and
	// a lost answer is settled by the bank's record, never by a second
	// blind reverse. Never credited; a callback or a recheck does not
	// reopen it. One whose settle was refused and whose reverse the bank
	// refuses because the sale is settled (Mellat 45) goes back to
	// settling, its intent dropped, and is credited by the next settle.
	StatusReversing Status = "reversing"
)

// Public is the status as payers and partners see it (pages, the API,
// webhooks, a return_url): settling and reversing are pending_verification
// to them — the bank is still being asked, nothing is credited yet, no
// outcome is final — so the API's six statuses stay its contract (the
// payer's page says a reversing payment's money is on its way back). The
// admin console shows both as they are.
func (s Status) Public() Status {
	if s == StatusSettling || s == StatusReversing {
		return StatusPendingVerification
	}
	return s
}

// Terminal reports whether no automatic transition leaves the status.
func (s Status) Terminal() bool {
	return s == StatusCredited || s == StatusFailed || s == StatusNeedsReview
}

func (s Status) open() bool {
	return s == StatusAwaitingPayment || s == StatusPendingVerification || s == StatusSettling
}

// openForVerify lists the statuses a check (verify, or settle alone) may
// resolve.
func openForVerify() []Status {
	return []Status{StatusAwaitingPayment, StatusPendingVerification, StatusSettling}
}

// TopUp is one top-up attempt.
type TopUp struct {
	ID          int64
	PublicID    string
	UserID      int64
	WalletID    int64
	AmountRials int64
	Gateway     string
	FormToken   string
	Authority   *string
	RefID       *int64
	// Receipt is the callback data verify needs (SEP's RefNum, Mellat's
	// SaleReferenceId), kept from the first callback that carried it.
	Receipt *string
	// ReceiptSource is where the kept receipt came from (nil with no
	// receipt): the payer's callback, or the bank (ReceiptConfirmed).
	ReceiptSource       *ReceiptSource
	VerifiedAmountRials *int64
	CardPANMasked       string
	Status              Status
	StatusReason        string
	Attempts            int
	CreditFailures      int // credits of a bank-verified payment that failed (rolled back)
	NextCheckAt         *time.Time
	LeaseUntil          *time.Time
	LeaseOwner          string
	LastCheckedAt       *time.Time // when the bank was last asked about it
	ReturnedAt          *time.Time // the first callback
	OpenedAt            *time.Time // when it last became open: the worker's deadlines count from here
	CreatedAt           time.Time
	UpdatedAt           time.Time
	ResolvedAt          *time.Time
	// ReconciledAt is when reconciliation last looked at it (asked the
	// bank, or found nothing to ask): its lists take the least recently
	// looked at first.
	ReconciledAt *time.Time
	// ReturnURL is where the payer's browser goes after the bank (an API
	// top-up's return_url; nil: Kifpool's own result page).
	ReturnURL *string
	// ReverseSentAt: when the worker was about to send this payment's one
	// reverse (reversing; written before the call). Set: the call may
	// have reached the bank, and only its record (Ops.RefundStatus) says
	// what became of it.
	ReverseSentAt *time.Time
}

// AuthorityString returns the authority or "".
func (p TopUp) AuthorityString() string {
	if p.Authority == nil {
		return ""
	}
	return *p.Authority
}

// ReceiptString returns the kept callback receipt or "".
func (p TopUp) ReceiptString() string {
	if p.Receipt == nil {
		return ""
	}
	return *p.Receipt
}

// ReceiptSource is where a payment's kept receipt came from.
type ReceiptSource string

const (
	// ReceiptFromCallback: a callback carried it; the payer's word only.
	ReceiptFromCallback ReceiptSource = "callback"
	// ReceiptFromBank: the bank tied it to this payment: its own record of
	// our token named it (SEP's receipt of the token), or a verify for
	// this payment confirmed it.
	ReceiptFromBank ReceiptSource = "bank"
)

// ReceiptConfirmed reports whether the bank tied the kept receipt to this
// payment: named by the bank (ReceiptFromBank), or the bank verified the
// payment with it (a reference on the row). A receipt the bank never tied
// to this payment proves nothing: it is never verified on its own, and it
// gives way to the payment the bank confirms it for.
func (p TopUp) ReceiptConfirmed() bool {
	if p.Receipt == nil {
		return false
	}
	return p.RefID != nil || (p.ReceiptSource != nil && *p.ReceiptSource == ReceiptFromBank)
}

// RefIDValue returns the bank reference or 0.
func (p TopUp) RefIDValue() int64 {
	if p.RefID == nil {
		return 0
	}
	return *p.RefID
}

// NewFormToken returns a fresh per-form idempotency token (formtoken.New).
func NewFormToken() string { return formtoken.New() }

// ValidFormToken reports whether s has the shape of a form token.
func ValidFormToken(s string) bool { return formtoken.Valid(s) }

func newPublicID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// ValidPublicID reports whether s has the shape of a payment's public id:
// 24 characters of lower-case base32 (a–z, 2–7). A byte loop, not a
// regular expression: every callback and receipt checks its path's id.
func ValidPublicID(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}
