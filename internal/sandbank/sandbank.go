// Package sandbank is an offline, in-memory simulator of the Zarinpal v4
// payment gateway: the JSON API (request, verify, inquiry, unVerified), the
// payer's StartPay page with Pay / Cancel / "Pay and close" buttons, and a
// control API that lets tests and benchmarks act as the payer.
//
// The Bank is a plain net/http handler that serves everything relative to
// its own root, so it can be mounted under a prefix with http.StripPrefix
// (the app mounts it under /sandbank) or served at the root standalone.
//
// # Routes
//
//	POST /pg/v4/payment/request.json     Zarinpal request
//	POST /pg/v4/payment/verify.json      Zarinpal verify
//	POST /pg/v4/payment/inquiry.json     Zarinpal inquiry
//	POST /pg/v4/payment/unVerified.json  Zarinpal unVerified
//	GET  /pg/StartPay/{authority}        payer's bank page (HTML)
//	POST /pg/StartPay/{authority}/pay        Pay button
//	POST /pg/StartPay/{authority}/cancel     Cancel button
//	POST /pg/StartPay/{authority}/pay-close  "Pay and close the window" button
//	GET  /pg/assets/bank.css             the page's stylesheet
//	GET  /pg/assets/bank.js              the page's countdown
//	GET  /pg/assets/favicon.svg          the pages' icon (no 404 in the payer's console)
//	GET  /_sandbank/payments             control: every payment (JSON)
//	POST /_sandbank/payments/{authority}/pay     control: pay
//	POST /_sandbank/payments/{authority}/cancel  control: cancel
//	POST /_sandbank/payments/{authority}/expire  control: the page's time runs out now
//	GET|POST|DELETE /_sandbank/faults    control: fault injection (faults.go)
//	GET|DELETE /_sandbank/stats          control: per-operation call counts
//	POST /_sandbank/{gateway}/payments/{token}/pay|cancel  control: pay or cancel a payment
//	                                     of that gateway; answers the browser's next request
//	                                     {"redirect", "method", "form"}
//
// SEP's token flow (sep.go), Mellat's SOAP service (mellat.go) and
// Zibal's IPG v1 (zibal.go: /v1/request, /v1/verify, /v1/inquiry,
// /start/{trackId}) are served at those gateways' own paths beside
// Zarinpal's.
//
// The gateway routes (not the control API, not the stylesheet) pass through
// a fault-injection layer that can make the bank slow, flaky or down: see
// Faults.
//
// # HTTP statuses of the Zarinpal API
//
// Zarinpal's HTTP status on errors is not documented (clients must decide on
// data.code / errors.code, never on the status), so the simulator picks:
//
//   - 200 with the data envelope for success (100, 101);
//   - 400 with the errors envelope when the call itself is refused: -9
//     (malformed JSON, validation), -11 (terminal not active), -41 (amount
//     above the maximum);
//   - 200 with the errors envelope for answers about a payment: -50, -51,
//     -53, -54;
//   - 405 (errors envelope, code -9) for a method other than POST, 404 for an
//     unknown path.
//
// This mix makes a client handle both an errors body on 200 and on 4xx.
package sandbank

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State is the bank-side state of a payment, named as Zarinpal's inquiry
// reports it.
type State string

// Payment states. A payment starts IN_BANK; the payer moves it to PAID or
// FAILED (cancel, or expiry after Options.AuthorityTTL); the first verify
// moves PAID to VERIFIED. REVERSED is reserved for a later reverse API.
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

// Errors of Pay and Cancel; test them with errors.Is.
var (
	// ErrUnknownAuthority: no payment has this authority.
	ErrUnknownAuthority = errors.New("sandbank: unknown authority")
	// ErrNotInBank: the payment is no longer waiting for the payer (paid,
	// verified, cancelled or expired).
	ErrNotInBank = errors.New("sandbank: payment is not IN_BANK")
)

