package sandbank

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// testIDText is the text of the element with data-testid id ("" and false
// when there is none).
func testIDText(body, id string) (string, bool) {
	root, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return "", false
	}
	var found *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "data-testid" && a.Val == id && found == nil {
				found = n
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	if found == nil {
		return "", false
	}
	var b strings.Builder
	var text func(n *html.Node)
	text = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			text(c)
		}
	}
	text(found)
	return strings.TrimSpace(b.String()), true
}

// bodyAttr is the page's <body> attribute key ("" for none).
func bodyAttr(page, key string) string {
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return ""
	}
	var val string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "body" {
			for _, a := range n.Attr {
				if a.Key == key {
					val = a.Val
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return val
}

// Back and reload on the pages of the POST gateways (issue 29, item 6):
// the payment page the merchant's post answers, and the page that posts
// the payer back, make the payment page's GET address their history
// entry (data-address, bank.js), and so does the page Pay answers, which
// posts the payer back; so the payer's history holds only GET pages.
// Loading the payment's page again changes nothing at the bank, and once
// the payment is paid it shows the way back to the merchant by the
// payer's hand, never a live Pay button nor an automatic post. Every
// answer is no-store.
func TestFormPagesBackAndReload(t *testing.T) {
	for _, tt := range []struct{ gw, start, field, page string }{
		{gatewaySEP, "/OnlinePG/OnlinePG", "Token", "/OnlinePG/SendToken?token="},
		{gatewayMellat, "/pgwchannel/startpay.mellat", "RefId", "/pgwchannel/startpay.mellat?RefId="},
	} {
		t.Run(tt.gw, func(t *testing.T) {
			b := New(Options{})
			srv := httptest.NewServer(b.Handler())
			defer srv.Close()
			c := noRedirect()
			tok := newFormPayment(t, srv, tt.gw)
			noStore := func(what string, resp *http.Response) {
				t.Helper()
				if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
					t.Errorf("%s: Cache-Control %q", what, cc)
				}
			}
			resolve := func(base, ref string) string {
				t.Helper()
				u, err := url.Parse(base)
				if err != nil {
					t.Fatal(err)
				}
				return u.ResolveReference(mustURL(t, ref)).String()
			}

			// The merchant's form: the payment page, whose history entry
			// becomes its GET address, the language kept.
			resp, err := c.PostForm(srv.URL+tt.start+"?lang=en", url.Values{tt.field: {tok}})
			if err != nil {
				t.Fatal(err)
			}
			arrive := readPage(t, resp)
			noStore("the merchant's post", resp)
			pageURL := resolve(srv.URL+tt.start, bodyAttr(arrive.body, "data-address"))
			if _, _, ok := bankForm(arrive.body, "bank-pay"); arrive.status != http.StatusOK || !ok ||
				pageURL != srv.URL+tt.page+url.QueryEscape(tok)+"&lang=en" || !strings.Contains(arrive.body, "/pg/assets/bank.js") {
				t.Fatalf("the merchant's post: %d, its GET address %s\n%s", arrive.status, pageURL, arrive.body)
			}

			// The page, loaded twice (a reload): the same payable page.
			var pay string
			var payFields url.Values
			for range 2 {
				resp, err := c.Get(pageURL)
				if err != nil {
					t.Fatal(err)
				}
				p := readPage(t, resp)
				noStore("the page", resp)
				action, fields, ok := bankForm(p.body, "bank-pay")
				if p.status != http.StatusOK || !ok || fields.Get(tt.field) != tok || !strings.Contains(p.body, `<html lang="en"`) {
					t.Fatalf("the page: %d\n%s", p.status, p.body)
				}
				pay, payFields = resolve(pageURL, action), fields
			}
			if got, _ := b.Payment(tok); got.State != StateInBank {
				t.Fatalf("showing the page changed the payment: %s", got.State)
			}

			// Pay: the page that posts the callback, whose history entry
			// becomes the payment's page before it posts.
			resp, err = c.PostForm(pay, payFields)
			if err != nil {
				t.Fatal(err)
			}
			ret := readPage(t, resp)
			noStore("pay", resp)
			if _, fields, ok := bankForm(ret.body, "bank-back"); ret.status != http.StatusOK || !ok || len(fields) == 0 ||
				!strings.Contains(ret.body, "data-autosubmit") {
				t.Fatalf("pay: %d\n%s", ret.status, ret.body)
			}
			if got, _ := b.Payment(tok); got.State != StatePaid {
				t.Fatalf("after pay: %s", got.State)
			}
			if addr := bodyAttr(ret.body, "data-address"); resolve(pay, addr) != pageURL {
				t.Errorf("the page after pay makes its history entry %q (%s), want the payment's page %s",
					addr, resolve(pay, addr), pageURL)
			}

			// Back (or a reload) after paying loads the payment's page: it
			// is paid, with the way back by hand; no Pay, no timer, no
			// automatic post, and the language switch still there.
			for range 2 {
				resp, err := c.Get(pageURL)
				if err != nil {
					t.Fatal(err)
				}
				p := readPage(t, resp)
				noStore("the page after pay", resp)
				if _, _, ok := bankForm(p.body, "bank-pay"); ok || p.status != http.StatusOK {
					t.Fatalf("the page after pay has a Pay button (%d):\n%s", p.status, p.body)
				}
				if strings.Contains(p.body, "data-autosubmit") || strings.Contains(p.body, "data-seconds-left") {
					t.Errorf("the page after pay posts by itself or counts down:\n%s", p.body)
				}
				if _, fields, ok := bankForm(p.body, "bank-back"); !ok || len(fields) == 0 {
					t.Errorf("the page after pay has no way back to the merchant:\n%s", p.body)
				}
				if _, fields, ok := bankForm(p.body, "bank-lang"); !ok || fields.Get(tt.field) != tok {
					t.Errorf("the page after pay has no language switch:\n%s", p.body)
				}
			}
			// A resubmitted Pay changes nothing: 409, the paid page.
			resp, err = c.PostForm(pay, payFields)
			if err != nil {
				t.Fatal(err)
			}
			again := readPage(t, resp)
			if _, _, ok := bankForm(again.body, "bank-pay"); again.status != http.StatusConflict || ok {
				t.Errorf("pay again: %d", again.status)
			}
			if got, _ := b.Payment(tok); got.State != StatePaid {
				t.Errorf("after pay again: %s", got.State)
			}
		})
	}
}

// The page of a GET gateway after paying (what Back reloads) has no Pay
// button and no countdown, and every page of the bank loads the bank's
// script, which reloads a page the browser restores from its
// back-forward cache (the browser test TestBackAfterPaying runs it).
func TestLinkPageAfterPayingIsFinished(t *testing.T) {
	b, srv := newTestBank(t, Options{})
	a := newPayment(t, srv, 20_000)
	start := get(t, srv, "/pg/StartPay/"+a)
	if !strings.Contains(start.body, `src="../assets/bank.js"`) || start.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("start page: %q\n%s", start.header.Get("Cache-Control"), start.body)
	}
	if _, err := b.Pay(a); err != nil {
		t.Fatal(err)
	}
	back := get(t, srv, "/pg/StartPay/"+a)
	if _, _, ok := bankForm(back.body, "bank-pay"); ok || strings.Contains(back.body, "data-seconds-left") ||
		!strings.Contains(back.body, `data-testid="bank-paid"`) || back.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the page after pay: %d\n%s", back.status, back.body)
	}
	js := get(t, srv, "/pg/assets/bank.js")
	if !strings.Contains(js.body, `addEventListener("pageshow"`) || !strings.Contains(js.body, "e.persisted") {
		t.Errorf("bank.js does not reload a page restored from the back-forward cache:\n%s", js.body)
	}
}

