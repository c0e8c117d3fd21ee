// Package charge is "Pay with Kifpool" (issue 33 §2, ARCHITECTURE §2.2,
// docs/design/charges.md): merchants, their charges and refunds. The one
// use case (Service) is what the API (/api/v1/charges…), the payer's
// checkout page (/checkout/{id}), the merchant's page (/merchant), the
// admin console, the CLI (kifpool merchant create) and the worker all
// call; the SQL is in internal/charge/sqlstore alone.
//
// A charge's life:
//
//	requires_confirmation ─confirm (automatic)─→ succeeded ─refund…─→ succeeded (refunded_rials grows)
//	requires_confirmation ─confirm (manual)────→ authorized ─capture─→ succeeded
//	requires_confirmation ─cancel (payer or merchant)→ canceled
//	requires_confirmation ─30 minutes─→ expired
//	authorized ─cancel (merchant)→ canceled (the hold released)
//	authorized ─CHARGE_HOLD_HOURS─→ expired (the hold expired)
//
// Every move is one database transaction: the charge's row, locked and
// decided by a pure function (Decide), its status written under the
// status it was read in, its event (charge_events), its ledger movement
// and its webhook outbox rows. The money:
//   - confirm, automatic: ledger transaction kind charge, reference the
//     charge's public id, payer wallet → merchant account;
//   - confirm, manual: a hold on the payer's wallet (reason "charge",
//     reference the public id), expiring after CHARGE_HOLD_HOURS;
//   - capture: the hold captured (kind capture, reference "hold:{id}")
//     into the merchant account, the rest released in the same write;
//   - cancel of an authorization: the hold released; expiry: expired;
//   - refund: kind refund, reference the refund's public id, merchant
//     account → payer wallet, its total guarded in the UPDATE of the
//     charge's refunded_rials (never above captured_rials).
package charge

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Status is where a charge stands.
type Status string

// The statuses of a charge.
const (
	// StatusRequiresConfirmation: made by the merchant, waiting for the
	// payer at the checkout (at most CheckoutTTL).
	StatusRequiresConfirmation Status = "requires_confirmation"
	// StatusAuthorized: confirmed with manual capture; the amount is held
	// on the payer's wallet until captured, canceled or expired.
	StatusAuthorized Status = "authorized"
	// StatusSucceeded: the money is the merchant's (captured_rials of
	// it); refunds keep the status and grow refunded_rials.
	StatusSucceeded Status = "succeeded"
	// StatusCanceled: canceled by the payer at the checkout or by the
	// merchant; an authorization's hold was released.
	StatusCanceled Status = "canceled"
	// StatusExpired: the checkout was not confirmed in time, or an
	// authorization was not captured in time (its hold expired).
	StatusExpired Status = "expired"
)

// Statuses lists every status, in the order pages show them.
func Statuses() []Status {
	return []Status{StatusRequiresConfirmation, StatusAuthorized, StatusSucceeded, StatusCanceled, StatusExpired}
}

// Valid reports whether s is a status.
func (s Status) Valid() bool {
	for _, x := range Statuses() {
		if x == s {
			return true
		}
	}
	return false
}

// CaptureMethod says when a confirmed charge's money moves.
type CaptureMethod string

// The capture methods.
const (
	// CaptureAutomatic: the payer's confirmation pays the merchant.
	CaptureAutomatic CaptureMethod = "automatic"
	// CaptureManual: the confirmation holds the amount; the merchant
	// captures it (or part of it) later.
	CaptureManual CaptureMethod = "manual"
)

// Actor is who moved a charge (charge_events.actor).
type Actor string

// The actors.
const (
	ActorMerchant Actor = "merchant"
	ActorPayer    Actor = "payer"
	ActorWorker   Actor = "worker"
	ActorAdmin    Actor = "admin"
)

// Limits of a charge's fields.
const (
	MaxDescriptionLen = 500
	MaxOrderIDLen     = 100
	MaxDisplayNameLen = 100
	// MaxRials is the largest charge.
	MaxRials int64 = 1_000_000_000_000
	// HoldReason is the reason of an authorization's hold.
	HoldReason = "charge"
	// DefaultCheckoutTTL is how long a checkout waits for the payer.
	DefaultCheckoutTTL = 30 * time.Minute
	// DefaultHoldTTL is how long an authorization holds the payer's
	// money (CHARGE_HOLD_HOURS, 168).
	DefaultHoldTTL = 168 * time.Hour
)