// DefaultAuthorityTTL is how long an authority may wait for the payer.
const DefaultAuthorityTTL = 15 * time.Minute

// Options configures a Bank. The zero value is usable.
type Options struct {
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
	// Rand is the source of authorities, reference ids and fake cards.
	// Default: crypto/rand, unless Seed is set.
	Rand io.Reader
	// Seed, when non-zero and Rand is nil, makes the bank deterministic (a
	// ChaCha8 stream seeded from it): same seed, same sequence of calls, same
	// authorities and reference ids.
	Seed uint64
	// AuthorityTTL is how long a payment may stay IN_BANK before it becomes
	// FAILED (expired); default DefaultAuthorityTTL.
	AuthorityTTL time.Duration
	// Logger receives one line per state change; default: discard.
	Logger *slog.Logger
	// Faults, when set, is the initial fault-injection setting (see
	// (*Bank).SetFaults). New panics if it is invalid; check it first with
	// (Faults).Validate when it comes from user input.
	Faults *Faults
	// NoControlAPI leaves out the /_sandbank control API (pay, cancel,
	// list, faults, stats) from Handler: the bank inside a running app
	// must not let anyone mark payments paid or list them over HTTP. The
	// Go methods (Pay, Cancel, Payments, SetFaults...) stay available.
	NoControlAPI bool
	// CallbackOrigin, when set (scheme://host[:port]), is the only origin
	// a payment request may name as its callback_url, as a real terminal
	// is bound to its merchant's registered site. The bank inside a
	// running app sets it to the app's own origin: otherwise anyone could
	// register a payment whose "pay" button on the app's origin sends
	// the payer to a site of their choosing (an open redirect).
	CallbackOrigin string
	// StateFile, when set, is where the bank keeps its payments across
	// restarts (see Open; New leaves it out).
	StateFile string
}

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

	// Gateway is the protocol's gateway: "zarinpal", "sep", "mellat".
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
}

// record is a payment plus what only the bank knows.
type record struct {
	Payment
	seq          uint64 // creation order
	reqAmount    int64  // amount as requested, in Currency units
	cardNumber   string // the fake card that pays; never shown in full
	startReferer string
	traceNo      string // SEP's TraceNo, set when paid
	user, pass   string // Mellat's credentials, as the pay request gave them
}

// Bank is the simulated gateway. It is safe for concurrent use.
type Bank struct {
	clock  func() time.Time
	ttl    time.Duration
	log    *slog.Logger
	tehran *time.Location

	mu       sync.Mutex
	rand     io.Reader // guarded by mu: readers need not be concurrency-safe
	payments map[string]*record
	refIDs   map[int64]struct{}
	receipts map[string]*record // SEP RefNum / Mellat SaleReferenceId → payment
	orders   map[string]*record // Mellat terminal + orderId → payment
	seq      uint64

	faults faultLayer // fault injection and call counts; has its own lock

	noControl      bool
	callbackOrigin string // lower case; "" accepts any http(s) callback
	handler        http.Handler

	// stateFile ("": none) keeps the payments across restarts (Open);
	// saved is what it holds, written under saveMu.
	stateFile string
	saveMu    sync.Mutex
	saved     []byte
}

