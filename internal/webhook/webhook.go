// Package webhook is Kifpool's signed webhooks to partners and the return
// origins of their API top-ups: a user's endpoints (URL, events, a signing
// secret kept encrypted), the outbox rows written in a payment move's own
// transaction (Enqueue, or OutboxOf's insert folded into a credit's
// statement, only by the payment store's writer),
// and the sender that claims due rows and delivers them at least once, in
// order per top-up (and per withdrawal), signed, over a client that refuses private networks.
// It knows payments only as ids and JSON bodies (it sits below the payment
// layer).
package webhook

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Event types.
const (
	TypeCredited    = "topup.credited"
	TypeFailed      = "topup.failed"
	TypeNeedsReview = "topup.needs_review"
	// TypeTransferSent and TypeTransferReceived go to the sender's and the
	// recipient's endpoints when a transfer is made.
	TypeTransferSent     = "transfer.sent"
	TypeTransferReceived = "transfer.received"
	// TypeRefunded: part or all of a credited top-up went back to the
	// payer's card (a card refund); the body names it in "card_refund".
	TypeRefunded = "topup.refunded"
	// TypeWithdrawalPaid, TypeWithdrawalFailed and TypeWithdrawalReturned
	// go to the owner's endpoints when a withdrawal (cash-out to their
	// bank account) is paid, fails (the provider's word, or an admin's
	// rejection: the amount is back in the wallet) or is returned after
	// it was paid (the amount credited back); the body carries
	// "withdrawal".
	TypeWithdrawalPaid     = "withdrawal.paid"
	TypeWithdrawalFailed   = "withdrawal.failed"
	TypeWithdrawalReturned = "withdrawal.returned"
	// The charge events go to the merchant's endpoints (ChargeTypes).
	TypeChargeSucceeded  = "charge.succeeded"
	TypeChargeAuthorized = "charge.authorized"
	TypeChargeCaptured   = "charge.captured"
	TypeChargeCanceled   = "charge.canceled"
	TypeChargeExpired    = "charge.expired"
	TypeChargeRefunded   = "charge.refunded"
)

// ChargeTypes lists a charge's event types.
func ChargeTypes() []string {
	return []string{TypeChargeSucceeded, TypeChargeAuthorized, TypeChargeCaptured, TypeChargeCanceled, TypeChargeExpired,
		TypeChargeRefunded}
}

// Types lists every event type, in the order pages show them.
func Types() []string {
	return append([]string{TypeCredited, TypeFailed, TypeNeedsReview, TypeRefunded, TypeTransferSent, TypeTransferReceived,
		TypeWithdrawalPaid, TypeWithdrawalFailed, TypeWithdrawalReturned}, ChargeTypes()...)
}

// ValidType reports whether t is an event type.
func ValidType(t string) bool {
	for _, x := range Types() {
		if x == t {
			return true
		}
	}
	return false
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	// StatusFailed: not delivered within the retry window; the endpoint is
	// marked failing. An admin may send it again.
	StatusFailed = "failed"
)

// Event is one event as the payment store writes it.
type Event struct {
	UserID  int64
	TopUpID int64
	Type    string
	// TopUp is the top-up as the API shows it (GET /api/v1/topups/{id})
	// at the moment of the move.
	TopUp any
	// CardRefund is the card refund of a topup.refunded event (nil for
	// the others).
	CardRefund any
	CreatedAt  time.Time
}

// Body is what a delivery's body holds: the event and the top-up (and,
// for topup.refunded, the card refund).
type Body struct {
	EventID    string          `json:"event_id"`
	Type       string          `json:"type"`
	CreatedAt  time.Time       `json:"created_at"`
	TopUp      json.RawMessage `json:"topup"`
	CardRefund json.RawMessage `json:"card_refund,omitempty"`
}

// NewEventID returns a fresh event id ("evt_" and 26 base32 characters).
func NewEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "evt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Enqueue writes the event's outbox rows with tx, the transaction of the
// move that caused it: one row per enabled endpoint of the user subscribed
// to its type (one marked failing included: it keeps getting new events),
// all with one event id and one body, in one INSERT … SELECT (a user
// without endpoints costs one statement that inserts nothing). The body
// is encoded once here, so every endpoint and every attempt gets the same
// bytes. queued is how many deliveries it wrote (0 for a user without a
// subscribed endpoint: nothing for a sender to look for).
func Enqueue(tx *gorm.DB, e Event) (queued int64, err error) {
	o, err := OutboxOf(e)
	if err != nil {
		return 0, err
	}
	res := tx.Exec(o.Insert, o.Args...)
	if res.Error != nil {
		return 0, fmt.Errorf("webhook: queue %s of payment %d: %w", e.Type, e.TopUpID, res.Error)
	}
	return res.RowsAffected, nil
}

