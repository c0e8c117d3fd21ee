// Package sandbank is an offline, in-memory bank that imitates the gateway
// drivers' protocols, each at its gateway's own paths: Zarinpal v4
// (internal/sandbank/zarinpal), Zibal IPG v1 (zibal), SEP's token flow
// (sep) and Mellat's SOAP service (mellat), with the payer's pages
// (internal/sandbank/page), a control API that lets tests and benchmarks
// act as the payer, and fault injection.
//
// The bank is its protocols (protocols.go: the one list; a new protocol is
// a package behind protocol.Protocol and a line there), one book of
// payments (internal/sandbank/book) and what serves them: the router, the
// fault layer every protocol's operation passes through (faults.go), the
// control API (control.go) and the state file (persist.go).
//
// The Bank is a plain net/http handler that serves everything relative to
// its own root, so it can be mounted under a prefix with http.StripPrefix
// (the app mounts it under /sandbank) or served at the root standalone.
//
// # Routes
//
// The protocols' own paths (see their packages), and:
//
//	GET  /pg/assets/bank.css             the pages' stylesheet
//	GET  /pg/assets/bank.js              the pages' script
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
//	POST /_sandbank/payouts/{provider}/{id}/settle|fail|return  control: a payout
//	                                     (internal/sandbank/payouts; with NoControlAPI, on
//	                                     loopback only)
//
// The gateway routes (not the control API, not the assets) pass through
// a fault-injection layer that can make the bank slow, flaky or down: see
// Faults. Every answer carries Cache-Control: no-store.
package sandbank

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	bankpage "github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// State is the bank-side state of a payment (book.State).
type State = book.State

// Payment states (see book).
const (
	StateInBank   = book.StateInBank
	StatePaid     = book.StatePaid
	StateVerified = book.StateVerified
	StateFailed   = book.StateFailed
	StateReversed = book.StateReversed
)

// Reasons a payment is FAILED (Payment.FailReason).
const (
	FailCancelled = book.FailCancelled
	FailExpired   = book.FailExpired
)

// Errors of Pay and Cancel; test them with errors.Is.
var (
	ErrUnknownAuthority = book.ErrUnknownAuthority
	ErrNotInBank        = book.ErrNotInBank
)

// Payment is a snapshot of one payment as the bank holds it.
type Payment = book.Payment

// CallbackRequest is the request the payer's browser makes to the
// merchant after the bank's page: a GET of URL (Zarinpal, Zibal: the
// fields are in its query) or a POST of Form to URL (SEP, Mellat).
type CallbackRequest = book.CallbackRequest

// DefaultAuthorityTTL is how long an authority may wait for the payer,
// unless its protocol's page says otherwise (SEP's token: 20 minutes).
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
	// AuthorityTTL, when set, is how long a payment of any protocol may
	// stay IN_BANK before it becomes FAILED (expired); unset, each
	// protocol's own (DefaultAuthorityTTL; SEP 20 minutes).
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

// Bank is the simulated gateway. It is safe for concurrent use.
type Bank struct {
	book      *book.Book
	log       *slog.Logger
	protocols []protocol.Protocol

	faults faultLayer // fault injection and call counts; has its own lock

	noControl bool
	handler   http.Handler

	// payouts is the payout provider (Jibit's and Zibal's payout
	// protocols, internal/sandbank/payouts).
	payouts *payouts.Book

	// stateFile ("": none) keeps the payments across restarts (Open);
	// saved is what it holds, written under saveMu.
	stateFile string
	saveMu    sync.Mutex
	saved     []byte
}

// New returns an empty bank.
func New(opts Options) *Bank {
	ttl := opts.AuthorityTTL
	if ttl <= 0 {
		ttl = DefaultAuthorityTTL
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bk := book.New(book.Options{Clock: opts.Clock, Rand: opts.Rand, Seed: opts.Seed, TTL: ttl, FixedTTL: opts.AuthorityTTL > 0, Logger: log})
	origin := strings.ToLower(strings.TrimSuffix(opts.CallbackOrigin, "/"))
	env := protocol.Env{Book: bk, Pages: bankpage.New(bk, log, origin), Log: log, CallbackOrigin: origin}
	b := &Bank{
		book:      bk,
		log:       log,
		protocols: protocols(env),
		noControl: opts.NoControlAPI,
	}
	for _, p := range b.protocols {
		bk.Register(p.Gateway(), p.Rules())
	}
	b.payouts = payouts.NewBook(payouts.Options{Clock: opts.Clock, Logger: log, Seed: opts.Seed, OnChange: b.saveLogged})
	b.faults.init(opts.Seed, b.protocols)
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

// routes builds the bank's router: each protocol's paths, the pages'
// assets, the control API.
func (b *Bank) routes() http.Handler {
	mux := http.NewServeMux()
	for _, p := range b.protocols {
		p.Routes(mux, func(name string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.serveOp(p, name, w, r) })
		})
	}
	bankpage.Assets(mux, "/pg/assets/")
	// The payout provider's control API is served by the bank inside
	// serve too, to calls made on this machine only (a demo's or a
	// test's settle, fail and return); the gateways' control API is not.
	b.payouts.Routes(mux, true, b.noControl)
	if !b.noControl {
		mux.HandleFunc("POST /_sandbank/{gateway}/payments/{token}/pay", b.controlGatewayFinish(StatePaid))
		mux.HandleFunc("POST /_sandbank/{gateway}/payments/{token}/cancel", b.controlGatewayFinish(StateFailed))
		mux.HandleFunc("GET /_sandbank/payments", b.controlList)
		mux.HandleFunc("POST /_sandbank/payments/{authority}/pay", b.controlFinish(StatePaid))
		mux.HandleFunc("POST /_sandbank/payments/{authority}/cancel", b.controlFinish(StateFailed))
		mux.HandleFunc("POST /_sandbank/payments/{authority}/expire", b.controlEnd(b.Expire))
		b.faultRoutes(mux)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// Payouts is the bank's payout provider (its book, faults and control).
func (b *Bank) Payouts() *payouts.Book { return b.payouts }

// Payments returns a snapshot of every payment, oldest first.
func (b *Bank) Payments() []Payment { return b.book.Payments() }

// Payment returns a snapshot of one payment.
func (b *Bank) Payment(authority string) (Payment, bool) { return b.book.Payment(authority) }

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
// its protocol's time after the request (Options.AuthorityTTL when set): an IN_BANK payment becomes
// FAILED with FailReason "expired". As Zarinpal does, the bank then
// answers as for a cancel: the page sends the payer back with Status=NOK
// (the returned callback URL), verify answers -51 and inquiry FAILED; only
// the bank's own record (Payment.FailReason) and its page say "expired".
func (b *Bank) Expire(authority string) (redirect string, err error) {
	cb, err := b.book.End(authority, StateFailed, FailExpired)
	b.saveLogged()
	return cb.URL, err
}

// finish moves an IN_BANK payment to PAID or FAILED (cancelled).
func (b *Bank) finish(authority string, to State) (CallbackRequest, error) {
	cb, err := b.book.End(authority, to, FailCancelled)
	b.saveLogged()
	return cb, err
}