// New returns an empty bank.
func New(opts Options) *Bank {
	b := &Bank{
		clock:          opts.Clock,
		ttl:            opts.AuthorityTTL,
		log:            opts.Logger,
		rand:           opts.Rand,
		noControl:      opts.NoControlAPI,
		callbackOrigin: strings.ToLower(strings.TrimSuffix(opts.CallbackOrigin, "/")),
		payments:       make(map[string]*record),
		refIDs:         make(map[int64]struct{}),
		receipts:       make(map[string]*record),
		orders:         make(map[string]*record),
	}
	if b.clock == nil {
		b.clock = time.Now
	}
	if b.ttl <= 0 {
		b.ttl = DefaultAuthorityTTL
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
	b.faults.init(opts.Seed)
	if opts.Faults != nil {
		if err := b.SetFaults(*opts.Faults); err != nil {
			panic(fmt.Sprintf("sandbank.New: Options.Faults: %v", err))
		}
	}
	b.handler = b.persisting(b.routes())
	return b
}

// Handler serves the bank relative to its own root.
func (b *Bank) Handler() http.Handler { return b.handler }

// Payments returns a snapshot of every payment, oldest first.
func (b *Bank) Payments() []Payment {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	recs := b.sortedLocked()
	out := make([]Payment, 0, len(recs))
	for _, rec := range recs {
		b.expireLocked(rec, now)
		out = append(out, rec.Payment)
	}
	return out
}

// Payment returns a snapshot of one payment.
func (b *Bank) Payment(authority string) (Payment, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[authority]
	if !ok {
		return Payment{}, false
	}
	b.expireLocked(rec, b.clock())
	return rec.Payment, true
}

// Pay acts as the payer pressing "Pay": the payment becomes PAID. It
// returns the callback URL the payer is sent back to (with Status=OK; for
// the POST-callback gateways the URL only: see Finish).
func (b *Bank) Pay(authority string) (redirect string, err error) {
	cb, err := b.Finish(authority, true)
	return cb.URL, err
}

// Cancel acts as the payer pressing "Cancel": the payment becomes FAILED.
// It returns the callback URL the payer is sent back to (with Status=NOK).
func (b *Bank) Cancel(authority string) (redirect string, err error) {
	cb, err := b.Finish(authority, false)
	return cb.URL, err
}

// CallbackRequest is the request the payer's browser makes to the
// merchant after the bank's page: a GET of URL (Zarinpal: the fields are
// in its query) or a POST of Form to URL (SEP, Mellat).
type CallbackRequest struct {
	URL    string            `json:"redirect"`
	Method string            `json:"method"`
	Form   map[string]string `json:"form"`
	// order is Form's field order (the page posts them in this order).
	order []string
}

// Finish acts as the payer pressing Pay (paid) or Cancel on the bank's
// page of any protocol, and returns the request the browser then makes to
// the merchant's callback.
func (b *Bank) Finish(authority string, paid bool) (CallbackRequest, error) {
	to := StateFailed
	if paid {
		to = StatePaid
	}
	return b.finish(authority, to)
}

// Expire acts as the payer's page running out of time now, as it does
// Options.AuthorityTTL after the request: an IN_BANK payment becomes
// FAILED with FailReason "expired". As Zarinpal does, the bank then
// answers as for a cancel: the page sends the payer back with Status=NOK
// (the returned callback URL), verify answers -51 and inquiry FAILED; only
// the bank's own record (Payment.FailReason) and its page say "expired".
func (b *Bank) Expire(authority string) (redirect string, err error) {
	cb, err := b.end(authority, StateFailed, FailExpired)
	b.saveLogged()
	return cb.URL, err
}

// finish moves an IN_BANK payment to PAID or FAILED (cancelled).
func (b *Bank) finish(authority string, to State) (CallbackRequest, error) {
	cb, err := b.end(authority, to, FailCancelled)
	b.saveLogged()
	return cb, err
}

// end moves an IN_BANK payment to PAID, or to FAILED for the reason why,
// and returns the request the payer's browser then makes to the merchant.
func (b *Bank) end(authority string, to State, why string) (CallbackRequest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[authority]
	if !ok {
		return CallbackRequest{}, fmt.Errorf("finish payment %q: %w", authority, ErrUnknownAuthority)
	}
	now := b.clock()
	b.expireLocked(rec, now)
	if rec.State != StateInBank {
		return CallbackRequest{}, fmt.Errorf("finish payment %q (state %s): %w", authority, rec.State, ErrNotInBank)
	}
	switch to {
	case StatePaid:
		refID, err := b.newRefIDLocked()
		if err != nil {
			return CallbackRequest{}, fmt.Errorf("pay %q: %w", authority, err)
		}
		switch rec.Gateway {
		case gatewaySEP:
			refNum, err := b.newRefNumLocked()
			if err != nil {
				return CallbackRequest{}, fmt.Errorf("pay %q: %w", authority, err)
			}
			rec.Receipt = refNum
			rec.traceNo = strconv.FormatInt(100000+refID%900000, 10)
		case gatewayMellat:
			rec.Receipt = strconv.FormatInt(refID, 10)
		}
		if rec.Receipt != "" {
			b.receipts[rec.Receipt] = rec
		}
		rec.State = StatePaid
		rec.PaidAt = now
		rec.RefID = refID
		rec.CardPAN = maskPAN(rec.cardNumber)
		rec.CardHash = cardHash(rec.cardNumber)
		if rec.Referer == "" {
			rec.Referer = rec.startReferer
		}
		b.log.Info("sandbank: payment paid", "gateway", rec.Gateway, "authority", authority, "amount", rec.Amount, "ref_id", refID)
	default:
		rec.State = StateFailed
		rec.FailReason = why
		rec.FailedAt = now
		b.log.Info("sandbank: payment ended unpaid", "gateway", rec.Gateway, "authority", authority, "amount", rec.Amount, "reason", why)
	}
	return callbackRequest(rec), nil
}

// callbackRequest is the browser's request to the merchant after the
// bank's page, in the payment's protocol.
func callbackRequest(rec *record) CallbackRequest {
	switch rec.Gateway {
	case gatewaySEP:
		return sepCallback(rec)
	case gatewayMellat:
		return mellatCallback(rec)
	case gatewayZibal:
		return zibalCallback(rec)
	}
	return CallbackRequest{URL: callbackURL(rec.CallbackURL, rec.Authority, rec.State), Method: http.MethodGet, Form: map[string]string{}}
}

// postCallback is a POST callback with fields in order.
func postCallback(url string, fields ...string) CallbackRequest {
	cb := CallbackRequest{URL: url, Method: http.MethodPost, Form: map[string]string{}}
	for i := 0; i+1 < len(fields); i += 2 {
		cb.Form[fields[i]] = fields[i+1]
		cb.order = append(cb.order, fields[i])
	}
	return cb
}

// expireLocked fails an IN_BANK payment whose authority has outlived the
// TTL, and reverses a SEP or Mellat payment paid but not verified within
// the gateway's verify deadline (the bank returns the payer's money).
func (b *Bank) expireLocked(rec *record, now time.Time) {
	if rec.State == StatePaid {
		if d := verifyDeadline(rec.Gateway); d > 0 && now.Sub(rec.PaidAt) >= d {
			rec.State = StateReversed
			rec.ReversedAt = rec.PaidAt.Add(d)
			b.log.Info("sandbank: not verified in time, returned to the payer", "gateway", rec.Gateway, "authority", rec.Authority)
		}
		return
	}
	if rec.State != StateInBank || now.Sub(rec.CreatedAt) < b.ttl {
		return
	}
	rec.State = StateFailed
	rec.FailReason = FailExpired
	rec.FailedAt = rec.CreatedAt.Add(b.ttl)
	b.log.Info("sandbank: authority expired", "authority", rec.Authority)
}

// sortedLocked lists the records in creation order.
func (b *Bank) sortedLocked() []*record {
	recs := make([]*record, 0, len(b.payments))
	for _, rec := range b.payments {
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].seq < recs[j].seq })
	return recs
}

// callbackURL is where the payer returns: the merchant's callback with
// Authority and Status appended to its query (before any fragment).
func callbackURL(callback, authority string, s State) string {
	status := "NOK"
	if s == StatePaid || s == StateVerified {
		status = "OK"
	}
	base, frag, hasFrag := strings.Cut(callback, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	u := base + sep + "Authority=" + authority + "&Status=" + status
	if hasFrag {
		u += "#" + frag
	}
	return u
}
