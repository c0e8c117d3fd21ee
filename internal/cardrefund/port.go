package cardrefund

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
)

// Store is what the lifecycle needs of the database; the SQL is its
// implementation's (internal/cardrefund/sqlstore).
type Store interface {
	// TopUp reads a top-up by its public id (ErrTopUpNotFound), and
	// TopUpByID by its id.
	TopUp(ctx context.Context, publicID string) (TopUp, error)
	TopUpByID(ctx context.Context, id int64) (TopUp, error)
	// Standing reads what an offer needs besides the top-up: its open
	// card refund (nil for none), what its card refunds gave back, and
	// the wallet's available balance.
	Standing(ctx context.Context, t TopUp) (open *CardRefund, refundedRials, availableRials int64, err error)
	// Create writes a card refund in status held and the wallet's hold of
	// its amount, in one transaction, with its audit row. The write is
	// guarded: ErrInProgress when the top-up has an open card refund (a
	// unique index), ErrOverRefunded when the amount and what was refunded
	// exceed the top-up, ErrTopUpNotFound when it is not credited,
	// ErrSpent when the wallet's available balance is short (the hold's
	// guard).
	Create(ctx context.Context, d Draft) (CardRefund, error)
	// Get and ByPublicID read one card refund (ErrNotFound).
	Get(ctx context.Context, id int64) (CardRefund, error)
	ByPublicID(ctx context.Context, publicID string) (CardRefund, error)
	// OfTopUp lists a top-up's card refunds, newest first.
	OfTopUp(ctx context.Context, topUpID int64) ([]CardRefund, error)
	// AwaitingAdmin counts the refunds under review, with when the one
	// waiting longest went to review (zero: none).
	AwaitingAdmin(ctx context.Context) (n int64, oldest time.Time, err error)
	// UnderReview lists the refunds under review, oldest first, at most
	// limit, each with its top-up's public id.
	UnderReview(ctx context.Context, limit int) ([]Waiting, error)
	// EventsOf lists a card refund's status changes, oldest first.
	EventsOf(ctx context.Context, id int64) ([]Event, error)
	// TakeLease takes the card refund's lease for owner until until, when
	// it is free or has expired and the status is one of from; false
	// when another actor holds it (or it moved).
	TakeLease(ctx context.Context, id int64, from []Status, owner string, until, now time.Time) (CardRefund, bool, error)
	// Move is the lifecycle's one writer (see Move).
	Move(ctx context.Context, m Move) (CardRefund, error)
	// Schedule leaves a card refund in its status, gives back owner's
	// lease and sets when it is asked about next (checked: the bank was
	// asked just now, one more check).
	Schedule(ctx context.Context, id int64, owner string, next time.Time, checked bool, now time.Time) error
	// Note records what happened to a card refund without moving it
	// (ReasonBankAcceptedLate): its reason, and an event from status to
	// status, in one transaction, only while it is still in status; false
	// when it is not. bankRef, when the row has none yet, becomes its
	// bank reference (the late acceptance's id, for the bank's panel).
	Note(ctx context.Context, id int64, status Status, actor Actor, reason Reason, bankRef string, now time.Time) (bool, error)
	// ClaimDue takes up to batch card refunds due for the worker (held or
	// submitted, their lease free, next check past), pushing their next
	// check to until in the claiming transaction.
	ClaimDue(ctx context.Context, now, until time.Time, batch int) ([]int64, error)
	// Unclaim gives claimed card refunds back, due at at.
	Unclaim(ctx context.Context, ids []int64, at time.Time) error
}

// Draft is a card refund to write.
type Draft struct {
	PublicID    string
	TopUp       TopUp
	Method      Method
	AmountRials int64
	// RefundedBeforeRials is what the top-up's card refunds gave back, as
	// the offer read it; Create refuses when it changed.
	RefundedBeforeRials int64
	AdminID             int64
	Note                string
	HoldUntil           time.Time
	NextCheckAt         time.Time
	Now                 time.Time
	Audit               audit.Entry
}

// Move is one edge taken by the one writer. In one transaction: the
// conditional UPDATE on From (and on the lease owner where the edge needs
// the lease), the event, the money (To refunded: the hold captured into
// card refunds in flight and on to the gateway's clearing side; To
// failed: the hold released), the partners' webhook (topup.refunded),
// and the audit row. ErrNotMoved when the row was not as
// expected.
type Move struct {
	CardRefund CardRefund // as read: its ids, amounts and hold
	From, To   Status
	Actor      Actor
	Reason     Reason
	// Lease is the mover's lease owner (edges that need it); KeepLease
	// leaves it held (held → submitted: the call follows).
	Lease     string
	KeepLease bool
	// Sent: the call is being sent (held → submitted): one more attempt,
	// and its time.
	Sent          bool
	BankCode      *int
	BankReference string
	// NextCheckAt is when the worker looks at it next (open statuses).
	NextCheckAt *time.Time
	AdminID     int64
	Audit       *audit.Entry
	// TopUpView is the top-up as the API shows it, for the webhook of a
	// move to refunded.
	TopUpView any
	Now       time.Time
}
