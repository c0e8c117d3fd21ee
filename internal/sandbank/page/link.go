package page

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/kifpool/kifpool/internal/sandbank/book"
)

// Link is the page flow of a gateway whose payer opens the bank's page by
// a GET of a link with the token in its path (Zarinpal's StartPay,
// Zibal's start):
//
//	GET  {Path}{token}            the page            operation Op
//	POST {Path}{token}/pay        Pay                 Op+".pay"
//	POST {Path}{token}/cancel     Cancel              Op+".cancel"
//	POST {Path}{token}/pay-close  Pay and close       Op+".pay_close"
type Link struct {
	Gateway string
	Path    string // "/pg/StartPay/"
	Op      string // the page's operation, its fault key: "startpay"
	// Assets is the pages' assets from the page, up to their name
	// ("../assets/bank": bank.css, bank.js); a button's are one level up.
	Assets string
}

// Routes registers the flow's page and buttons on mux, each as its
// operation (op: the bank's fault layer).
func (l Link) Routes(mux *http.ServeMux, op func(name string) http.Handler) {
	mux.Handle("GET "+l.Path+"{authority}", op(l.Op))
	mux.Handle("POST "+l.Path+"{authority}/pay", op(l.Op+".pay"))
	mux.Handle("POST "+l.Path+"{authority}/cancel", op(l.Op+".cancel"))
	mux.Handle("POST "+l.Path+"{authority}/pay-close", op(l.Op+".pay_close"))
}

// ServeLink serves operation op of the flow, and reports whether op is one.
func (p *Pages) ServeLink(w http.ResponseWriter, r *http.Request, l Link, op string) bool {
	switch op {
	case l.Op:
		p.start(w, r, l)
	case l.Op + ".pay":
		p.button(w, r, l, book.StatePaid, false)
	case l.Op + ".cancel":
		p.button(w, r, l, book.StateFailed, false)
	case l.Op + ".pay_close":
		p.button(w, r, l, book.StatePaid, true)
	default:
		return false
	}
	return true
}

// start serves the payer's page.
func (p *Pages) start(w http.ResponseWriter, r *http.Request, l Link) {
	authority := r.PathValue("authority")
	lang := Lang(r)
	meta := pageMeta{
		Lang:       lang,
		CSS:        l.Assets + ".css",
		JS:         l.Assets + ".js",
		SwitchHref: url.PathEscape(authority) + "?lang=" + string(lang.Other()),
	}
	referer := r.Referer()
	if referer == "" {
		referer = OriginOf(r)
	}
	v, ok := p.book.View(authority, referer)
	if !ok || v.Gateway != l.Gateway {
		meta.JS = ""
		p.notFound(w, r, meta)
		return
	}
	if v.State != book.StateInBank {
		cb, _ := p.book.Callback(authority)
		meta.JS = "" // a page restored from the cache is the same page
		p.render(w, r, finishedStatus(v, http.StatusOK), formOrigin(v.CallbackURL), statusPage(meta, v, cb.URL))
		return
	}
	action := func(name string) string {
		return url.PathEscape(authority) + "/" + name + "?lang=" + string(lang)
	}
	p.render(w, r, http.StatusOK, formOrigin(v.CallbackURL), startPayPage(p.startPay(meta, v, action)))
}

// button serves the page's buttons: to is PAID (Pay, Pay and close) or
// FAILED (Cancel); stay keeps the payer on the bank (Pay and close, the
// test of a payer who never comes back). Pay and Cancel answer 303 to the
// merchant's callback, so the payer's history keeps the page's GET.
func (p *Pages) button(w http.ResponseWriter, r *http.Request, l Link, to book.State, stay bool) {
	authority := r.PathValue("authority")
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: "../" + l.Assets + ".css"}
	if v, ok := p.book.View(authority, ""); !ok || v.Gateway != l.Gateway {
		p.notFound(w, r, meta)
		return
	}
	cb, err := p.book.End(authority, to, book.FailCancelled)
	if errors.Is(err, book.ErrUnknownAuthority) {
		p.notFound(w, r, meta)
		return
	}
	v, ok := p.book.View(authority, "")
	if !ok { // cannot happen: payments are never deleted
		p.notFound(w, r, meta)
		return
	}
	if err != nil {
		back, _ := p.book.Callback(authority)
		p.render(w, r, finishedStatus(v, http.StatusConflict), "", statusPage(meta, v, back.URL))
		return
	}
	if !stay {
		// The target is the callback_url the merchant registered server to
		// server at request time (the authority in the path only selects
		// it), as a real bank does; the bank inside the app accepts only
		// the app's own origin there (protocol.CheckCallback).
		http.Redirect(w, r, cb.URL, http.StatusSeeOther) // #nosec G710 -- merchant-registered callback, origin-bound inside the app (see above)
		return
	}
	meta.Title = T(lang, "closed.title")
	p.render(w, r, http.StatusOK, "", messagePage(messageView{
		pageMeta:  meta,
		Kind:      "closed",
		TestID:    "bank-closed",
		Title:     meta.Title,
		Body:      T(lang, "closed.body"),
		Note:      T(lang, "closed.note"),
		Authority: v.Authority,
		Amount:    amountRials(lang, v.Amount),
	}))
}
