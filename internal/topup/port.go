package topup

import (
	"context"
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// Store is the top-up lifecycle's one port to its rows, declared here
// and implemented once (internal/topup/sqlstore). It is no generic
// repository: each method is one thing the lifecycle does. Each writing
// method is one transaction guarded by one conditional statement — the
// claim of a lease, the move of a status with its event, the credit with
// its ledger entry — and the guarantees of ARCHITECTURE §2 and §4 live in
// those guards: a write whose guard no longer holds changes nothing and
// says so (ErrNotMoved, or a claim that was not taken). No SQL, column
// name or dialect is known above this interface.
type Store interface {
	// Get reads a payment by id.
	Get(ctx context.Context, id int64) (TopUp, error)
	// ByPublicID reads a payment by its public id (ErrNotFound).
	ByPublicID(ctx context.Context, publicID string) (TopUp, error)
	// ByFormToken reads the payment of a user's form.
	ByFormToken(ctx context.Context, userID int64, token string) (TopUp, error)
	// FormSubmitted reports whether the user's form already made a payment.
	FormSubmitted(ctx context.Context, userID int64, token string) (bool, error)
	// ByAuthority and ByGatewayPublicID find a gateway's payment
	// (reconciliation's matching); found is false when there is none.
	ByAuthority(ctx context.Context, gateway, authority string) (p TopUp, found bool, err error)
	ByGatewayPublicID(ctx context.Context, gateway, publicID string) (p TopUp, found bool, err error)
	// StaleCreated lists "created" payments without an authority created
	// at or before before.
	StaleCreated(ctx context.Context, before time.Time, limit int) ([]TopUp, error)
	// RecentEnded lists, in b's order, a gateway's payments with an
	// authority that ended failed or under review (reconciliation by
	// inquiry, for gateways without a list).
	RecentEnded(ctx context.Context, b ReconcileBatch) ([]TopUp, error)
	// RecentUnsure lists, in b's order, those of RecentEnded's payments
	// whose end was not the bank's word: under review, or failed at the
	// page's lifetime at or after lifetimeSince (UnsureEnded is the
	// definition; this is its fast path).
	RecentUnsure(ctx context.Context, b ReconcileBatch, lifetimeSince time.Time) ([]TopUp, error)
	// RecentUncredited lists, in b's order, a gateway's payments with an
	// authority that are open or ended without a credit (reconciliation
	// of gateways whose verify needs the callback's data: SEP, Mellat).
	RecentUncredited(ctx context.Context, b ReconcileBatch) ([]TopUp, error)
	// Reconciled records that reconciliation looked at the payments ids
	// at: their turn in its lists comes after the others'.
	Reconciled(ctx context.Context, ids []int64, at time.Time) error
	// DisabledGateways names the gateways an operator switched off.
	DisabledGateways(ctx context.Context) (map[string]bool, error)
	// SwitchGateway records an operator's switch of a gateway and its
	// audit row, in one transaction.
	SwitchGateway(ctx context.Context, gateway string, disabled bool, e audit.Entry) error

	// Create inserts a new payment (ErrDuplicate: its form made one before).
	Create(ctx context.Context, p *TopUp) error
	// CreateAdmitted inserts a new payment as Create does, in one
	// transaction that first locks the payer's wallet row (so that starts
	// of one payer are admitted one at a time, and nobody else's wait),
	// answers ErrDuplicate when the form made a payment before, reads the
	// payer's Usage and asks q.Admit: its error refuses the payment and
	// nothing is written.
	CreateAdmitted(ctx context.Context, p *TopUp, q Quota) error
	// Claim takes a payment's lease (see Claim); claimed is false when its
	// guard did not hold, and then p is the row as it stands (zero for a
	// FirstReturn claim).
	Claim(ctx context.Context, c Claim) (p TopUp, claimed bool, err error)
	// MarkReturned records the first callback; first is false when one
	// came before.
	MarkReturned(ctx context.Context, id int64, now time.Time) (first bool, err error)
	// KeepReceipt stores the callback data verify needs on a payment that
	// has none yet, with where it came from, and returns the row as it
	// now stands (its receipt may be another one, kept by an earlier
	// callback). A receipt from the bank also confirms the same receipt
	// kept from a callback. ErrDuplicate: another payment of the gateway
	// holds this receipt (a replayed callback, or a forged one held).
	KeepReceipt(ctx context.Context, id int64, receipt string, from ReceiptSource) (TopUp, error)
	// ReplaceReceipt puts the receipt the bank names (receipt) in place of
	// a kept one it does not (old), on a payment the bank has not yet
	// verified (no ref id), and returns the row as it now stands.
	// ErrDuplicate: another payment of the gateway holds receipt.
	ReplaceReceipt(ctx context.Context, id int64, old, receipt string) (TopUp, error)
	// ReceiptHolder finds the payment of the gateway that holds receipt.
	ReceiptHolder(ctx context.Context, gateway, receipt string) (p TopUp, found bool, err error)
	// TakeReceipt gives payment id the receipt the bank confirmed for it
	// (ReceiptFromBank), taking it from the other payment of the gateway
	// that holds it only on a callback's word (unconfirmed, no ref id),
	// in one transaction; id's own unconfirmed receipt, if any, gives way.
	// ErrNotMoved: no such unconfirmed hold (the holder's was confirmed,
	// or nobody holds it), or id holds a confirmed receipt; nothing
	// changed.
	TakeReceipt(ctx context.Context, id int64, receipt string) (TopUp, error)
	// Release gives the lease tok back if still held, writing f with it,
	// and returns the row as it now stands.
	Release(ctx context.Context, id int64, tok string, f Fields) (TopUp, error)
	// Schedule sets when the worker checks an open payment next, moving
	// its next check from from to at, only if it is still from (what the
	// worker's claim, or its own check under the claim, wrote); false
	// when it was not: another actor (a callback, an admin, another
	// instance's claim) set one since, and that one stands.
	Schedule(ctx context.Context, id int64, from, at time.Time) (bool, error)
	// Postpone moves an open payment's next check from from to to, only
	// if it is still from (the worker's claim wrote it, and no other
	// actor has set one since); false when it was not.
	Postpone(ctx context.Context, id int64, from, to time.Time) (bool, error)
	// Dismiss notes that the payer will not pay their payment paymentID:
	// it leaves their "in progress" list. It changes no payment (its
	// status stays the bank's business) and is idempotent; a payment of
	// another user is not noted.
	Dismiss(ctx context.Context, userID, topUpID int64, now time.Time) error
	// Move takes one edge of the state machine (see Move): ErrNotMoved
	// when the row is no longer in m.From (or the lease not m.Lease);
	// ErrDuplicate when a unique constraint refuses its fields.
	Move(ctx context.Context, m Move) (TopUp, error)
	// Credit takes the edge to credited with the wallet's ledger entry and
	// the verify's attempts, in one transaction; from the status as read,
	// else from the status the row has (a bank-verified payment is always
	// credited). was is the status it was credited from. ErrNotMoved (or
	// wallet.ErrAlreadyCredited): already credited; ErrDuplicate: the
	// bank's reference belongs to another payment.
	Credit(ctx context.Context, m Move, walletID int64, calls []resilient.Call) (p TopUp, was Status, err error)
	// ClaimDue claims the worker's due payments (see DueClaim).
	ClaimDue(ctx context.Context, c DueClaim) ([]int64, error)
	// Unclaim makes claimed payments due at at: those whose next check is
	// still from (the claim's); one another actor set since stands.
	Unclaim(ctx context.Context, ids []int64, from, at time.Time) error
	// RecordCalls appends gateway attempts.
	RecordCalls(ctx context.Context, calls []resilient.Call) error
	// MarkReverseSent writes a reversing payment's reverse intent
	// (reverse_sent_at = now) before its one call, only if it is
	// reversing, its lease is tok's and unexpired at now, and no intent
	// stands: ErrNotMoved otherwise (nothing changed, nothing to send).
	MarkReverseSent(ctx context.Context, id int64, tok string, now time.Time) (TopUp, error)
	// SaveReconcileReport stores a report (its ID is set).
	SaveReconcileReport(ctx context.Context, r *ReconcileReport) error
	// NewestReconcileReports reads each of the gateways' newest stored
	// report, by gateway (none stored: not in the map), on the primary.
	NewestReconcileReports(ctx context.Context, gateways []string) (map[string]ReconcileReport, error)
	// ClaimReconcileTurn takes the gateway's turn to reconcile when it is
	// due at now (or the gateway has none yet), moving it to next; false:
	// another instance holds it.
	ClaimReconcileTurn(ctx context.Context, gateway string, now, next time.Time) (bool, error)
	// RecordAdminAction appends to the admins' audit log.
	RecordAdminAction(ctx context.Context, e audit.Entry) error
}

// Errors of the store's guards.
var (
	// ErrNotMoved: the payment was no longer in the expected status (or
	// the lease no longer the mover's); nothing changed.
	ErrNotMoved = errors.New("payment changed meanwhile")
	// ErrDuplicate: a unique constraint refused the write (a form
	// submitted twice, an authority or bank reference held by another
	// payment): the guarantee, handled as a replay or a conflict.
	ErrDuplicate = errors.New("unique constraint")
	// ErrOutbox: the partners' webhook outbox refused a move's event (its
	// insert failed), so the move (a credit too) was rolled back. Not the
	// bank's doing: observed on its own (OutboxObserver).
	ErrOutbox = errors.New("the webhook outbox refused the event")
	// ErrReverseSent: the payment is being reversed, or its reverse was
	// sent: it is never credited (the money is on its way back to the
	// card), whatever a late verify answered. Nothing changed.
	ErrReverseSent = errors.New("the payment's reverse was sent: never credited")
)

// errNotMoved is ErrNotMoved (the package's own spelling).
var errNotMoved = ErrNotMoved

// Claim is one conditional take of a payment's lease: the payment is in
// one of Statuses, nobody holds its lease (free or expired at Now) and,
// when NotCheckedSince is set, the bank was not asked about it after that
// time (pacing). FirstReturn also requires that no callback came before
// and records this one.
type Claim struct {
	ID              int64
	Statuses        []Status
	Token           string
	Now, Until      time.Time
	NotCheckedSince *time.Time
	FirstReturn     bool
}

// DueClaim is the worker's claim of due payments: open, unheld at Now,
// next check due; awaiting_payment only when opened at or before
// AbandonedBefore. Their next check moves to Until; at most Batch. Also
// claimed, as many again at most: failed payments, unheld, ended at their
// authority's lifetime (not_paid_after_lifetime) whose payer came back
// from the bank at or after ReturnedSince (zero: none).
type DueClaim struct {
	Now, AbandonedBefore, ReturnedSince, Until time.Time
	Batch                                      int
}

// Move is one edge of the state machine as the store takes it.
type Move struct {
	TopUpID     int64
	PublicID    string // for messages
	From, To    Status
	Actor       Actor
	Reason      Reason
	GatewayCode *int
	AdminID     *int64
	Lease       string // the mover's lease token (edges that need it)
	KeepLease   bool   // the mover goes on working under the lease (a reopen)
	Now         time.Time
	Fields      Fields       // written with the change
	Audit       *audit.Entry // written in the same transaction (an admin's action)
	// Calls are gateway attempts written in the same transaction (the
	// verify of a payment that becomes settling, so that its credit,
	// later, has the verify on record).
	Calls []resilient.Call
}

// Fields are what a decision writes besides the status: nil leaves a
// field as it is.
type Fields struct {
	Authority           *string
	OpenedAt            *time.Time
	NextCheckAt         *time.Time
	LastCheckedAt       *time.Time
	CountAttempt        bool
	CountCreditFailure  bool
	RefID               *int64
	VerifiedAmountRials *int64
	CardPANMasked       *string
	// ClearReceipt drops the kept receipt unless the bank confirmed it
	// (ReceiptFromBank): a receipt the bank did not confirm blocks neither
	// the payer's real one nor another payment's.
	ClearReceipt bool
	// ClearReverseSent drops a reversing payment's reverse intent
	// (reverse_sent_at): the reverse was certainly not made.
	ClearReverseSent bool
}

// EdgeNeedsLease checks that actor may take from → to and reports whether
// the edge needs the mover's lease (ErrIllegalTransition otherwise). The
// store asks it before every move.
func EdgeNeedsLease(from, to Status, actor Actor) (bool, error) {
	r, err := allowed(from, to, actor)
	return r.Lease, err
}