// Outbox is a top-up event's outbox rows ready to write: Insert, the one
// INSERT … SELECT of a delivery per subscribed endpoint, and its
// arguments. Enqueue runs it alone; the payment store's credit on
// PostgreSQL runs it as a part of its one statement (a data-modifying
// WITH) with the move's event and gateway calls, counting the rows it
// returns with RETURNING added.
type Outbox struct {
	Insert string
	Args   []any
}

// OutboxOf is e's Outbox: a fresh event id and the body encoded once (its
// fields and order as Body's), as Enqueue writes them.
func OutboxOf(e Event) (Outbox, error) {
	if !ValidType(e.Type) {
		return Outbox{}, fmt.Errorf("webhook: unknown event type %q", e.Type)
	}
	at := e.CreatedAt.UTC()
	id := NewEventID()
	// Body's fields and order, the top-up encoded in the same pass.
	body, err := json.Marshal(struct {
		EventID    string    `json:"event_id"`
		Type       string    `json:"type"`
		CreatedAt  time.Time `json:"created_at"`
		TopUp      any       `json:"topup"`
		CardRefund any       `json:"card_refund,omitempty"`
	}{id, e.Type, at, e.TopUp, e.CardRefund})
	if err != nil {
		return Outbox{}, fmt.Errorf("webhook: event %s of payment %d: %w", e.Type, e.TopUpID, err)
	}
	return Outbox{Insert: `INSERT INTO webhook_deliveries (event_id, endpoint_id, topup_id, type, body, status, next_attempt_at, created_at, retry_from)
		SELECT ?, id, ?, ?, ?, 'pending', ?, ?, ? FROM webhook_endpoints
		WHERE user_id = ? AND disabled_at IS NULL AND events LIKE ?`,
		Args: []any{id, e.TopUpID, e.Type, string(body), at, at, at, e.UserID, "%," + e.Type + ",%"}}, nil
}

// eventsColumn is the stored form of a set of types.
func eventsColumn(types []string) string { return "," + strings.Join(types, ",") + "," }

