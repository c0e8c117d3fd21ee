// Package page is the sandbox bank's pages for the payer: the payment page
// (what is paid, Pay, Cancel, the countdown, a test card), the pages of a
// finished, expired or unknown payment, and the page that posts the payer
// back to the merchant; their stylesheet, script, icon and fonts; and the
// bank's own message table (messages.go, Persian and English), apart from
// the app's catalogue.
//
// A protocol serves its pages through one of two flows, written once here:
//
//   - Link (Zarinpal, Zibal): the payer opens the page by a GET of a link
//     with the token in its path; Pay and Cancel post to the page's path and
//     answer 303 to the merchant's callback.
//   - Form (SEP, Mellat): the merchant's page posts the token in a form
//     field, and the payment page it answers makes its history entry the
//     page's own GET address (bank.js, from data-address); Pay and Cancel
//     answer the page that posts the callback fields to the merchant,
//     whose history entry becomes the payment page's GET address too. So
//     Back and reload load GET pages and never post again ("Confirm Form
//     Resubmission"); without script a reload posts again, and is
//     answered the same (the page, or 409 for a second Pay).
//
// Every page is served with Cache-Control: no-store (the bank's router)
// and reads the payment afresh: a finished payment's page never shows a
// live Pay button. A page the browser restores from its back-forward
// cache (pageshow, persisted) is loaded again by bank.js, so that Back
// after paying shows the payment as it is now, not a running countdown.
package page

import (
	"bytes"
	_ "embed"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/static"
)

// bankCSS is the stylesheet of the bank's pages.
//
//go:embed bank.css
var bankCSS string

// bankJS counts the payment page's time down, posts the payer back, and
// reloads a page restored from the back-forward cache (the pages work
// without it).
//
//go:embed bank.js
var bankJS string

// Pages serves the payer's pages of the book's payments.
type Pages struct {
	book           *book.Book
	log            *slog.Logger
	callbackOrigin string // the shop's origin for the bank inside the app; ""
}

// New returns the pages of b's payments; callbackOrigin is the app's
// origin for the bank inside it ("" standalone).
func New(b *book.Book, log *slog.Logger, callbackOrigin string) *Pages {
	return &Pages{book: b, log: log, callbackOrigin: callbackOrigin}
}

// Assets registers the pages' stylesheet, script, icon and fonts under
// prefix (the bank's "/pg/assets/", where every page links them).
func Assets(mux *http.ServeMux, prefix string) {
	mux.HandleFunc("GET "+prefix+"bank.css", serveText("text/css; charset=utf-8", bankCSS))
	mux.HandleFunc("GET "+prefix+"bank.js", serveText("text/javascript; charset=utf-8", bankJS))
	mux.HandleFunc("GET "+prefix+"favicon.svg", serveText("image/svg+xml", bankIcon))
	mux.HandleFunc("GET "+prefix+"vazirmatn.woff2", serveFont("vazirmatn.woff2"))
	mux.HandleFunc("GET "+prefix+"dejavu-sans-mono.woff2", serveFont("dejavu-sans-mono.woff2"))
}

// pageMeta is what the layout needs. Links are relative to the page's URL,
// so the bank works under any mount prefix.
type pageMeta struct {
	Lang       i18n.Lang
	Title      string
	CSS        string // stylesheet link
	JS         string // script link; "" for none
	SwitchHref string // link to the same page in the other language; "" for none
	// SwitchForm, for a page reached by POST (SEP, Mellat), posts its
	// token again to the same page in the other language; nil for none.
	SwitchForm *switchForm
	// Address, for a page reached by POST or a page that posts the payer
	// away, is the payment page's GET address: bank.js makes it the
	// page's history entry, so that reload and Back load it and never
	// post again; "" for none.
	Address string
}

// switchForm is the language switch of a page reached by POST.
type switchForm struct {
	Action, Field, Token string
}