// The refusals and errors of the use cases. Each refusal writes nothing,
// except where it says the charge expired (the expiry is written).
var (
	// ErrNotMerchant: the user is not a merchant.
	ErrNotMerchant = errors.New("charge: not a merchant")
	// ErrNotFound: no such charge (of this merchant), or refund.
	ErrNotFound = errors.New("charge: not found")
	// ErrAddressUnconfirmed: the user's e-mail address is not confirmed
	// (auth's verify.go): the account may be a stranger's who signed up
	// with the address, and is made no merchant (payers' money would go
	// to the stranger), nor pays a charge (the charge would name the
	// stranger as the address's owner to the merchant).
	// It is owner.ErrUnconfirmed, as every service answers it.
	ErrAddressUnconfirmed = owner.ErrUnconfirmed
	// ErrOrderIDTaken: the merchant has a charge with this order id
	// (made with another Idempotency-Key).
	ErrOrderIDTaken = errors.New("charge: order_id already used")
	// ErrTokenReused: the Idempotency-Key made another charge (or refund).
	ErrTokenReused = errors.New("charge: key already used for another request")
	// ErrBadAmount: an amount that is not positive or too large; a
	// capture above the charge's amount.
	ErrBadAmount = errors.New("charge: bad amount")
	// ErrBadCapture: capture is neither automatic nor manual.
	ErrBadCapture = errors.New("charge: capture must be automatic or manual")
	// ErrBadOrderID, ErrBadDescription: the fields break their rules.
	ErrBadOrderID     = errors.New("charge: order_id must be 1 to 100 visible characters")
	ErrBadDescription = errors.New("charge: description longer than 500 characters or with control characters")
	// ErrOwnMerchant: an admin does not make themselves a merchant, nor
	// rename their own merchant; another admin (or the operator's
	// kifpool merchant create) does.
	ErrOwnMerchant = errors.New("charge: an admin's own account is made a merchant by another admin")
	// ErrBadName: a merchant's display name breaks its rules.
	ErrBadName = errors.New("charge: a merchant's display name is 1 to 100 characters, no control characters")
	// ErrInsufficientFunds: the payer's (a refund: the merchant's)
	// available balance is short; nothing written.
	ErrInsufficientFunds = errors.New("charge: available balance is short")
	// ErrExpired: the checkout or the authorization expired (now, or
	// before).
	ErrExpired = errors.New("charge: expired")
	// ErrCanceled: the charge was canceled.
	ErrCanceled = errors.New("charge: canceled")
	// ErrPaidByAnother: another payer confirmed the charge.
	ErrPaidByAnother = errors.New("charge: confirmed by another payer")
	// ErrPayToSelf: the merchant cannot pay its own charge.
	ErrPayToSelf = errors.New("charge: the merchant cannot pay its own charge")
	// ErrNotCapturable: only an authorized charge is captured.
	ErrNotCapturable = errors.New("charge: not authorized, nothing to capture")
	// ErrCapturedOtherAmount: the charge was captured for another amount
	// than this capture names (a stale page, a second call with a new
	// amount): only a capture of the same amount is its replay.
	ErrCapturedOtherAmount = fmt.Errorf("%w: captured already, for another amount", ErrNotCapturable)
	// ErrNotCancelable: a charge that succeeded is refunded, not
	// canceled; an expired one is over.
	ErrNotCancelable = errors.New("charge: cannot be canceled")
	// ErrNotRefundable: only a charge that succeeded is refunded.
	ErrNotRefundable = errors.New("charge: not succeeded, nothing to refund")
	// ErrRefundExceeds: the refunds would pass what was captured.
	ErrRefundExceeds = errors.New("charge: refunds would exceed the captured amount")
	// ErrBadToken: an Idempotency-derived token of the wrong shape.
	ErrBadToken = errors.New("charge: bad token")
	// ErrBadFormToken: the checkout form's token is not of a form's
	// shape (formtoken.Valid): an old or forged form.
	ErrBadFormToken = errors.New("charge: bad checkout form token")
	// ErrFormReused: the checkout form's token confirmed another charge
	// already (the unique payer and token); nothing written.
	ErrFormReused = errors.New("charge: checkout form already used for another charge")
)

// Merchant is a user who takes charges: a display name and an account.
type Merchant struct {
	UserID      int64
	Email       string
	DisplayName string
	AccountID   int64
	CreatedBy   *int64
	CreatedAt   time.Time
	// PostedRials and HeldRials are the merchant account's figures (on
	// reads that join them).
	PostedRials int64
	HeldRials   int64
}

// AvailableRials is what the merchant may refund from.
func (m Merchant) AvailableRials() int64 { return m.PostedRials - m.HeldRials }

// Charge is one charge.
type Charge struct {
	ID             int64
	PublicID       string
	MerchantUserID int64
	// MerchantName is the merchant's display name, MerchantEmail its
	// address.
	MerchantName  string
	MerchantEmail string
	// PayerUserID is 0 until the payer confirms.
	PayerUserID   int64
	PayerEmail    string
	AmountRials   int64
	Description   string
	OrderID       string
	ReturnURL     string
	Capture       CaptureMethod `gorm:"column:capture_method"`
	Status        Status
	CapturedRials int64
	RefundedRials int64
	// HoldID is the authorization's hold (0: none).
	HoldID int64
	// ExpiresAt is when an unconfirmed checkout expires; HoldExpiresAt
	// when an authorization does.
	ExpiresAt     time.Time
	HoldExpiresAt *time.Time
	ConfirmedAt   *time.Time
	CapturedAt    *time.Time
	EndedAt       *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Refunds are its refunds, oldest first (Get fills them).
	Refunds []Refund `gorm:"-"`
}