// eventsOf is the inverse of eventsColumn.
func eventsOf(col string) []string {
	var out []string
	for _, t := range strings.Split(strings.Trim(col, ","), ",") {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// TransferEvent is one event of a transfer (transfer.sent to its sender,
// transfer.received to its recipient), as the transfer's store writes it.
type TransferEvent struct {
	UserID     int64
	TransferID int64
	Type       string
	// Transfer is the transfer as the API shows it to UserID.
	Transfer  any
	CreatedAt time.Time
}

// EnqueueTransfer is Enqueue for a transfer's event, in the transfer's
// own transaction tx: the same outbox, signing and sender; its rows name
// the transfer (transfer_id) instead of a top-up, and its body carries
// "transfer" where a top-up's carries "topup".
func EnqueueTransfer(tx *gorm.DB, e TransferEvent) (queued int64, err error) {
	if e.Type != TypeTransferSent && e.Type != TypeTransferReceived {
		return 0, fmt.Errorf("webhook: %q is not a transfer's event", e.Type)
	}
	at := e.CreatedAt.UTC()
	id := NewEventID()
	body, err := json.Marshal(struct {
		EventID   string    `json:"event_id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Transfer  any       `json:"transfer"`
	}{id, e.Type, at, e.Transfer})
	if err != nil {
		return 0, fmt.Errorf("webhook: event %s of transfer %d: %w", e.Type, e.TransferID, err)
	}
	return queueFor(tx, subjectTransfer, e.TransferID, e.UserID, id, e.Type, body, at)
}

// WithdrawalEvent is one event of a withdrawal (withdrawal.paid,
// withdrawal.failed, withdrawal.returned), as the withdrawal's store
// writes it.
type WithdrawalEvent struct {
	UserID       int64
	WithdrawalID int64
	Type         string
	// Withdrawal is the withdrawal as GET /api/v1/withdrawals/{id}
	// shows it after the move.
	Withdrawal any
	CreatedAt  time.Time
}

// EnqueueWithdrawal is Enqueue for a withdrawal's event, in the
// transaction of the withdrawal's move tx: the same outbox, signing and
// sender; its rows name the withdrawal (withdrawal_id), and its body
// carries "withdrawal" where a top-up's carries "topup". A withdrawal's
// events reach an endpoint in order (paid before returned).
func EnqueueWithdrawal(tx *gorm.DB, e WithdrawalEvent) (queued int64, err error) {
	if e.Type != TypeWithdrawalPaid && e.Type != TypeWithdrawalFailed && e.Type != TypeWithdrawalReturned {
		return 0, fmt.Errorf("webhook: %q is not a withdrawal's event", e.Type)
	}
	at := e.CreatedAt.UTC()
	id := NewEventID()
	body, err := json.Marshal(struct {
		EventID    string    `json:"event_id"`
		Type       string    `json:"type"`
		CreatedAt  time.Time `json:"created_at"`
		Withdrawal any       `json:"withdrawal"`
	}{id, e.Type, at, e.Withdrawal})
	if err != nil {
		return 0, fmt.Errorf("webhook: event %s of withdrawal %d: %w", e.Type, e.WithdrawalID, err)
	}
	return queueFor(tx, subjectWithdrawal, e.WithdrawalID, e.UserID, id, e.Type, body, at)
}

// ChargeEvent is one event of a charge (charge.*), to the merchant's
// endpoints, as the charge's store writes it.
type ChargeEvent struct {
	UserID   int64 // the merchant
	ChargeID int64
	Type     string
	// Charge is the charge as the API shows it after the move (with its
	// refunds); Refund, on charge.refunded, the refund just made.
	Charge    any
	Refund    any
	CreatedAt time.Time
}

// EnqueueCharge is Enqueue for a charge's event, in the move's own
// transaction tx: the same outbox, signing and sender; its rows name the
// charge (charge_id), delivered in order per charge, and its body carries
// "charge" (and, on charge.refunded, "refund").
func EnqueueCharge(tx *gorm.DB, e ChargeEvent) (queued int64, err error) {
	ok := false
	for _, t := range ChargeTypes() {
		ok = ok || t == e.Type
	}
	if !ok {
		return 0, fmt.Errorf("webhook: %q is not a charge's event", e.Type)
	}
	at := e.CreatedAt.UTC()
	id := NewEventID()
	body, err := json.Marshal(struct {
		EventID   string    `json:"event_id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Charge    any       `json:"charge"`
		Refund    any       `json:"refund,omitempty"`
	}{id, e.Type, at, e.Charge, e.Refund})
	if err != nil {
		return 0, fmt.Errorf("webhook: event %s of charge %d: %w", e.Type, e.ChargeID, err)
	}
	return queueFor(tx, subjectCharge, e.ChargeID, e.UserID, id, e.Type, body, at)
}

// subject is the column of webhook_deliveries that names what an event
// is about (beside a top-up's topup_id).
type subject int

const (
	subjectTransfer subject = iota
	subjectWithdrawal
	subjectCharge
)

// deliveries is the subject's name and its insert of one delivery per
// endpoint of the user subscribed to the event's type.
func (sub subject) deliveries() (name, insert string) {
	switch sub {
	case subjectTransfer:
		return "transfer", `INSERT INTO webhook_deliveries (event_id, endpoint_id, transfer_id, type, body, status, next_attempt_at, created_at, retry_from)
		SELECT ?, id, ?, ?, ?, 'pending', ?, ?, ? FROM webhook_endpoints
		WHERE user_id = ? AND disabled_at IS NULL AND events LIKE ?`
	case subjectWithdrawal:
		return "withdrawal", `INSERT INTO webhook_deliveries (event_id, endpoint_id, withdrawal_id, type, body, status, next_attempt_at, created_at, retry_from)
		SELECT ?, id, ?, ?, ?, 'pending', ?, ?, ? FROM webhook_endpoints
		WHERE user_id = ? AND disabled_at IS NULL AND events LIKE ?`
	default:
		return "charge", `INSERT INTO webhook_deliveries (event_id, endpoint_id, charge_id, type, body, status, next_attempt_at, created_at, retry_from)
		SELECT ?, id, ?, ?, ?, 'pending', ?, ?, ? FROM webhook_endpoints
		WHERE user_id = ? AND disabled_at IS NULL AND events LIKE ?`
	}
}

// queueFor writes event id's deliveries in tx, one per endpoint of
// userID subscribed to typ, naming the subject's row subjectID: the
// outbox of transfers', withdrawals' and charges' events.
func queueFor(tx *gorm.DB, sub subject, subjectID, userID int64, id, typ string, body []byte, at time.Time) (int64, error) {
	name, insert := sub.deliveries()
	res := tx.Exec(insert, id, subjectID, typ, string(body), at, at, at, userID, "%,"+typ+",%")
	if res.Error != nil {
		return 0, fmt.Errorf("webhook: queue %s of %s %d: %w", typ, name, subjectID, res.Error)
	}
	return res.RowsAffected, nil
}