// startPayView is the payer's page of an IN_BANK payment.
type startPayView struct {
	pageMeta
	Authority    string
	Description  string
	OrderID      string // as the payer reads it (shortOrderID)
	FullOrderID  string // as the merchant sent it
	AmountRials  string // formatted, with the unit
	AmountTomans string // formatted, with the unit
	SecondsLeft  int64  // until the payment expires
	TimeLeft     string // the same as m:ss in the page's digits
	Card         string // masked test card, grouped by four
	ExpiryMonth  string
	ExpiryYear   string
	Captcha      string

	PayAction      string
	CancelAction   string
	PayCloseAction string
	// TokenField names the hidden field carrying the token in each form
	// (SEP's Token, Mellat's RefId); "" when the token is in the URL.
	TokenField string
}

// postBackView is the page that posts the payer back to the merchant.
type postBackView struct {
	pageMeta
	Title, Body string
	Action      string
	Fields      []book.Field
	NoAuto      bool // a page the payer came back to: no automatic post
}

// messageView is a page about a finished, expired or unknown payment.
type messageView struct {
	pageMeta
	Kind      string // closed, paid, cancelled, reversed, expired, not_found
	TestID    string
	Title     string
	Body      string
	Note      string
	Authority string
	Amount    string
	BackHref  string // the merchant's callback with Authority and Status; "" for none
}

// appLangCookie is the cookie in which Kifpool keeps the language its user
// chose. The built-in bank is served on the app's host, and browsers send a
// host's cookies to every port, so the bank sees the choice.
const appLangCookie = "lang"

// Lang is the page language: ?lang= (the bank's own switch), else the
// language chosen in the app (its cookie), else Persian.
func Lang(r *http.Request) i18n.Lang {
	if l, ok := i18n.Parse(r.URL.Query().Get("lang")); ok {
		return l
	}
	if ck, err := r.Cookie(appLangCookie); err == nil {
		if l, ok := i18n.Parse(ck.Value); ok {
			return l
		}
	}
	return i18n.Default
}

// notFoundPage is the page of an unknown authority, with a way back to
// the shop when it is known (back: see shopHref).
func notFoundPage(meta pageMeta, back string) templ.Component {
	meta.Title = T(meta.Lang, "not_found.title")
	meta.SwitchHref = ""
	meta.SwitchForm = nil
	return messagePage(messageView{
		pageMeta: meta,
		Kind:     "not_found",
		TestID:   "bank-not-found",
		Title:    meta.Title,
		Body:     T(meta.Lang, "not_found.body"),
		BackHref: back,
	})
}

// shopHref is the shop's home page for a payer whose payment the bank
// does not know: the app's origin for the bank inside it, else the page
// the payer came from when it is another site's; "" when neither is known.
func (p *Pages) shopHref(r *http.Request) string {
	if p.callbackOrigin != "" {
		return p.callbackOrigin + "/"
	}
	if ref := formOrigin(r.Referer()); ref != "" && !strings.EqualFold(ref, OriginOf(r)) {
		return ref + "/"
	}
	return ""
}

// notFound renders the page of an unknown token.
func (p *Pages) notFound(w http.ResponseWriter, r *http.Request, meta pageMeta) {
	p.render(w, r, http.StatusNotFound, "", notFoundPage(meta, p.shopHref(r)))
}

// shortOrderID is a long order id as a payer reads it beside the shop's
// own receipt: its first 12 characters, upper case, in groups of four
// ("JIWF-NQZH-KKEU", as Kifpool's receipt writes a payment's reference).
// Short ids are shown as they are.
func shortOrderID(id string) string {
	if len(id) <= 12 {
		return id
	}
	id = strings.ToUpper(id[:12])
	return id[:4] + "-" + id[4:8] + "-" + id[8:12]
}

// finishedKind is how a payment that is no longer IN_BANK ended.
func finishedKind(p book.View) string {
	switch {
	case p.State == book.StatePaid || p.State == book.StateVerified:
		return "paid"
	case p.State == book.StateReversed:
		return "reversed"
	case p.FailReason == book.FailExpired:
		return "expired"
	}
	return "cancelled"
}

// statusPage is the page of a payment that is no longer IN_BANK, with a
// link back to the merchant (back: its callback's URL; "" for none).
func statusPage(meta pageMeta, p book.View, back string) templ.Component {
	kind := finishedKind(p)
	meta.Title = T(meta.Lang, kind+".title")
	return messagePage(messageView{
		pageMeta:  meta,
		Kind:      kind,
		TestID:    "bank-" + strings.ReplaceAll(kind, "_", "-"),
		Title:     meta.Title,
		Body:      T(meta.Lang, kind+".body"),
		Authority: p.Authority,
		Amount:    amountRials(meta.Lang, p.Amount),
		BackHref:  back,
	})
}

