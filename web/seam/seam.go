// Package seam is what the web app (package web) shares with its features
// (web/account, web/wallet, web/pay, web/admin, web/api): the App value
// that web builds from its middleware's state (the page model of a
// request, rendering, the signed-in user, the session cookie, the client's
// address, the rate-limit pages) and hands to each feature when it
// registers it, the Feature interface each feature's Deps implement, and
// the few request helpers every feature uses alike.
//
// Why a package of its own: a feature never imports web (web imports every
// feature, to register them in its order), and the features do not import
// each other for these helpers, so the seam they share sits below them
// all. It holds no state: App is a value of functions over web's state.
package seam

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/views"
)

// Feature is a part of the web app by audience: it adds its routes to r,
// with app for what the web app shares with it. Web registers the features
// in its order (web.New); a feature's Deps are built by internal/server.
type Feature interface {
	Register(r fiber.Router, app App)
}

// ErrorAnswerer is a feature that answers its own paths' errors in its
// own format (the API: problem+json), even those raised before its
// handlers ran; the web app's error handler asks it for every path under
// the feature.
type ErrorAnswerer interface {
	AnswerError(c *fiber.Ctx, status int) error
}

// App is what the web app shares with its features.
type App struct {
	// Page is what every page needs for this request (language, CSRF
	// token, the signed-in user), with its title's message key.
	Page func(c *fiber.Ctx, titleKey string) views.Page
	// Render writes a component as an HTML page with the given status.
	Render func(c *fiber.Ctx, status int, page templ.Component) error
	// Message renders the one-sentence message page (its title, its
	// sentence and one link on).
	Message func(c *fiber.Ctx, status int, titleKey, msgKey, linkURL, linkKey string) error
	// User and Session are the signed-in user and their session (nil
	// when signed out).
	User    func(c *fiber.Ctx) *auth.User
	Session func(c *fiber.Ctx) *auth.Session
	// Lang is the request's page language.
	Lang func(c *fiber.Ctx) i18n.Lang
	// RequireUser sends someone who is not signed in to sign in, and
	// refuses every state-changing request (not GET or HEAD) of an admin
	// whose session has not passed the second factor: it is sent to the
	// second-factor page (303), before any handler runs.
	RequireUser fiber.Handler
	// RequireUserBeforeSecondFactor is RequireUser that lets an admin
	// short of the second factor act: only for the second-factor page and
	// the acts that take away and add nothing (SECURITY.md: revoking
	// one's own API token, disabling or deleting one's own webhook
	// endpoint, deleting one's own return origin).
	RequireUserBeforeSecondFactor fiber.Handler
	// FormValue is a field of the request's form body, never of its query
	// string.
	FormValue func(c *fiber.Ctx, name string) string
	// SafeNext reports whether next is a path on this site to go on to.
	SafeNext func(next string) bool
	// GatewayName names a gateway in the request's language, as payers
	// see it.
	GatewayName func(c *fiber.Ctx, name string) string
	// GatewayNameIn is GatewayName in the language l: for work that
	// outlives the request's context (a CSV streamed after the handler
	// has returned).
	GatewayNameIn func(l i18n.Lang, name string) string
	// SessionToken is the browser's session cookie ("" when none).
	SessionToken func(c *fiber.Ctx) string
	// PassSession gives the browser a session that has just been made or
	// passed the second factor: its cookie, and a CSRF token bound to it.
	PassSession func(c *fiber.Ctx, token string, expires time.Time)
	// SignedOut clears the session cookie and gives the browser a new CSRF
	// cookie bound to no session; ClearSession clears the cookie only.
	SignedOut    func(c *fiber.Ctx)
	ClearSession func(c *fiber.Ctx)
	// ClientIP is the address rate limits key on (behind trusted proxies,
	// the client's, not the proxy's).
	ClientIP func(c *fiber.Ctx) string
	// Limit allows perMinute requests a minute per client address (0, or
	// rate limits off: no limit); above it, page answers with the seconds
	// to wait (Retry-After is set).
	Limit func(perMinute int, page func(c *fiber.Ctx, secs int64) error) fiber.Handler
	// PendingCheckout is the checkout the payer left to top up its
	// difference (a charge's public id, checked; "" when none), and
	// SetPendingCheckout remembers one ("": forgets it) in a short-lived
	// cookie, so that the credited top-up's page leads back to it.
	PendingCheckout    func(c *fiber.Ctx) string
	SetPendingCheckout func(c *fiber.Ctx, publicID string)
	// CheckoutDone is the checkout this browser has just paid or canceled
	// (a charge's public id, checked; "" when none), and SetCheckoutDone
	// remembers one ("": forgets it) for two minutes: the outcome's page
	// goes on to the merchant by itself once, in the browser that acted,
	// never for a link opened later or elsewhere.
	CheckoutDone    func(c *fiber.Ctx) string
	SetCheckoutDone func(c *fiber.Ctx, publicID string)
	// Log is the web app's logger and Now its clock (the instance's,
	// synced to the database's).
	Log *slog.Logger
	Now func() time.Time
}

