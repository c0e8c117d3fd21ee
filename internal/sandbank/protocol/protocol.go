// Package protocol is the contract between the sandbox bank and the
// gateway protocols it imitates (internal/sandbank/zarinpal, zibal, sep,
// mellat): the Protocol interface each of them implements, the Env it is
// built with, and the wire helpers they share (JSON answers, lenient
// numbers, the merchant's callback check, a proxy's error page).
//
// A protocol owns its paths, its operations (the fault-injection keys), its
// answers and its rules in the book (internal/sandbank/book); the payer's
// pages are the bank's (internal/sandbank/page), which a protocol serves
// through one of the two page flows: a page opened by link (Zarinpal,
// Zibal) or by a posted form (SEP, Mellat). Adding a protocol is a new
// package here and one line in the bank's list (sandbank.protocols).
package protocol

import (
	"log/slog"
	"net/http"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/page"
)

// Protocol is one gateway protocol of the bank.
type Protocol interface {
	// Name is the protocol a gateway driver names in its sandbox settings
	// ("zarinpal-v4").
	Name() string
	// Gateway is Payment.Gateway of its payments ("zarinpal").
	Gateway() string
	// Rules are what the book must know of its payments.
	Rules() book.Rules
	// Ops are its operations, the fault-injection keys, in display order
	// (a page's buttons are "<startpay op>.<button>" and share its key).
	Ops() []string
	// CommitOps are the operations that commit a payment (a verify,
	// Mellat's settle): commit-then-hang applies to them.
	CommitOps() []string
	// Routes registers its paths on mux; op(name) is the handler of an
	// operation, through the fault layer. Paths that are no operation
	// (a WSDL) are registered as plain handlers.
	Routes(mux *http.ServeMux, op func(name string) http.Handler)
	// Serve performs an operation (called by the fault layer).
	Serve(op string, w http.ResponseWriter, r *http.Request)
	// Committed reports whether an operation's answer (status 200, body)
	// committed the payment: commit-then-hang withholds only those.
	Committed(op string, body []byte) bool
	// Refuse answers a call refused for too many attempts (429, with
	// Retry-After already set), in the protocol's own way.
	Refuse(op string, w http.ResponseWriter)
}

// Env is what a protocol is built with.
type Env struct {
	Book  *book.Book
	Pages *page.Pages
	Log   *slog.Logger
	// CallbackOrigin ("" for any) is the only origin a payment request may
	// name as its callback (lower case, no trailing slash).
	CallbackOrigin string
}
