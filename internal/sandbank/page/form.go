package page

import (
	"net/http"
	"net/url"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/sandbank/book"
)

// Form is the page flow of a gateway whose payer arrives by POST with the
// token in a form field (SEP's Token, Mellat's RefId):
//
//	POST {Dir}{Start}            the merchant's form: the payment page  operation Op
//	GET  {Dir}{Page}?{Key}=      the payment page (its history entry)   Op
//	POST {Dir}{Start}/pay        Pay, the token in Field                Op+".pay"
//	POST {Dir}{Start}/cancel     Cancel, the same                       Op+".cancel"
//
// Pay and Cancel answer the page that posts the payer back to the
// merchant. Every page answered to a POST names the payment page's GET
// address, which the bank's script makes its history entry.
//
// Every address a page writes is relative to the folder Dir.
type Form struct {
	Gateway string
	Field   string // the form field of the token: "Token", "RefId"
	Dir     string // "/OnlinePG/"
	Start   string // the start page's name: "OnlinePG", "startpay.mellat"
	Page    string // the payment page's name: "SendToken"
	Key     string // the token's query parameter there: "token"
	Op      string // the pages' operation, their fault key: "sep-startpay"
}

// Routes registers the flow's pages on mux, each as its operation.
func (f Form) Routes(mux *http.ServeMux, op func(name string) http.Handler) {
	mux.Handle("POST "+f.Dir+f.Start, op(f.Op))
	mux.Handle("GET "+f.Dir+f.Page, op(f.Op))
	mux.Handle("POST "+f.Dir+f.Start+"/pay", op(f.Op+".pay"))
	mux.Handle("POST "+f.Dir+f.Start+"/cancel", op(f.Op+".cancel"))
}

// ServeForm serves operation op of the flow, and reports whether op is
// one.
func (p *Pages) ServeForm(w http.ResponseWriter, r *http.Request, f Form, op string) bool {
	switch op {
	case f.Op:
		if r.Method == http.MethodPost {
			p.arrive(w, r, f)
			return true
		}
		p.payPage(w, r, f, r.URL.Query().Get(f.Key), "")
	case f.Op + ".pay":
		p.action(w, r, f, book.StatePaid)
	case f.Op + ".cancel":
		p.action(w, r, f, book.StateFailed)
	default:
		return false
	}
	return true
}

// Assets of the form flow's pages: the start page is two levels below the
// bank's root (/OnlinePG/OnlinePG, /pgwchannel/startpay.mellat), its
// buttons and return page three.
const (
	formAssets   = "../pg/assets/bank"
	buttonAssets = "../../pg/assets/bank"
)

// page is the payment page's address from the start page's folder, in
// the language lang asks for ("" for the payer's own).
func (f Form) page(token, lang string) string {
	u := f.Page + "?" + f.Key + "=" + url.QueryEscape(token)
	if lang != "" {
		u += "&lang=" + lang
	}
	return u
}

// arrive serves the merchant's POST of the token: the payment page, whose
// history entry the bank's script makes the page's GET address (the
// language of ?lang= kept), so that reload and Back load that and never
// post the token again.
func (p *Pages) arrive(w http.ResponseWriter, r *http.Request, f Form) {
	lang := ""
	if l, ok := i18n.Parse(r.URL.Query().Get("lang")); ok {
		lang = string(l)
	}
	token := r.PostFormValue(f.Field)
	p.payPage(w, r, f, token, f.page(token, lang))
}

// payPage serves the payment page of token; address, for the page reached
// by POST, is its GET address ("" at that address).
func (p *Pages) payPage(w http.ResponseWriter, r *http.Request, f Form, token, address string) {
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: formAssets + ".css", JS: formAssets + ".js", Address: address,
		// The page again in the other language: the token posted again to
		// the start page (showing the page changes nothing at the bank).
		SwitchForm: &switchForm{Action: f.Start + "?lang=" + string(lang.Other()), Field: f.Field, Token: token}}
	referer := r.Referer()
	if referer == "" {
		referer = OriginOf(r)
	}
	v, ok := p.book.View(token, referer)
	if !ok || v.Gateway != f.Gateway {
		p.notFound(w, r, meta)
		return
	}
	if v.State != book.StateInBank {
		p.render(w, r, finishedStatus(v, http.StatusOK), formOrigin(v.CallbackURL), p.formStatusPage(meta, v))
		return
	}
	action := func(name string) string { return f.Start + "/" + name + "?lang=" + string(lang) }
	sv := p.startPay(meta, v, action)
	// "Pay and close" is the Zarinpal page's test aid; here it pays and
	// posts back like Pay.
	sv.PayCloseAction = action("pay")
	sv.TokenField = f.Field
	p.render(w, r, http.StatusOK, formOrigin(v.CallbackURL), startPayPage(sv))
}

// formStatusPage is the page of a finished payment reached by its form
// flow: for one the payer paid or cancelled, the way back posts the
// payment's callback again, by the payer's hand.
func (p *Pages) formStatusPage(meta pageMeta, v book.View) templ.Component {
	cb, ok := p.book.Callback(v.Authority)
	if kind := finishedKind(v); ok && (kind == "paid" || kind == "cancelled") {
		meta.Title = T(meta.Lang, kind+".title")
		return postBackPage(postBackView{pageMeta: meta, Title: meta.Title, Body: T(meta.Lang, kind+".body"),
			Action: cb.URL, Fields: cb.Fields(), NoAuto: true})
	}
	return statusPage(meta, v, "")
}

// action serves the page's Pay or Cancel (to: PAID or FAILED), the token
// in the form field: the page that posts the payer back to the merchant,
// one form submitted by the bank's script (bank.js), with a button for a
// browser without script. Before it posts, the script makes the page's
// history entry the payment page (data-address), so that Back from the
// merchant shows the finished payment and posts nothing. A payment no
// longer at the bank is answered 409 (404 once expired).
func (p *Pages) action(w http.ResponseWriter, r *http.Request, f Form, to book.State) {
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: buttonAssets + ".css"}
	token := r.PostFormValue(f.Field)
	v, ok := p.book.View(token, "")
	if !ok || token == "" || v.Gateway != f.Gateway {
		p.notFound(w, r, meta)
		return
	}
	cb, err := p.book.End(token, to, book.FailCancelled)
	if err != nil {
		v, _ = p.book.View(token, "")
		// No data-address here: the page's links are relative to the
		// button's address, and a reload of this answer posts the button
		// again, which is answered the same (nothing changes at the bank).
		meta.SwitchForm = &switchForm{Action: "../" + f.Start + "?lang=" + string(lang.Other()), Field: f.Field, Token: token}
		p.render(w, r, finishedStatus(v, http.StatusConflict), formOrigin(v.CallbackURL), p.formStatusPage(meta, v))
		return
	}
	meta.Title = T(lang, "return.title")
	meta.JS, meta.Address = buttonAssets+".js", "../"+f.page(token, string(lang))
	p.render(w, r, http.StatusOK, formOrigin(cb.URL), postBackPage(postBackView{pageMeta: meta, Title: meta.Title,
		Body: T(lang, "return.body"), Action: cb.URL, Fields: cb.Fields()}))
}
