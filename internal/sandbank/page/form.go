package page

import (
	"net/http"
	"net/url"

	"github.com/a-h/templ"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/sandbank/book"
)

// Form is the page flow of a gateway whose payer arrives by POST with the
// token in a form field (SEP's Token, Mellat's RefId). All its addresses
// are relative to the folder of the start page, Start:
//
//	POST {Start}              the merchant's form: 303 to Page
//	GET  Page                 the payment page (Page: "SendToken?token=")
//	POST {Start}/pay|cancel   its buttons, the token in Field: 303 to return
//	GET  {Start}/return       posts the payer back to the merchant
type Form struct {
	Gateway string
	Field   string // the form field of the token: "Token", "RefId"
	Start   string // the start page's name: "OnlinePG", "startpay.mellat"
	// Page is the payment page's GET address up to the token, relative to
	// the start page's folder ("SendToken?token=").
	Page string
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
	u := f.Page + url.QueryEscape(token)
	if lang != "" {
		u += "&lang=" + lang
	}
	return u
}

// Arrive serves the merchant's POST of the token: 303 to the payment
// page's GET (the language of ?lang= kept), so that the payer's history
// holds no POST to answer again. An unknown token is answered here.
func (p *Pages) Arrive(w http.ResponseWriter, r *http.Request, f Form) {
	token := r.PostFormValue(f.Field)
	if v, ok := p.book.View(token, ""); !ok || token == "" || v.Gateway != f.Gateway {
		p.notFound(w, r, pageMeta{Lang: Lang(r), CSS: formAssets + ".css"})
		return
	}
	lang := ""
	if l, ok := i18n.Parse(r.URL.Query().Get("lang")); ok {
		lang = string(l)
	}
	seeOther(w, f.page(token, lang))
}

// Page serves the payment page of token at Page.
func (p *Pages) Page(w http.ResponseWriter, r *http.Request, f Form, token string) {
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: formAssets + ".css",
		// The page again in the other language: the token posted again to
		// the start page (showing the page changes nothing at the bank).
		SwitchForm: &switchForm{Action: f.Start + "?lang=" + string(lang.Other()), Field: f.Field, Token: token}}
	referer := r.Referer()
	if referer == "" {
		referer = originOf(r)
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
	meta.JS = formAssets + ".js"
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

// Action serves the page's Pay or Cancel (to: PAID or FAILED), the token
// in the form field: 303 to the return page. A payment no longer at the
// bank is answered here (409; 404 once expired).
func (p *Pages) Action(w http.ResponseWriter, r *http.Request, f Form, to book.State) {
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: buttonAssets + ".css"}
	token := r.PostFormValue(f.Field)
	v, ok := p.book.View(token, "")
	if !ok || token == "" || v.Gateway != f.Gateway {
		p.notFound(w, r, meta)
		return
	}
	_, err := p.book.End(token, to, book.FailCancelled)
	if err != nil {
		v, _ = p.book.View(token, "")
		meta.SwitchForm = &switchForm{Action: "../" + f.Start + "?lang=" + string(lang.Other()), Field: f.Field, Token: token}
		p.render(w, r, finishedStatus(v, http.StatusConflict), formOrigin(v.CallbackURL), p.formStatusPage(meta, v))
		return
	}
	seeOther(w, "return?"+url.Values{f.Field: {token}, "lang": {string(lang)}}.Encode())
}

// Return serves the page that posts the payer back to the merchant: one
// form, submitted by the bank's script (bank.js), with a button for a
// browser without script. Before it posts, the script replaces the page's
// history entry with the payment page, so that Back from the merchant
// shows the finished payment and posts nothing.
func (p *Pages) Return(w http.ResponseWriter, r *http.Request, f Form) {
	lang := Lang(r)
	meta := pageMeta{Lang: lang, CSS: buttonAssets + ".css"}
	token := r.URL.Query().Get(f.Field)
	v, ok := p.book.View(token, "")
	if !ok || v.Gateway != f.Gateway {
		p.notFound(w, r, meta)
		return
	}
	page := "../" + f.page(token, string(lang))
	if v.State == book.StateInBank {
		seeOther(w, page)
		return
	}
	cb, _ := p.book.Callback(token)
	if kind := finishedKind(v); kind != "paid" && kind != "cancelled" {
		seeOther(w, page)
		return
	}
	meta.Title = T(lang, "return.title")
	meta.JS = buttonAssets + ".js"
	p.render(w, r, http.StatusOK, formOrigin(cb.URL), postBackPage(postBackView{pageMeta: meta, Title: meta.Title,
		Body: T(lang, "return.body"), Action: cb.URL, Fields: cb.Fields(), Replace: page}))
}