// Every payment page says what is bought (issue 29, item 7): the
// merchant's description, or, for SEP, whose token request has no
// description field, the amount and the terminal it is paid to; and it
// has a language switch.
func TestPaymentPageDescription(t *testing.T) {
	b := New(Options{})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	for _, tt := range []struct{ gw, page, lang, want string }{
		{gatewaySEP, "/OnlinePG/SendToken?token=", "en", "Payment of 120,000 rials to merchant no. 1300"},
		{gatewaySEP, "/OnlinePG/SendToken?token=", "fa", "پرداخت ۱۲۰٬۰۰۰ ریال به پذیرندهٔ شمارهٔ ۱۳۰۰"},
		{gatewayMellat, "/pgwchannel/startpay.mellat?RefId=", "en", "Payment of 120,000 rials to merchant no. 5000"},
	} {
		tok := newFormPayment(t, srv, tt.gw)
		p := get(t, srv, tt.page+url.QueryEscape(tok)+"&lang="+tt.lang)
		if got, ok := testIDText(p.body, "bank-description"); !ok || got != tt.want {
			t.Errorf("%s %s: description %q, want %q", tt.gw, tt.lang, got, tt.want)
		}
		if _, _, ok := bankForm(p.body, "bank-lang"); !ok {
			t.Errorf("%s: no language switch", tt.gw)
		}
	}
	a := newPayment(t, srv, 20_000)
	p := get(t, srv, "/pg/StartPay/"+a)
	if got, _ := testIDText(p.body, "bank-description"); got != "شارژ کیف پول" {
		t.Errorf("zarinpal: description %q", got)
	}
	if !strings.Contains(p.body, `data-testid="bank-lang"`) {
		t.Error("zarinpal: no language switch")
	}
}

// TestFormPagesRefuseBadTokens: the GET addresses of the posted-form
// pages answer a token they do not know, an empty one, none, or one with
// a NUL with the bank's 404 page (inside serve, the app refuses the NUL
// with 400 before the bank sees it); none of them changes a payment the
// bank holds.
func TestFormPagesRefuseBadTokens(t *testing.T) {
	b := New(Options{})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	for _, tt := range []struct{ gw, page string }{
		{gatewaySEP, "/OnlinePG/SendToken"},
		{gatewayMellat, "/pgwchannel/startpay.mellat"},
	} {
		tok := newFormPayment(t, srv, tt.gw)
		before, _ := b.Payment(tok)
		key := map[string]string{gatewaySEP: "token", gatewayMellat: "RefId"}[tt.gw]
		for _, c := range []struct {
			query string
			want  int
		}{
			{"?" + key + "=garbage", http.StatusNotFound},
			{"?" + key + "=", http.StatusNotFound},
			{"", http.StatusNotFound},
			{"?" + key + "=%00", http.StatusNotFound},
		} {
			resp, err := http.Get(srv.URL + tt.page + c.query)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s%s: %d, want %d", tt.page, c.query, resp.StatusCode, c.want)
			}
		}
		if after, _ := b.Payment(tok); after.State != before.State || after.State != StateInBank {
			t.Errorf("%s: the bank's payment went %s → %s", tt.gw, before.State, after.State)
		}
	}
}
