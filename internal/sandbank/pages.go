package sandbank

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/static"
)

// bankCSS is the stylesheet of the bank's pages.
//
//go:embed bank.css
var bankCSS string

// bankJS counts the payment page's time down (the page works without it).
//
//go:embed bank.js
var bankJS string

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
	Fields      []formField
	NoAuto      bool // a page the payer came back to: no automatic post
}

// formField is one hidden field of a form.
type formField struct{ Name, Value string }

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

// pageLang is the page language: ?lang= (the bank's own switch), else the
// language chosen in the app (its cookie), else Persian.
func pageLang(r *http.Request) i18n.Lang {
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

// pageSnapshot is what a page needs of a payment, read under the lock.
type pageSnapshot struct {
	Payment
	card      string
	expiresAt time.Time
}

// snapshot reads a payment for a page, applying expiry; referer, when not
// empty, is remembered as the page the payer came from.
func (b *Bank) snapshot(authority, referer string) (pageSnapshot, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.payments[authority]
	if !ok {
		return pageSnapshot{}, false
	}
	b.expireLocked(rec, b.clock())
	if rec.startReferer == "" {
		rec.startReferer = referer
	}
	return pageSnapshot{Payment: rec.Payment, card: rec.cardNumber, expiresAt: rec.CreatedAt.Add(b.ttl)}, true
}

// pageStart serves the payer's page of a GET-redirect gateway: Zarinpal's
// GET /pg/StartPay/{authority}, Zibal's GET /start/{trackId}; assets is
// the relative path of the page's assets from there, up to their name ("../assets/bank": bank.css, bank.js).
func (b *Bank) pageStart(w http.ResponseWriter, r *http.Request, gateway, assets string) {
	authority := r.PathValue("authority")
	lang := pageLang(r)
	meta := pageMeta{
		Lang:       lang,
		CSS:        assets + ".css",
		SwitchHref: url.PathEscape(authority) + "?lang=" + string(lang.Other()),
	}
	referer := r.Referer()
	if referer == "" {
		referer = originOf(r)
	}
	p, ok := b.snapshot(authority, referer)
	if !ok || p.Gateway != gateway {
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}
	if p.State != StateInBank {
		status := http.StatusOK
		if p.FailReason == FailExpired {
			status = http.StatusNotFound
		}
		b.render(w, r, status, formOrigin(p.CallbackURL), statusPage(meta, p))
		return
	}

	action := func(name string) string {
		return url.PathEscape(authority) + "/" + name + "?lang=" + string(lang)
	}
	left := max(int64((p.expiresAt.Sub(b.clock())+time.Second-1)/time.Second), 0)
	meta.Title = i18n.T(lang, "bank.pay.title")
	meta.JS = assets + ".js"
	v := startPayView{
		pageMeta:       meta,
		Authority:      p.Authority,
		Description:    p.Description,
		OrderID:        shortOrderID(p.OrderID),
		FullOrderID:    p.OrderID,
		AmountRials:    i18n.T(lang, "bank.amount_rials", "amount", i18n.Group(lang, p.Amount)),
		AmountTomans:   i18n.T(lang, "bank.amount_tomans", "amount", i18n.TomansNumber(lang, p.Amount)),
		SecondsLeft:    left,
		TimeLeft:       i18n.Digits(lang, fmt.Sprintf("%d:%02d", left/60, left%60)),
		Card:           i18n.Digits(lang, groupCard(maskPAN(p.card))),
		ExpiryMonth:    i18n.Digits(lang, "12"),
		ExpiryYear:     i18n.Digits(lang, "09"),
		Captcha:        i18n.Digits(lang, captchaOf(p.Authority)),
		PayAction:      action("pay"),
		CancelAction:   action("cancel"),
		PayCloseAction: action("pay-close"),
	}
	b.render(w, r, http.StatusOK, formOrigin(p.CallbackURL), startPayPage(v))
}

// pageButton serves the three buttons of pageStart's page: to is PAID (Pay, Pay and close) or
// FAILED (Cancel); stay keeps the payer on the bank (Pay and close).
func (b *Bank) pageButton(w http.ResponseWriter, r *http.Request, to State, stay bool, gateway, assets string) {
	authority := r.PathValue("authority")
	lang := pageLang(r)
	meta := pageMeta{Lang: lang, CSS: assets + ".css"}
	if p, ok := b.snapshot(authority, ""); !ok || p.Gateway != gateway {
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}

	cb, err := b.finish(authority, to)
	if errors.Is(err, ErrUnknownAuthority) {
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}
	p, ok := b.snapshot(authority, "")
	if !ok { // cannot happen: payments are never deleted
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}
	if err != nil {
		status := http.StatusConflict
		if p.FailReason == FailExpired {
			status = http.StatusNotFound
		}
		b.render(w, r, status, "", statusPage(meta, p))
		return
	}
	if !stay {
		// The target is the callback_url the merchant registered server to
		// server at request time (the authority in the path only selects
		// it), as a real bank does; the bank inside the app accepts only
		// the app's own origin there (Options.CallbackOrigin).
		http.Redirect(w, r, cb.URL, http.StatusSeeOther) // #nosec G710 -- merchant-registered callback, origin-bound inside the app (see above)
		return
	}
	meta.Title = i18n.T(lang, "bank.closed.title")
	b.render(w, r, http.StatusOK, "", messagePage(messageView{
		pageMeta:  meta,
		Kind:      "closed",
		TestID:    "bank-closed",
		Title:     meta.Title,
		Body:      i18n.T(lang, "bank.closed.body"),
		Note:      i18n.T(lang, "bank.closed.note"),
		Authority: p.Authority,
		Amount:    i18n.T(lang, "bank.amount_rials", "amount", i18n.Group(lang, p.Amount)),
	}))
}

// notFoundPage is the page of an unknown authority, with a way back to
// the shop when it is known (back: see shopHref).
func notFoundPage(meta pageMeta, back string) templ.Component {
	meta.Title = i18n.T(meta.Lang, "bank.not_found.title")
	meta.SwitchHref = ""
	return messagePage(messageView{
		pageMeta: meta,
		Kind:     "not_found",
		TestID:   "bank-not-found",
		Title:    meta.Title,
		Body:     i18n.T(meta.Lang, "bank.not_found.body"),
		BackHref: back,
	})
}

// shopHref is the shop's home page for a payer whose payment the bank
// does not know: the app's origin for the bank inside it
// (Options.CallbackOrigin), else the page the payer came from when it is
// another site's; "" when neither is known.
func (b *Bank) shopHref(r *http.Request) string {
	if b.callbackOrigin != "" {
		return b.callbackOrigin + "/"
	}
	if ref := formOrigin(r.Referer()); ref != "" && !strings.EqualFold(ref, originOf(r)) {
		return ref + "/"
	}
	return ""
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

// statusPage is the page of a payment that is no longer IN_BANK, with a
// link back to the merchant carrying the matching Status.
func statusPage(meta pageMeta, p pageSnapshot) templ.Component {
	kind := "cancelled"
	switch {
	case p.State == StatePaid || p.State == StateVerified:
		kind = "paid"
	case p.State == StateReversed:
		kind = "reversed"
	case p.FailReason == FailExpired:
		kind = "expired"
	}
	meta.Title = i18n.T(meta.Lang, "bank."+kind+".title")
	return messagePage(messageView{
		pageMeta:  meta,
		Kind:      kind,
		TestID:    "bank-" + strings.ReplaceAll(kind, "_", "-"),
		Title:     meta.Title,
		Body:      i18n.T(meta.Lang, "bank."+kind+".body"),
		Authority: p.Authority,
		Amount:    i18n.T(meta.Lang, "bank.amount_rials", "amount", i18n.Group(meta.Lang, p.Amount)),
		BackHref:  callbackURL(p.CallbackURL, p.Authority, p.State),
	})
}

// render writes an HTML page with headers fit for a strict CSP: the
// bank's own, never the app's (see the form-action note). formTo is the
// merchant's origin when the page's forms lead there, "" otherwise.
func (b *Bank) render(w http.ResponseWriter, r *http.Request, status int, formTo string, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		b.log.Error("sandbank: render page", "path", r.URL.Path, "err", err)
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

// serveJS serves the bank's script.
func serveJS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = io.WriteString(w, bankJS)
}

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

// serveCSS serves the bank's stylesheet.
// bankIcon is the pages' icon: linked from every page, so that the
// browser does not ask for a /favicon.ico that is not there.
const bankIcon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d4ed8"/><rect x="5" y="10" width="22" height="13" rx="2" fill="#fff"/><rect x="5" y="13" width="22" height="3" fill="#1d4ed8"/></svg>`

func serveIcon(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = io.WriteString(w, bankIcon)
}

func serveCSS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = io.WriteString(w, bankCSS)
}

// formOrigin is scheme://host of a callback URL, "" if it has none.
func formOrigin(callback string) string {
	u, err := url.Parse(callback)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// originOf is the origin the request was sent to, as a fallback referer.
func originOf(r *http.Request) string {
	if r.Host == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// groupCard writes a 16-character card number in groups of four.
func groupCard(card string) string {
	if len(card) != 16 {
		return card
	}
	return card[0:4] + " " + card[4:8] + " " + card[8:12] + " " + card[12:16]
}

// captchaOf is a stable five-digit decorative "security code".
func captchaOf(authority string) string {
	h := uint32(2166136261)
	for i := 0; i < len(authority); i++ {
		h = (h ^ uint32(authority[i])) * 16777619
	}
	return strconv.FormatUint(uint64(10000+h%90000), 10)
}

// pageFormStart serves the payer's page of a gateway whose payer arrives
// by POST with the token in a form field (SEP's Token, Mellat's RefId).
// Its buttons post the token the same way to prefix+"pay" and
// prefix+"cancel" (relative to the page).
func (b *Bank) pageFormStart(w http.ResponseWriter, r *http.Request, gateway, token, field, prefix string) {
	lang := pageLang(r)
	meta := pageMeta{Lang: lang, CSS: "../pg/assets/bank.css"}
	referer := r.Referer()
	if referer == "" {
		referer = originOf(r)
	}
	p, ok := b.snapshot(token, referer)
	if !ok || p.Gateway != gateway {
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}
	if p.State != StateInBank {
		status := http.StatusOK
		if p.FailReason == FailExpired {
			status = http.StatusNotFound
		}
		meta.SwitchHref = ""
		b.render(w, r, status, formOrigin(p.CallbackURL), b.formStatusPage(meta, p))
		return
	}
	left := max(int64((p.expiresAt.Sub(b.clock())+time.Second-1)/time.Second), 0)
	meta.Title = i18n.T(lang, "bank.pay.title")
	meta.JS = "../pg/assets/bank.js"
	// The page again in the other language: its start page, the token
	// posted again (showing the page changes nothing at the bank).
	meta.SwitchForm = &switchForm{Action: strings.TrimSuffix(prefix, "/") + "?lang=" + string(lang.Other()), Field: field, Token: token}
	action := func(name string) string { return prefix + name + "?lang=" + string(lang) }
	v := startPayView{
		pageMeta:     meta,
		Authority:    p.Authority,
		Description:  p.Description,
		OrderID:      shortOrderID(p.OrderID),
		FullOrderID:  p.OrderID,
		AmountRials:  i18n.T(lang, "bank.amount_rials", "amount", i18n.Group(lang, p.Amount)),
		AmountTomans: i18n.T(lang, "bank.amount_tomans", "amount", i18n.TomansNumber(lang, p.Amount)),
		SecondsLeft:  left,
		TimeLeft:     i18n.Digits(lang, fmt.Sprintf("%d:%02d", left/60, left%60)),
		Card:         i18n.Digits(lang, groupCard(maskPAN(p.card))),
		ExpiryMonth:  i18n.Digits(lang, "12"),
		ExpiryYear:   i18n.Digits(lang, "09"),
		Captcha:      i18n.Digits(lang, captchaOf(p.Authority)),
		PayAction:    action("pay"),
		CancelAction: action("cancel"),
		// "Pay and close" is the Zarinpal page's test aid; here it pays
		// and posts back like Pay.
		PayCloseAction: action("pay"),
		TokenField:     field,
	}
	b.render(w, r, http.StatusOK, formOrigin(p.CallbackURL), startPayPage(v))
}

// formStatusPage is the page of a finished payment reached by POST: for
// one the payer paid, the way back posts the payment's callback again.
func (b *Bank) formStatusPage(meta pageMeta, p pageSnapshot) templ.Component {
	b.mu.Lock()
	rec, ok := b.payments[p.Authority]
	var cb CallbackRequest
	if ok {
		cb = callbackRequest(rec)
	}
	b.mu.Unlock()
	if ok && (p.State == StatePaid || p.State == StateVerified || p.FailReason == FailCancelled) {
		kind := "cancelled"
		if p.State != StateFailed {
			kind = "paid"
		}
		meta.Title = i18n.T(meta.Lang, "bank."+kind+".title")
		return postBackPage(postBackView{pageMeta: meta, Title: meta.Title, Body: i18n.T(meta.Lang, "bank."+kind+".body"),
			Action: cb.URL, Fields: cb.fields(), NoAuto: true})
	}
	return statusPage(meta, p)
}

// pageFormAction serves a POST page's Pay or Cancel: the token comes in
// the form field; the payer is posted back to the merchant by an
// auto-submitted form (bank.js), with a button for a browser without
// script.
func (b *Bank) pageFormAction(w http.ResponseWriter, r *http.Request, field string, to State) {
	lang := pageLang(r)
	meta := pageMeta{Lang: lang, CSS: "../../pg/assets/bank.css"}
	token := r.PostFormValue(field)
	cb, err := b.finish(token, to)
	if errors.Is(err, ErrUnknownAuthority) || token == "" {
		b.render(w, r, http.StatusNotFound, "", notFoundPage(meta, b.shopHref(r)))
		return
	}
	p, _ := b.snapshot(token, "")
	if err != nil {
		status := http.StatusConflict
		if p.FailReason == FailExpired {
			status = http.StatusNotFound
		}
		b.render(w, r, status, formOrigin(p.CallbackURL), b.formStatusPage(meta, p))
		return
	}
	meta.Title = i18n.T(lang, "bank.return.title")
	meta.JS = "../../pg/assets/bank.js"
	b.render(w, r, http.StatusOK, formOrigin(cb.URL), postBackPage(postBackView{pageMeta: meta, Title: meta.Title,
		Body: i18n.T(lang, "bank.return.body"), Action: cb.URL, Fields: cb.fields()}))
}

// fields are the callback's form fields in their order.
func (cb CallbackRequest) fields() []formField {
	out := make([]formField, 0, len(cb.order))
	for _, k := range cb.order {
		out = append(out, formField{Name: k, Value: cb.Form[k]})
	}
	return out
}