// NotFound answers what no route takes: the app's 404 page.
func NotFound(*fiber.Ctx) error { return fiber.ErrNotFound }

// IDParam is the route's positive numeric :id (404 otherwise).
func IDParam(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fiber.ErrNotFound
	}
	return id, nil
}

// WithTopUp puts a payment's public id in the request's context: every
// line logged with it names the payment.
func WithTopUp(c *fiber.Ctx, publicID string) {
	c.SetUserContext(logging.WithTopUp(c.UserContext(), publicID))
}

// RetryAfter sets Retry-After for a wait and returns it in whole seconds
// (at least one).
func RetryAfter(c *fiber.Ctx, d time.Duration) int64 {
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
	return secs
}

// CSVExport is a download read a keyset page at a time: First is the
// first page (read by the handler before the answer starts, so that a
// failure is still an error page, not a cut file) and Next the cursor
// after it (0: the last); Page reads the page after a cursor; Row writes
// one item as its cells.
type CSVExport[T any] struct {
	Filename string
	Header   []string
	First    []T
	Next     int64
	Page     func(after int64) ([]T, int64, error)
	Row      func(T) []string
	MaxRows  int
	// Cut is the last row of a file cut at MaxRows while more rows
	// remain, given the last row written: it says so, and how to export
	// the rest (a file that ends without it holds every row).
	Cut func(last T) []string
}

// StreamCSV answers with e as a CSV file, UTF-8 with a byte order mark
// (spreadsheets then read Persian right), not cached: the header and the
// first page, then each page sent before the next is read, so that
// neither the whole file nor the whole list is held in memory, up to
// e.MaxRows rows, then e.Cut's row when more remain. The stream runs
// after the handler has returned (see
// Stream): it uses only e and the request's context, not Fiber's Ctx.
func StreamCSV[T any](c *fiber.Ctx, log *slog.Logger, e CSVExport[T]) error {
	SetDownload(c, "text/csv; charset=utf-8", e.Filename)
	Stream(c, log, "csv export", func(bw *bufio.Writer) error {
		_, _ = bw.WriteString("\uFEFF")
		w := csv.NewWriter(bw)
		_ = w.Write(e.Header)
		items, next, n := e.First, e.Next, 0
		var last T
		for {
			cut := false
			for _, it := range items {
				if n >= e.MaxRows {
					cut = true
					break
				}
				_ = w.Write(e.Row(it))
				last, n = it, n+1
			}
			cut = cut || (n >= e.MaxRows && next != 0)
			if cut && e.Cut != nil {
				_ = w.Write(e.Cut(last))
			}
			w.Flush()
			err := w.Error()
			if err == nil {
				err = bw.Flush() // to the client: nothing piles up here
			}
			if err == nil && !cut && next != 0 {
				items, next, err = e.Page(next)
			} else if err == nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("after %d rows: %w", n, err)
			}
		}
	})
	return nil
}

// CSVCell keeps a spreadsheet from reading a cell of someone's text as a
// formula (a leading =, +, -, @, tab or carriage return): it is written
// after a quote.
func CSVCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// SetDownload sets the headers of a file to save, never cached.
func SetDownload(c *fiber.Ctx, contentType, filename string) {
	c.Set(fiber.HeaderContentType, contentType)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+filename+`"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
}

// Stream answers with the body write produces, sent as it is written
// (chunked), after the handler has returned: write must not use Fiber's
// Ctx (it is reused by then), only what it was given and the request's
// context (a value, never cancelled when the handler returns).
//
// The headers are gone by the time write fails, so a failure (an error
// it returns, or a panic, which would otherwise end the whole process:
// the stream runs on a goroutine of its own, outside Fiber's recover) is
// logged and the connection closed before the body's end is sent: the
// client sees an answer cut short, an error, never a shorter file that
// looks whole.
func Stream(c *fiber.Ctx, log *slog.Logger, what string, write func(w *bufio.Writer) error) {
	ctx := c.UserContext()
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		failed := true
		defer func() {
			if p := recover(); p != nil {
				log.ErrorContext(ctx, what+" panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			if failed {
				_ = conn.Close()
			}
		}()
		if err := write(w); err != nil {
			log.WarnContext(ctx, what+" stopped", "err", err)
			return
		}
		failed = false
	})
}
