// Package book holds the sandbox bank's payments: the one record of each
// payment whatever its protocol, the state every protocol moves it through
// (IN_BANK, then PAID or FAILED, then VERIFIED or REVERSED), the bank's
// random source (tokens, reference ids, fake cards) and its clock.
//
// A protocol (internal/sandbank/zarinpal, zibal, sep, mellat) registers its
// Rules: how long a paid payment waits for verify, what paying adds (SEP's
// RefNum, Mellat's SaleReferenceId) and the request that takes the payer
// back to the merchant. The book knows no protocol by name.
package book

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// State is the bank-side state of a payment, named as Zarinpal's inquiry
// reports it.
type State string

// Payment states. A payment starts IN_BANK; the payer moves it to PAID or
// FAILED (cancel, or expiry after the TTL); the first verify moves PAID to
// VERIFIED. A paid payment not verified within its protocol's deadline, or
// reversed by the merchant, is REVERSED.
const (
	StateInBank   State = "IN_BANK"
	StatePaid     State = "PAID"
	StateVerified State = "VERIFIED"
	StateFailed   State = "FAILED"
	StateReversed State = "REVERSED"
)

// Reasons a payment is FAILED (Payment.FailReason).
const (
	FailCancelled = "cancelled"
	FailExpired   = "expired"
)

// Errors of Finish; test them with errors.Is.
var (
	// ErrUnknownAuthority: no payment has this authority.
	ErrUnknownAuthority = errors.New("sandbank: unknown authority")
	// ErrNotInBank: the payment is no longer waiting for the payer (paid,
	// verified, cancelled or expired).
	ErrNotInBank = errors.New("sandbank: payment is not IN_BANK")
)

