package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web/api"
)

// Issue 31, item 6: a top-up's return link is no open redirect. The
// bank's first return of a payment hands the payer over to the partner's
// return_url (303); every later visit of the same link, by anyone and
// without a session, gets a page that names the destination and leaves
// it to a click. For a gateway that returns by POST (SEP) the bank's POST
// is the hand-over, and our own URL after it (its refresh) redirects
// nowhere either.
func TestReturnLinkIsNoOpenRedirect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{})
		c, uid := f.user(t, "handover@example.com", apitoken.ScopeTopUp)
		if _, err := f.app.Server.Webhooks.AddOrigin(context.Background(), uid, "https://shop.example"); err != nil {
			t.Fatal(err)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		doWith := func(method, u string, form url.Values, fetchMode string) (*http.Response, string) {
			t.Helper()
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req, err := http.NewRequest(method, u, body)
			if err != nil {
				t.Fatal(err)
			}
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if fetchMode != "" {
				req.Header.Set("Sec-Fetch-Mode", fetchMode)
			}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			return resp, string(b)
		}
		do := func(method, u string, form url.Values) (*http.Response, string) {
			t.Helper()
			return doWith(method, u, form, "")
		}
		toShop := func(what string, resp *http.Response, id string) {
			t.Helper()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Host != "shop.example" || loc.Query().Get("topup_id") != id {
				t.Fatalf("%s: %d to %q, want the hand-over to the shop", what, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		// staysHere: a page naming the destination, with a link to click,
		// and no redirect.
		staysHere := func(what string, resp *http.Response, body, id string) {
			t.Helper()
			doc := apptest.Parse(body)
			dest, cont := doc.TestID("return-destination"), doc.TestID("return-continue")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" || dest == nil || cont == nil {
				t.Fatalf("%s: %d to %q, want the page naming the destination:\n%s", what, resp.StatusCode, resp.Header.Get("Location"), body)
			}
			u, err := url.Parse(cont.Attr("href"))
			if err != nil || u.Host != "shop.example" || u.Query().Get("topup_id") != id || dest.Text() != cont.Attr("href") {
				t.Fatalf("%s: destination %q, link %q", what, dest.Text(), cont.Attr("href"))
			}
		}

		// Zarinpal: the bank's GET is the hand-over; the same link again,
		// and our own URL, stay here.
		a := c.post(routes.APITopUps, "zp", `{"amount_rials": 500000, "gateway": "zarinpal", "return_url": "https://shop.example/done"}`)
		tu := decode[api.TopUp](t, a)
		if a.Status != http.StatusCreated || tu.PaymentURL == nil {
			t.Fatalf("create: %d %s", a.Status, a.Body)
		}
		authority := apptest.Authority(*tu.PaymentURL)
		back, err := f.app.Server.Bank.Pay(authority)
		if err != nil {
			t.Fatal(err)
		}
		// A page's background check of the link (app.js's fetch, after a
		// 503 whose refresh carries the bank's fields) does not spend the
		// hand-over, which the browser would not follow to another site;
		// the navigation after it takes it.
		resp, body := doWith(http.MethodGet, back, nil, "cors")
		staysHere("a background check of the bank's return", resp, body, tu.ID)
		resp, _ = doWith(http.MethodGet, back, nil, "navigate")
		toShop("the bank's return", resp, tu.ID)
		for i := 0; i < 3; i++ {
			resp, body := do(http.MethodGet, back, nil)
			staysHere("the same link again", resp, body, tu.ID)
		}
		own := f.app.URL + routes.TopUpReturn(tu.ID) + "?" + callback.OwnTokenParam + "=" + url.QueryEscape(authority)
		resp, body = do(http.MethodGet, own, nil)
		staysHere("our own return URL", resp, body, tu.ID)

		// SEP: the bank's POST hands over; a second POST, and our own
		// URL, stay here (the POST by Post/Redirect/Get).
		a = c.post(routes.APITopUps, "sep", `{"amount_rials": 500000, "gateway": "sep", "return_url": "https://shop.example/done"}`)
		tu = decode[api.TopUp](t, a)
		if a.Status != http.StatusCreated || tu.PaymentForm == nil {
			t.Fatalf("create: %d %s", a.Status, a.Body)
		}
		token := tu.PaymentForm.Fields["Token"]
		own = f.app.URL + routes.TopUpReturn(tu.ID) + "?" + callback.OwnTokenParam + "=" + url.QueryEscape(token)
		cb, err := f.app.Server.Bank.Finish(token, true)
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{}
		for k, v := range cb.Form {
			form.Set(k, v)
		}
		resp, _ = do(http.MethodPost, cb.URL, form)
		toShop("SEP's POST", resp, tu.ID)
		resp, _ = do(http.MethodPost, cb.URL, form)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, routes.TopUpReturn(tu.ID)) {
			t.Fatalf("SEP's POST again: %d to %q, want our own page", resp.StatusCode, loc)
		}
		resp, body = do(http.MethodGet, own, nil)
		staysHere("our own URL after SEP's POST", resp, body, tu.ID)
		if n := topuptest.Count(t, db, topup.StatusCredited); n != 2 {
			t.Fatalf("%d credited payments, want 2", n)
		}
		apptest.CheckInvariants(t, db)
	})
}