// finishedStatus is the HTTP status of a finished payment's page: 404
// once it expired, else ok.
func finishedStatus(p book.View, ok int) int {
	if p.FailReason == book.FailExpired {
		return http.StatusNotFound
	}
	return ok
}

// amountRials is an amount as the pages write it.
func amountRials(l i18n.Lang, rials int64) string {
	return T(l, "amount_rials", "amount", i18n.Group(l, rials))
}

// render writes an HTML page with headers fit for a strict CSP: the
// bank's own, never the app's (see the form-action note). formTo is the
// merchant's origin when the page's forms lead there, "" otherwise.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, formTo string, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		p.log.Error("sandbank: render page", "path", r.URL.Path, "err", err)
		http.Error(w, "sandbank: render page failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	if h.Get("Content-Security-Policy") == "" {
		// A page whose form leads the payer back to the merchant names no
		// form-action: browsers apply it to every redirect that follows the
		// form's post, and the merchant's callback may hand the payer over
		// to a page the bank never hears of (an API top-up's return_url at
		// a partner), as a real bank's page allows. The bank's other pages
		// post only to the bank.
		formAction := "form-action 'self'; "
		if formTo != "" {
			formAction = ""
		}
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; font-src 'self'; "+
			formAction+"base-uri 'none'; frame-ancestors 'none'")
	}
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// serveFont serves one of the pages' typefaces (the app's files).
func serveFont(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		http.ServeFileFS(w, r, static.FS, name)
	}
}

// serveText serves an embedded asset.
func serveText(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = io.WriteString(w, body)
	}
}

// bankIcon is the pages' icon: linked from every page, so that the
// browser does not ask for a /favicon.ico that is not there.
const bankIcon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d4ed8"/><rect x="5" y="10" width="22" height="13" rx="2" fill="#fff"/><rect x="5" y="13" width="22" height="3" fill="#1d4ed8"/></svg>`

// bidiRun is a stretch of text in one direction.
type bidiRun struct {
	Text string
	LTR  bool
}

// bidiRuns cuts text given by a merchant into Latin stretches (from a Latin
// letter or digit to the last one, with the spaces and punctuation between)
// and the rest, so that each Latin stretch can be isolated: in a Persian
// sentence, "(Kifpool wallet top-up)" otherwise comes out with its brackets
// turned around. Brackets that enclose a whole stretch are part of it.
func bidiRuns(s string) []bidiRun {
	latin := func(r rune) bool { return r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) }
	inner := func(r rune) bool { return r < 0x80 && !strings.ContainsRune("()[]{}<>", r) }
	rs := []rune(s)
	var out []bidiRun
	start := 0
	for i := 0; i < len(rs); {
		if !latin(rs[i]) {
			i++
			continue
		}
		end, j := i+1, i+1
		for j < len(rs) && inner(rs[j]) {
			if latin(rs[j]) {
				end = j + 1
			}
			j++
		}
		// Brackets around the whole stretch go with it: "(Kifpool ...)"
		// then reads and wraps as one piece in a Persian line.
		from := i
		if i > start && end < len(rs) && rs[i-1] == '(' && rs[end] == ')' {
			from, end = i-1, end+1
		}
		if from > start {
			out = append(out, bidiRun{Text: string(rs[start:from])})
		}
		out = append(out, bidiRun{Text: string(rs[from:end]), LTR: true})
		start, i = end, end
	}
	if start < len(rs) {
		out = append(out, bidiRun{Text: string(rs[start:])})
	}
	return out
}

// formOrigin is scheme://host of a callback URL, "" if it has none.
func formOrigin(callback string) string {
	u, err := url.Parse(callback)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// OriginOf is the origin a request was sent to (scheme://host), "" when
// it names no host: a fallback referer, and Mellat's WSDL address.
func OriginOf(r *http.Request) string {
	if r.Host == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