// Payment is a snapshot of one payment as the bank holds it.
type Payment struct {
	Authority  string `json:"authority"`
	MerchantID string `json:"merchant_id"`
	// Amount is in rials, whatever the currency of the request.
	Amount int64 `json:"amount"`
	// Currency is the unit the request (and therefore verify) used: IRR or IRT.
	Currency    string `json:"currency"`
	Fee         int64  `json:"fee"`
	State       State  `json:"state"`
	FailReason  string `json:"fail_reason,omitempty"`
	Description string `json:"description"`
	CallbackURL string `json:"callback_url"`
	OrderID     string `json:"order_id"`
	Mobile      string `json:"mobile,omitempty"`
	Email       string `json:"email,omitempty"`
	Referer     string `json:"referer,omitempty"`
	// RefID, CardPAN and CardHash are set when the payer pays.
	RefID    int64  `json:"ref_id"`
	CardPAN  string `json:"card_pan"`
	CardHash string `json:"card_hash"`

	CreatedAt  time.Time `json:"created_at"`
	PaidAt     time.Time `json:"paid_at,omitzero"`
	FailedAt   time.Time `json:"failed_at,omitzero"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	// VerifyCount counts every verify call that named this authority with
	// this payment's merchant, whatever its answer (100, 101, -50, -51).
	VerifyCount int `json:"verify_count"`

	// Gateway is the protocol's gateway: "zarinpal", "zibal", "sep", "mellat".
	// MerchantID holds SEP's and Mellat's terminal id.
	Gateway string `json:"gateway"`
	// Receipt is what the payer's callback carries for verify: SEP's
	// RefNum, Mellat's SaleReferenceId (set when paid).
	Receipt string `json:"receipt,omitempty"`
	// OrderNumber is Mellat's orderId (SaleOrderId in the callback).
	OrderNumber int64 `json:"order_number,omitempty"`
	// SettledAt is when Mellat's settle succeeded; SettleCount counts
	// settle calls, whatever their answer.
	SettledAt   time.Time `json:"settled_at,omitzero"`
	SettleCount int       `json:"settle_count,omitempty"`
	ReversedAt  time.Time `json:"reversed_at,omitzero"`
	// Refunds are the refunds to the card the bank made of a verified
	// payment (Zarinpal's AddRefund), oldest first; RefundedAmount is
	// their sum, in rials.
	Refunds        []Refund `json:"refunds,omitempty"`
	RefundedAmount int64    `json:"refunded_amount,omitempty"`
}

// snapshot is a copy of the payment that later changes do not reach.
func (rec *Record) snapshot() Payment {
	p := rec.Payment
	p.Refunds = slices.Clone(p.Refunds)
	return p
}

// Refund is one refund to the card of a verified payment.
type Refund struct {
	ID          string    `json:"id"`
	Amount      int64     `json:"amount"` // rials
	Method      string    `json:"method"`
	Reason      string    `json:"reason"`
	Description string    `json:"description"`
	At          time.Time `json:"at"`
}

// Record is a payment plus what only the bank knows of it.
type Record struct {
	Payment
	Seq          uint64 // creation order
	ReqAmount    int64  // amount as requested, in Currency units
	CardNumber   string // the fake card that pays; never shown in full
	StartReferer string // the page the payer came from
	TraceNo      string // SEP's TraceNo, set when paid
	User, Pass   string // Mellat's credentials, as the pay request gave them
}

// Rules are what a protocol tells the book about its payments.
type Rules struct {
	// VerifyDeadline is how long a paid payment waits for verify before the
	// bank returns the money (REVERSED); 0: forever.
	VerifyDeadline time.Duration
	// Paid, when set, adds what paying gives a payment of this protocol
	// (a receipt, a trace number); called under the lock with the new
	// reference id.
	Paid func(b *Book, rec *Record, refID int64) error
	// Callback is the request the payer's browser makes to the merchant
	// after the bank's page.
	Callback func(rec *Record) CallbackRequest
	// OrderKey, when set, indexes the payments by the merchant's order
	// (Mellat refuses a terminal's order number twice): "" for none.
	OrderKey func(rec *Record) string
	// PageTTL is how long this protocol's page waits for the payer (SEP's
	// token: 20 minutes); 0: the book's TTL. A book made with FixedTTL
	// ignores it.
	PageTTL time.Duration
}

// Options configures a Book.
type Options struct {
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
	// Rand is the source of tokens, reference ids and fake cards. Default:
	// crypto/rand, unless Seed is set.
	Rand io.Reader
	// Seed, when non-zero and Rand is nil, makes the book deterministic.
	Seed uint64
	// TTL is how long a payment may stay IN_BANK, unless its protocol's
	// Rules.PageTTL says otherwise.
	TTL time.Duration
	// FixedTTL makes TTL every protocol's (a test's chosen time).
	FixedTTL bool
	// Logger receives one line per state change; default: discard.
	Logger *slog.Logger
}

// Book is the bank's payments. It is safe for concurrent use; the methods
// named ...Locked are for a protocol that holds the lock (Lock, Unlock).
type Book struct {
	clock  func() time.Time
	ttl    time.Duration
	fixed  bool
	log    *slog.Logger
	tehran *time.Location
	rules  map[string]Rules

	mu       sync.Mutex
	rand     io.Reader // guarded by mu: readers need not be concurrency-safe
	payments map[string]*Record
	refIDs   map[int64]struct{}
	receipts map[string]*Record // SEP RefNum / Mellat SaleReferenceId → payment
	orders   map[string]*Record // gateway + Rules.OrderKey → payment
	seq      uint64
}

// New returns an empty book.
func New(opts Options) *Book {
	b := &Book{
		clock:    opts.Clock,
		ttl:      opts.TTL,
		fixed:    opts.FixedTTL,
		log:      opts.Logger,
		rand:     opts.Rand,
		rules:    make(map[string]Rules),
		payments: make(map[string]*Record),
		refIDs:   make(map[int64]struct{}),
		receipts: make(map[string]*Record),
		orders:   make(map[string]*Record),
	}
	if b.clock == nil {
		b.clock = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.rand == nil {
		if opts.Seed != 0 {
			var seed [32]byte
			binary.LittleEndian.PutUint64(seed[:], opts.Seed)
			b.rand = rand.NewChaCha8(seed)
		} else {
			b.rand = crand.Reader
		}
	}
	if loc, err := time.LoadLocation("Asia/Tehran"); err == nil {
		b.tehran = loc
	} else {
		// No tz database: Iran has kept UTC+03:30 all year since 2022.
		b.tehran = time.FixedZone("+0330", 3*3600+30*60)
	}
	return b
}

// Register gives the book the rules of gateway's payments; call it before
// the bank serves anything.
func (b *Book) Register(gateway string, r Rules) { b.rules[gateway] = r }

// Now is the bank's clock.
func (b *Book) Now() time.Time { return b.clock() }

// Tehran is the bank's time zone (the dates its protocols write).
func (b *Book) Tehran() *time.Location { return b.tehran }

// Lock takes the book's lock, for the ...Locked methods.
func (b *Book) Lock() { b.mu.Lock() }

// Unlock releases the book's lock.
func (b *Book) Unlock() { b.mu.Unlock() }

// GetLocked is the payment of a token.
func (b *Book) GetLocked(token string) (*Record, bool) {
	rec, ok := b.payments[token]
	return rec, ok
}

// TakenLocked reports whether a token is in use.
func (b *Book) TakenLocked(token string) bool {
	_, ok := b.payments[token]
	return ok
}

// ReceiptLocked is the payment of a receipt (SEP's RefNum, Mellat's
// SaleReferenceId), nil for none.
func (b *Book) ReceiptLocked(receipt string) *Record { return b.receipts[receipt] }

// OrderLocked is gateway's payment of an order key (Rules.OrderKey), nil
// for none.
func (b *Book) OrderLocked(gateway, key string) *Record { return b.orders[gateway+" "+key] }

// AddLocked registers a new payment, in creation order.
func (b *Book) AddLocked(rec *Record) {
	b.seq++
	rec.Seq = b.seq
	b.indexLocked(rec)
}

// indexLocked files a record under its token, receipt and order.
func (b *Book) indexLocked(rec *Record) {
	b.payments[rec.Authority] = rec
	if rec.RefID != 0 {
		b.refIDs[rec.RefID] = struct{}{}
	}
	if rec.Receipt != "" {
		b.receipts[rec.Receipt] = rec
	}
	if r := b.rules[rec.Gateway]; r.OrderKey != nil {
		if k := r.OrderKey(rec); k != "" {
			b.orders[rec.Gateway+" "+k] = rec
		}
	}
}

// Restore puts back payments kept across a restart.
func (b *Book) Restore(recs []Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range recs {
		rec := recs[i]
		b.indexLocked(&rec)
		b.seq = max(b.seq, rec.Seq)
	}
}

// Records is a copy of every record, in creation order (what a restart
// keeps).
func (b *Book) Records() []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Record, 0, len(b.payments))
	for _, rec := range b.sortedLocked() {
		r := *rec
		r.Payment = rec.snapshot()
		out = append(out, r)
	}
	return out
}

// Payments returns a snapshot of every payment, oldest first.
func (b *Book) Payments() []Payment {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	recs := b.sortedLocked()
	out := make([]Payment, 0, len(recs))
	for _, rec := range recs {
		b.ExpireLocked(rec, now)
		out = append(out, rec.snapshot())
	}
	return out
}

// Payment returns a snapshot of one payment.
func (b *Book) Payment(token string) (Payment, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[token]
	if !ok {
		return Payment{}, false
	}
	b.ExpireLocked(rec, b.clock())
	return rec.snapshot(), true
}

// View is what a page needs of a payment.
type View struct {
	Payment
	Card      string
	ExpiresAt time.Time
}

// View reads a payment for a page, applying expiry; referer, when not
// empty, is remembered as the page the payer came from.
func (b *Book) View(token, referer string) (View, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[token]
	if !ok {
		return View{}, false
	}
	b.ExpireLocked(rec, b.clock())
	if rec.StartReferer == "" {
		rec.StartReferer = referer
	}
	return View{Payment: rec.snapshot(), Card: rec.CardNumber, ExpiresAt: rec.CreatedAt.Add(b.ttlOf(rec))}, true
}

// ttlOf is how long rec's page waits for the payer.
func (b *Book) ttlOf(rec *Record) time.Duration {
	if d := b.rules[rec.Gateway].PageTTL; d > 0 && !b.fixed {
		return d
	}
	return b.ttl
}

// Callback is the request that takes the payer of a payment back to the
// merchant, in its protocol.
func (b *Book) Callback(token string) (CallbackRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[token]
	if !ok {
		return CallbackRequest{}, false
	}
	return b.callbackLocked(rec), true
}

func (b *Book) callbackLocked(rec *Record) CallbackRequest {
	if r := b.rules[rec.Gateway]; r.Callback != nil {
		return r.Callback(rec)
	}
	return CallbackRequest{URL: rec.CallbackURL, Method: "GET", Form: map[string]string{}}
}

// End moves an IN_BANK payment to PAID, or to FAILED for the reason why,
// and returns the request the payer's browser then makes to the merchant.
func (b *Book) End(token string, to State, why string) (CallbackRequest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[token]
	if !ok {
		return CallbackRequest{}, fmt.Errorf("finish payment %q: %w", token, ErrUnknownAuthority)
	}
	now := b.clock()
	b.ExpireLocked(rec, now)
	if rec.State != StateInBank {
		return CallbackRequest{}, fmt.Errorf("finish payment %q (state %s): %w", token, rec.State, ErrNotInBank)
	}
	switch to {
	case StatePaid:
		refID, err := b.NewRefIDLocked()
		if err != nil {
			return CallbackRequest{}, fmt.Errorf("pay %q: %w", token, err)
		}
		if paid := b.rules[rec.Gateway].Paid; paid != nil {
			if err := paid(b, rec, refID); err != nil {
				return CallbackRequest{}, fmt.Errorf("pay %q: %w", token, err)
			}
		}
		if rec.Receipt != "" {
			b.receipts[rec.Receipt] = rec
		}
		rec.State = StatePaid
		rec.PaidAt = now
		rec.RefID = refID
		rec.CardPAN = MaskPAN(rec.CardNumber)
		rec.CardHash = CardHash(rec.CardNumber)
		if rec.Referer == "" {
			rec.Referer = rec.StartReferer
		}
		b.log.Info("sandbank: payment paid", "gateway", rec.Gateway, "authority", token, "amount", rec.Amount, "ref_id", refID)
	default:
		rec.State = StateFailed
		rec.FailReason = why
		rec.FailedAt = now
		b.log.Info("sandbank: payment ended unpaid", "gateway", rec.Gateway, "authority", token, "amount", rec.Amount, "reason", why)
	}
	return b.callbackLocked(rec), nil
}

// ExpireLocked fails an IN_BANK payment that has outlived the TTL, and
// reverses a payment paid but not verified within its protocol's verify
// deadline (the bank returns the payer's money).
func (b *Book) ExpireLocked(rec *Record, now time.Time) {
	if rec.State == StatePaid {
		if d := b.rules[rec.Gateway].VerifyDeadline; d > 0 && now.Sub(rec.PaidAt) >= d {
			rec.State = StateReversed
			rec.ReversedAt = rec.PaidAt.Add(d)
			b.log.Info("sandbank: not verified in time, returned to the payer", "gateway", rec.Gateway, "authority", rec.Authority)
		}
		return
	}
	ttl := b.ttlOf(rec)
	if rec.State != StateInBank || now.Sub(rec.CreatedAt) < ttl {
		return
	}
	rec.State = StateFailed
	rec.FailReason = FailExpired
	rec.FailedAt = rec.CreatedAt.Add(ttl)
	b.log.Info("sandbank: authority expired", "authority", rec.Authority)
}

// EachLocked calls f for every payment, in no particular order.
func (b *Book) EachLocked(f func(*Record)) {
	for _, rec := range b.payments {
		f(rec)
	}
}

// sortedLocked lists the records in creation order.
func (b *Book) sortedLocked() []*Record {
	recs := make([]*Record, 0, len(b.payments))
	for _, rec := range b.payments {
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	return recs
}