// RefundableRials is what may still be refunded.
func (c Charge) RefundableRials() int64 { return c.CapturedRials - c.RefundedRials }

// Refund is one refund of a charge.
type Refund struct {
	ID          int64
	PublicID    string
	ChargeID    int64
	AmountRials int64
	CreatedAt   time.Time
}

// Event is one row of a charge's history (charge_events).
type Event struct {
	ID          int64
	ChargeID    int64
	Type        string
	FromStatus  Status
	ToStatus    Status
	Actor       Actor
	AmountRials int64
	RefundID    *int64
	CreatedAt   time.Time
}

// newID returns prefix and 26 base32 characters.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// NewPublicID returns a fresh charge id ("ch_…").
func NewPublicID() string { return newID("ch_") }

// NewRefundID returns a fresh refund id ("re_…").
func NewRefundID() string { return newID("re_") }

// CheckOrderID applies the order id's rules: 1 to 100 characters, no
// control or invisible ones, no space at either end (a retry that adds
// one would otherwise name another order, and make a second charge for
// it).
func CheckOrderID(s string) error {
	if s == "" || utf8.RuneCountInString(s) > MaxOrderIDLen || usertext.CheckName(s) != nil || strings.TrimSpace(s) != s {
		return ErrBadOrderID
	}
	return nil
}

// CheckDescription applies the description's rules.
func CheckDescription(s string) error {
	if utf8.RuneCountInString(s) > MaxDescriptionLen || (s != "" && usertext.CheckNote(s) != nil) {
		return ErrBadDescription
	}
	return nil
}

// CheckDisplayName applies a merchant's display name's rules.
func CheckDisplayName(s string) error {
	if s == "" || utf8.RuneCountInString(s) > MaxDisplayNameLen || usertext.CheckName(s) != nil {
		return ErrBadName
	}
	return nil
}

// CheckAmount applies the amount's rules.
func CheckAmount(rials int64) error {
	if rials <= 0 || rials > MaxRials {
		return ErrBadAmount
	}
	return nil
}

// View is a charge as the API shows it (GET /api/v1/charges/{id}) and as
// its webhook events carry it: one type for both.
type View struct {
	ID            string       `json:"id"`
	Status        Status       `json:"status"`
	Capture       string       `json:"capture"`
	AmountRials   int64        `json:"amount_rials"`
	CapturedRials int64        `json:"captured_rials"`
	RefundedRials int64        `json:"refunded_rials"`
	Description   string       `json:"description"`
	OrderID       string       `json:"order_id"`
	ReturnURL     string       `json:"return_url"`
	CheckoutURL   string       `json:"checkout_url"`
	ExpiresAt     time.Time    `json:"expires_at"`
	HoldExpiresAt *time.Time   `json:"hold_expires_at"`
	CreatedAt     time.Time    `json:"created_at"`
	Refunds       []RefundView `json:"refunds"`
}

// RefundView is a refund as the API shows it.
type RefundView struct {
	ID          string    `json:"id"`
	ChargeID    string    `json:"charge_id"`
	AmountRials int64     `json:"amount_rials"`
	CreatedAt   time.Time `json:"created_at"`
}

// ViewOf is c as the API shows it; baseURL is the app's (BASE_URL), for
// checkout_url.
func ViewOf(c Charge, baseURL string) View {
	v := View{ID: c.PublicID, Status: c.Status, Capture: string(c.Capture), AmountRials: c.AmountRials,
		CapturedRials: c.CapturedRials, RefundedRials: c.RefundedRials, Description: c.Description, OrderID: c.OrderID,
		ReturnURL: c.ReturnURL, CheckoutURL: strings.TrimRight(baseURL, "/") + routes.Checkout(c.PublicID),
		ExpiresAt: c.ExpiresAt.UTC(), CreatedAt: c.CreatedAt.UTC(), Refunds: []RefundView{}}
	if c.HoldExpiresAt != nil {
		t := c.HoldExpiresAt.UTC()
		v.HoldExpiresAt = &t
	}
	for _, r := range c.Refunds {
		v.Refunds = append(v.Refunds, RefundViewOf(r, c.PublicID))
	}
	return v
}

// RefundViewOf is r of charge chargeID as the API shows it.
func RefundViewOf(r Refund, chargeID string) RefundView {
	return RefundView{ID: r.PublicID, ChargeID: chargeID, AmountRials: r.AmountRials, CreatedAt: r.CreatedAt.UTC()}
}

// ValidPublicID reports whether s has the shape of a charge's public id
// ("ch_" and 26 base32 characters, lower case): pages check a path's id,
// or a cookie's, before anything reads or links it.
func ValidPublicID(s string) bool {
	rest, ok := strings.CutPrefix(s, "ch_")
	if !ok || len(rest) != 26 {
		return false
	}
	for _, r := range rest {
		if (r < 'a' || r > 'z') && (r < '2' || r > '7') {
			return false
		}
	}
	return true
}
