package withdrawal

import (
	"context"
	"errors"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// Store is the withdrawal lifecycle's one port to its rows, declared
// here and implemented once (withdrawal/sqlstore). Each writing method is
// one transaction guarded by one conditional statement; a write whose
// guard no longer holds changes nothing and says so (ErrNotMoved, or a
// claim not taken).
type Store interface {
	// Create inserts a requested withdrawal with its hold on the wallet,
	// in one transaction that first locks the user's wallet row (one
	// request of a user at a time), applies q (the daily limit, read in
	// the same transaction), and holds the amount with the guarded write
	// (ErrInsufficientFunds: nothing written). ErrDuplicate: the user's
	// form token made a withdrawal before (Existing reads it).
	Create(ctx context.Context, w *Withdrawal, q Quota) error
	// Get reads a withdrawal by id; ByPublicID by its public id
	// (ErrNotFound); ByFormToken the one a user's form made.
	Get(ctx context.Context, id int64) (Withdrawal, error)
	ByPublicID(ctx context.Context, publicID string) (Withdrawal, error)
	ByFormToken(ctx context.Context, userID int64, token string) (Withdrawal, error)
	// Move takes one edge (see Move): ErrNotMoved when the row is no
	// longer in m.From (or the lease not m.Lease).
	Move(ctx context.Context, m Move) (Withdrawal, error)
	// Claim takes the lease of withdrawal id when its status is one of
	// statuses and its lease is free; claimed is false otherwise (w: the
	// row as it stands).
	Claim(ctx context.Context, c Claim) (w Withdrawal, claimed bool, err error)
	// Update writes f on a withdrawal whose lease tok still holds,
	// keeping or giving back the lease; the status is unchanged
	// (ErrNotMoved: the lease is gone).
	Update(ctx context.Context, id int64, tok string, f Fields, keepLease bool) (Withdrawal, error)
	// ClaimDue claims due withdrawals for the worker (see DueClaim).
	ClaimDue(ctx context.Context, c DueClaim) ([]int64, error)
	// Unclaim makes claimed withdrawals due at at.
	Unclaim(ctx context.Context, ids []int64, at time.Time) error
	// Settle moves a paid withdrawal's amount from payouts in flight to
	// the provider's rail account, once (settled false: it was before, or
	// it is no longer paid).
	Settle(ctx context.Context, id int64, now time.Time) (settled bool, err error)
	// List reads withdrawals by f, newest first (next: the cursor of
	// the next page, 0 when there is none).
	List(ctx context.Context, f Filter) (ws []Withdrawal, next int64, err error)
	// Events are a withdrawal's status changes, oldest first.
	Events(ctx context.Context, id int64) ([]Event, error)
	// UsedToday is the rials of the withdrawals of the user's person
	// (every account that gave its national code:
	// bankaccount.SamePerson) created at or after since that count
	// against the daily limit.
	UsedToday(ctx context.Context, userID int64, since time.Time) (int64, error)
	// ForReconcile lists a provider's withdrawals created at or after
	// since that were handed to it.
	ForReconcile(ctx context.Context, provider string, since time.Time) ([]Withdrawal, error)
	// Reports lists the latest reconciliation reports, newest first.
	Reports(ctx context.Context, limit int) ([]Report, error)
	// LatestReports is each provider's newest reconciliation report, by
	// provider name.
	LatestReports(ctx context.Context) ([]Report, error)
	// AwaitingAdmin counts the withdrawals waiting for an admin (a
	// review required before sending, or needs_review), with since when
	// the one waiting longest has waited: its request, or its move to
	// review (zero: none).
	AwaitingAdmin(ctx context.Context) (n int64, oldest time.Time, err error)
	// ByPublicIDs maps public ids to the user's withdrawals (the wallet's
	// history names the withdrawal of its lines).
	ByPublicIDs(ctx context.Context, userID int64, ids []string) (map[string]Withdrawal, error)
	// RecordCalls appends provider attempts.
	RecordCalls(ctx context.Context, calls []resilient.Call) error
	// SaveReport stores a reconciliation report (its ID is set).
	SaveReport(ctx context.Context, r *Report) error
}

// Errors of the store's guards.
var (
	ErrNotMoved  = errors.New("withdrawal changed meanwhile")
	ErrDuplicate = errors.New("withdrawal: unique constraint")
)

// Quota is the daily limit a request is admitted under, applied inside
// Create's transaction: Admit is asked with the rials of the withdrawals
// since the start of DayStart (not failed, rejected, cancelled or
// returned) of the user's person, every account that gave its national
// code (their rows locked meanwhile), and its error refuses the request.
type Quota struct {
	DayStart time.Time
	Admit    func(usedToday int64) error
}

// Move is one edge as the store takes it.
type Move struct {
	ID        int64
	PublicID  string
	From, To  Status
	Actor     Actor
	Reason    Reason
	Lease     string // the mover's lease token (edges that need it)
	KeepLease bool
	AdminID   *int64
	Note      string
	Now       time.Time
	Fields    Fields
	Audit     *audit.Entry
}

// Fields are what a move or an update writes besides the status; nil
// leaves a field as it is.
type Fields struct {
	ProviderState *ProviderState
	ProviderRef   *string
	CountSubmit   bool
	CountCheck    bool
	UnknownSince  *time.Time
	// Contradiction is the provider's word that contradicted the one on
	// record (with UnknownSince, Decision.Lost): written over the last.
	Contradiction Contradiction
	// ClearUnknown clears UnknownSince, and Contradiction (the
	// provider's word arrived).
	ClearUnknown  bool
	SubmittedAt   *time.Time
	NextCheckAt   *time.Time
	ClearNext     bool // no next check (nothing left to ask)
	LastCheckedAt *time.Time
	WatchUntil    *time.Time
	ReviewedBy    *int64
	ReviewNote    *string
}

// Filter selects withdrawals to list.
type Filter struct {
	UserID   int64    // 0: everyone's
	Statuses []Status // none: every status
	// ReviewOnly: only those waiting for an admin (requested with a
	// review required).
	ReviewOnly bool
	Before     int64 // the id to list below (0: from the newest)
	// Oldest: oldest first (the admin's queues: who has waited longest
	// first); Before is then ignored.
	Oldest bool
	Limit  int
}

// Claim is one conditional take of a withdrawal's lease.
type Claim struct {
	ID         int64
	Statuses   []Status
	Token      string
	Now, Until time.Time
}

// DueClaim is the worker's claim: withdrawals whose next check is due at
// Now, unheld; their next check moves to Until; at most Batch.
type DueClaim struct {
	Now, Until time.Time
	Batch      int
}
