package sandbank

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	bankpage "github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/testclock"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// newFormPayment registers a SEP or Mellat payment through its own API
// and returns its token.
func newFormPayment(t *testing.T, srv *httptest.Server, gw string) string {
	t.Helper()
	switch gw {
	case gatewaySEP:
		resp, err := http.Post(srv.URL+"/onlinepg/onlinepg", "application/json", strings.NewReader(
			`{"action":"token","TerminalId":"1300","Amount":"120000","ResNum":"abc","RedirectUrl":"https://shop.example.ir/payments/abc/return"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a struct {
			Status int    `json:"status"`
			Token  string `json:"token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.Status != 1 || a.Token == "" {
			t.Fatalf("token: %+v %v", a, err)
		}
		return a.Token
	default:
		env := `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://interfaces.core.sw.bps.com/"><soapenv:Body><ns1:bpPayRequest>` +
			`<terminalId>5000</terminalId><userName>u</userName><userPassword>p</userPassword><orderId>77</orderId><amount>120000</amount>` +
			`<localDate>20261201</localDate><localTime>153000</localTime><additionalData></additionalData>` +
			`<callBackUrl>https://shop.example.ir/payments/abc/return</callBackUrl><payerId>0</payerId></ns1:bpPayRequest></soapenv:Body></soapenv:Envelope>`
		resp, err := http.Post(srv.URL+"/pgwchannel/services/pgw", "text/xml", strings.NewReader(env))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		_, ret, err := readSOAPReturn(raw)
		code, ref, ok := strings.Cut(ret, ",")
		if err != nil || !ok || code != "0" {
			t.Fatalf("bpPayRequest: %s %v", raw, err)
		}
		return ref
	}
}

// The payer's pages of the POST gateways: the start page takes the token
// in the gateway's own form field, shows Pay and Cancel each in its own
// form carrying the token, and Pay answers a page whose one form posts the
// callback fields to the merchant, submitted by the bank's script (CSP:
// no inline script; no form-action, which browsers would apply to the
// merchant's own redirects after its callback).
func TestFormGatewayPages(t *testing.T) {
	for _, tt := range []struct{ gw, start, field, wantField string }{
		{gatewaySEP, "/OnlinePG/OnlinePG", "Token", "RefNum"},
		{gatewayMellat, "/pgwchannel/startpay.mellat", "RefId", "SaleReferenceId"},
	} {
		t.Run(tt.gw, func(t *testing.T) {
			b := New(Options{})
			srv := httptest.NewServer(b.Handler())
			defer srv.Close()
			tok := newFormPayment(t, srv, tt.gw)
			resp, err := http.PostForm(srv.URL+tt.start, url.Values{tt.field: {tok}})
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			html := string(page)
			if resp.StatusCode != 200 {
				t.Fatalf("start page %d:\n%s", resp.StatusCode, html)
			}
			for _, id := range []string{"bank-pay", "bank-cancel"} {
				if _, hidden, ok := bankForm(html, id); !ok || hidden.Get(tt.field) != tok {
					t.Fatalf("no %s form with the %s field:\n%s", id, tt.field, html)
				}
			}
			if strings.Contains(html, "<script>") {
				t.Fatal("inline script")
			}
			// The footer names no one gateway: not Zarinpal on SEP's and
			// Mellat's pages (issue 29, item 16).
			if !strings.Contains(html, bankpage.T(i18n.FA, "footer")) || strings.Contains(html, "زرین\u200cپال") {
				t.Error("the page's footer is not the sandbox bank's own, or names Zarinpal")
			}
			// A language switch that posts the token again (issue 29, item 7):
			// the same page, in English, still payable.
			switchAction, switchFields, ok := bankForm(html, "bank-lang")
			if !ok || switchFields.Get(tt.field) != tok {
				t.Fatalf("no language switch posting the %s field:\n%s", tt.field, html)
			}
			switchURL, _ := url.Parse(srv.URL + tt.start)
			en, err := http.PostForm(switchURL.ResolveReference(mustURL(t, switchAction)).String(), switchFields)
			if err != nil {
				t.Fatal(err)
			}
			enPage, _ := io.ReadAll(en.Body)
			en.Body.Close()
			if _, hidden, ok := bankForm(string(enPage), "bank-pay"); en.StatusCode != 200 || !strings.Contains(string(enPage), `<html lang="en"`) || !ok || hidden.Get(tt.field) != tok {
				t.Fatalf("the switched page: %d\n%s", en.StatusCode, enPage)
			}
			payURL, _ := url.Parse(srv.URL + tt.start)
			act, _, _ := bankForm(html, "bank-pay")
			target, _ := payURL.Parse(act)
			resp, err = http.PostForm(target.String(), url.Values{tt.field: {tok}})
			if err != nil {
				t.Fatal(err)
			}
			page, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			html = string(page)
			if resp.StatusCode != 200 || !strings.Contains(html, `action="https://shop.example.ir/payments/abc/return"`) ||
				!strings.Contains(html, "data-autosubmit") || !strings.Contains(html, `name="`+tt.wantField+`"`) ||
				!strings.Contains(html, `src="../../pg/assets/bank.js"`) {
				t.Fatalf("post-back page %d:\n%s", resp.StatusCode, html)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); strings.Contains(csp, "form-action") || !strings.Contains(csp, "script-src 'self'") {
				t.Fatalf("CSP %q", csp)
			}
			// A second Pay is refused: the payment is no longer at the bank.
			resp, _ = http.PostForm(target.String(), url.Values{tt.field: {tok}})
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict {
				t.Fatalf("second pay: %d", resp.StatusCode)
			}
			// An unknown token: 404.
			resp, _ = http.PostForm(srv.URL+tt.start, url.Values{tt.field: {"nope"}})
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("unknown token: %d", resp.StatusCode)
			}
		})
	}
}

