package charge

import (
	"context"
	"errors"
	"time"
)

// Store is the charges' one port to their rows, declared here and
// implemented once (charge/sqlstore). Each writing method is one
// database transaction.
type Store interface {
	// MakeMerchant makes user userID a merchant named name (its account
	// made too), or renames it when it is one already (created false).
	MakeMerchant(ctx context.Context, userID int64, name string, by *int64, now time.Time) (m Merchant, created bool, err error)
	// Merchant reads a merchant with its account's figures
	// (ErrNotMerchant: the user is none).
	Merchant(ctx context.Context, userID int64) (Merchant, error)
	// UserByEmail is the id of the user of a stored-form address
	// (ErrNotFound).
	UserByEmail(ctx context.Context, addr string) (int64, error)
	// Insert writes a new charge (c.ID set). ErrDuplicate: the
	// merchant's token made a charge already (ByToken reads it);
	// ErrOrderIDTaken: its order id did.
	Insert(ctx context.Context, c *Charge, token string) error
	// ByToken reads the merchant's charge made with token.
	ByToken(ctx context.Context, merchantUserID int64, token string) (Charge, error)
	// Get reads a charge by public id, with its refunds (ErrNotFound).
	Get(ctx context.Context, publicID string) (Charge, error)
	// List reads charges by f, newest first (next: the cursor of the
	// next page, 0 when none).
	List(ctx context.Context, f Filter) (cs []Charge, next int64, err error)
	// Events are a charge's events, oldest first.
	Events(ctx context.Context, chargeID int64) ([]Event, error)
	// Move locks the charge, decides (Decide) and applies the decision
	// in one transaction (see Move). It returns the charge as it is
	// after (its refunds read) and the decision.
	Move(ctx context.Context, m Move) (Charge, Decision, error)
	// Refund writes a refund in one transaction (see RefundWrite).
	// ErrDuplicate: the token made a refund already (first: that one).
	Refund(ctx context.Context, w RefundWrite) (c Charge, r Refund, err error)
	// Due lists up to limit charges past their time at now (checkouts
	// unconfirmed, authorizations uncaptured) in the order of their time,
	// then their id: those after after (nil: from the first), a keyset
	// page (see DueCharge).
	Due(ctx context.Context, now time.Time, after *DueCharge, limit int) ([]DueCharge, error)
	// Search finds charges for the admin console (see Service.Search).
	Search(ctx context.Context, q string, limit int) ([]Charge, error)
	// ByReferences maps ledger references of the payer's wallet history
	// (a charge's public id, "hold:{id}" of its capture, a refund's
	// public id) to their charges.
	ByReferences(ctx context.Context, payerUserID int64, refs []string) (map[string]Charge, error)
}

// DueCharge is a charge past its time, as Due lists it. Its time and id
// are its place in the sweep's order: the last of a page is the cursor
// of the next, so that a sweep goes past the charges it could not
// expire instead of reading them again.
type DueCharge struct {
	ID       int64
	PublicID string
	// DueAt is when it fell due: a checkout's ExpiresAt, an
	// authorization's HoldExpiresAt.
	DueAt time.Time
}

// ErrDuplicate: a unique token was taken (a replay to look up).
var ErrDuplicate = errors.New("charge: token already used")

// Filter selects charges for List.
type Filter struct {
	// MerchantUserID: that merchant's charges (0: anyone's, the admin).
	MerchantUserID int64
	// PayerUserID: that payer's (0: any).
	PayerUserID int64
	// Status: only these ("": every status).
	Status Status
	// Before: older than this charge id (0: from the newest).
	Before int64
	// Limit: at most this many (0: 20; above MaxListLimit, MaxListLimit).
	Limit int
}

// MaxListLimit is the most charges one List reads: a CSV's batch.
const MaxListLimit = 1000

// Move is one decided move of a charge.
type Move struct {
	PublicID string
	// MerchantUserID: the charge must be this merchant's (0: any, the
	// payer's and the worker's moves).
	MerchantUserID int64
	Actor          Actor
	Request        Request
	// HoldTTL is how long an authorization's hold lasts.
	HoldTTL time.Duration
	// View is the webhook body's "charge" of a charge.
	View func(Charge) any
	// FormToken is the checkout form's token of a confirm (""; none),
	// kept with the charge it confirms: a token that confirmed another
	// of the payer's charges is ErrFormReused, and nothing is written.
	FormToken string
}

// RefundWrite is one refund to write, in one transaction: the charge
// locked; the token's refund looked up (ErrDuplicate); CheckRefund; the
// refund's row; the charge's refunded_rials by an UPDATE whose WHERE is
// the limit (ErrRefundExceeds); the ledger transaction merchant → payer
// (ErrInsufficientFunds); the event and the outbox.
type RefundWrite struct {
	ChargePublicID string
	MerchantUserID int64
	Token          string
	Refund         Refund
	View           func(Charge) any
	RefundView     func(Refund, Charge) any
}