// The control API per gateway answers the browser's next request:
// {"redirect","method","form"}; a token of another gateway is 404.
func TestControlGatewayFinish(t *testing.T) {
	b := New(Options{})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	post := func(path string) (int, CallbackRequest) {
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cb CallbackRequest
		_ = json.NewDecoder(resp.Body).Decode(&cb)
		return resp.StatusCode, cb
	}
	sepTok := newFormPayment(t, srv, gatewaySEP)
	mlTok := newFormPayment(t, srv, gatewayMellat)
	if st, _ := post("/_sandbank/mellat/payments/" + sepTok + "/pay"); st != http.StatusNotFound {
		t.Fatalf("SEP token under mellat: %d", st)
	}
	st, cb := post("/_sandbank/sep/payments/" + sepTok + "/pay")
	if st != 200 || cb.Method != "POST" || cb.URL != "https://shop.example.ir/payments/abc/return" ||
		cb.Form["State"] != "OK" || cb.Form["RefNum"] == "" || cb.Form["Token"] != sepTok {
		t.Fatalf("sep pay: %d %+v", st, cb)
	}
	st, cb = post("/_sandbank/mellat/payments/" + mlTok + "/cancel")
	if st != 200 || cb.Method != "POST" || cb.Form["ResCode"] != "17" || cb.Form["SaleReferenceId"] != "" || cb.Form["RefId"] != mlTok {
		t.Fatalf("mellat cancel: %d %+v", st, cb)
	}
	if st, _ := post("/_sandbank/mellat/payments/" + mlTok + "/pay"); st != http.StatusConflict {
		t.Fatalf("pay after cancel: %d", st)
	}
	resp, err := http.Get(srv.URL + "/pgwchannel/services/pgw?wsdl")
	if err != nil {
		t.Fatal(err)
	}
	wsdl, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, op := range []string{"bpPayRequest", "bpVerifyRequest", "bpSettleRequest", "bpInquiryRequest", "bpReversalRequest"} {
		if !strings.Contains(string(wsdl), `<operation name="`+op+`">`) {
			t.Fatalf("WSDL lacks %s", op)
		}
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Each page waits for the payer as long as its bank's does: SEP's token
// 20 minutes (its default, no TokenExpiryInMin), the others 15; a bank
// made with AuthorityTTL uses that for every one.
func TestEachPageWaitsItsOwnTime(t *testing.T) {
	for _, tt := range []struct {
		gw    string
		fixed time.Duration
		lasts time.Duration
	}{
		{gatewaySEP, 0, 20 * time.Minute},
		{gatewayMellat, 0, DefaultAuthorityTTL},
		{gatewaySEP, 15 * time.Minute, 15 * time.Minute},
	} {
		t.Run(fmt.Sprintf("%s %v", tt.gw, tt.fixed), func(t *testing.T) {
			clock := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			b := New(Options{Clock: clock.Now, AuthorityTTL: tt.fixed})
			srv := httptest.NewServer(b.Handler())
			defer srv.Close()
			tok := newFormPayment(t, srv, tt.gw)
			clock.Add(tt.lasts - time.Second)
			if p, ok := b.Payment(tok); !ok || p.State != StateInBank {
				t.Fatalf("a second before %v: %+v", tt.lasts, p)
			}
			clock.Add(time.Second)
			if p, ok := b.Payment(tok); !ok || p.State != StateFailed || p.FailReason != FailExpired {
				t.Fatalf("at %v: %+v, want expired", tt.lasts, p)
			}
		})
	}
}
