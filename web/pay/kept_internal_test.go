package pay

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// The kept page, put back together with a request's nonce, CSRF token and
// other-language link, is byte for byte the page rendered for that
// request: the neutral page, the payer's result page and receipt, signed
// in (a header with their address and a sign-out form) or not.
func TestKeptPageSegmentsRebuildThePage(t *testing.T) {
	resolved := time.Date(2026, 12, 3, 6, 1, 2, 0, time.UTC)
	payer := &views.UserInfo{Email: "payer@example.com", IsMerchant: true}
	credited := views.TopUpView{PublicID: "abcdefgh", AmountRials: 250_000, Status: "credited", RefID: 123456,
		CardPANMasked: "6037-99**-****-1234", CreatedAt: resolved.Add(-time.Minute), ResolvedAt: &resolved,
		CheckoutURL: routes.Checkout("ch_abc")}
	failed := views.TopUpView{PublicID: "ijklmnop", AmountRials: 100_000, Status: "failed", FailureCause: "cancelled",
		CreatedAt: resolved, TryAgainURL: routes.TopUp + "?amount=10000", OtherGatewayURL: routes.TopUp + "?amount=10000&after=zibal"}
	cases := []struct {
		name string
		tmpl byte
		lang string
		user *views.UserInfo
		v    views.TopUpView
	}{
		{"neutral", keptResult, "en", nil, views.TopUpView{PublicID: "abcdefgh", Status: "credited", Neutral: true}},
		{"neutral, signed-in stranger", keptResult, "fa", &views.UserInfo{Email: "s@example.com"}, views.TopUpView{PublicID: "abcdefgh", Status: "failed", FailureCause: "cancelled", Neutral: true}},
		{"payer's result", keptResult, "fa", payer, credited},
		{"payer's failed result", keptResult, "en", payer, failed},
		{"payer's receipt", keptReceipt, "en", payer, credited},
		{"payer's failed receipt", keptReceipt, "fa", &views.UserInfo{Email: "a@example.com", IsAdmin: true}, failed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newKeptPages(2)
			var title string
			if tc.tmpl == keptReceipt {
				title = tc.v.ReceiptTitle()
			} else {
				title = views.ResultTitleKey(tc.v.Status)
			}
			pg := views.Page{Lang: i18n.Lang(tc.lang), TitleKey: title, User: tc.user}
			rendered := func(pg views.Page) []byte {
				var b bytes.Buffer
				if err := render(tc.tmpl, pg, tc.v).Render(context.Background(), &b); err != nil {
					t.Fatal(err)
				}
				return b.Bytes()
			}
			tmpl := pg
			tmpl.Nonce, tmpl.CSRF, tmpl.SwitchLangURL = n.nonce, n.csrf, n.swtch
			segs := n.split(rendered(tmpl))
			for _, req := range []struct{ nonce, csrf, swtch string }{
				{"AAAAAAAAAAAAAAAAAAAAAA", "tok1", routes.TopUpReturn("x") + "?lang=fa"},
				{"BBBBBBBBBBBBBBBBBBBBBB", "", routes.TopUpReturn("x") + "?Authority=A%26B&Status=%22OK%22&lang=fa"},
				{"CCCCCCCCCCCCCCCCCCCCCC", "t\"<&+/=", "//evil.example/<script>?x='&lang=en"},
			} {
				var got bytes.Buffer
				nonces, csrfs := 0, 0
				for _, s := range segs {
					got.Write(s.text)
					switch s.then {
					case 'n':
						got.WriteString(templ.EscapeString(req.nonce))
						nonces++
					case 'c':
						got.WriteString(templ.EscapeString(req.csrf))
						csrfs++
					case 's':
						got.WriteString(templ.EscapeString(views.LocalHref(req.swtch)))
					}
				}
				want := pg
				want.Nonce, want.CSRF, want.SwitchLangURL = req.nonce, req.csrf, req.swtch
				if !bytes.Equal(got.Bytes(), rendered(want)) {
					t.Fatalf("rebuilt page differs from the rendered one:\n%s\n---\n%s", got.Bytes(), rendered(want))
				}
				if nonces == 0 {
					t.Fatal("no nonce placeholder found: the page's scripts would carry none")
				}
				if tc.user != nil && csrfs == 0 {
					t.Fatal("a signed-in page without its CSRF placeholder: its sign-out form would carry none")
				}
			}
		})
	}
	if n := newKeptPages(2); len(n.nonce) < 32 || n.nonce == newKeptPages(2).nonce {
		t.Fatal("placeholders must be long and random per process")
	}
}

// The key holds every field of the top-up's view (BankForm's pages are not
// kept) and of the header's user, and the page's fields are the known
// ones: a field added to either must be added to the key (or to the
// per-request values) before the cache may serve it.
func TestKeptKeyCoversTheView(t *testing.T) {
	fields := func(typ reflect.Type) []string {
		var out []string
		for f := range typ.Fields() {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return out
	}
	view := fields(reflect.TypeFor[views.TopUpView]())
	key := fields(reflect.TypeFor[keptView]())
	want := slices.DeleteFunc(slices.Clone(key), func(n string) bool { return n == "HasResolved" })
	got := slices.DeleteFunc(slices.Clone(view), func(n string) bool { return n == "BankForm" })
	if !slices.Equal(got, want) {
		t.Fatalf("views.TopUpView's fields %v, the kept key's %v", got, want)
	}
	page := fields(reflect.TypeFor[views.Page]())
	known := []string{"CSRF", "Lang", "Nonce", "Now", "Operator", "RefreshSeconds", "RefreshURL", "SwitchLangURL", "TitleKey", "User"}
	if !slices.Equal(page, known) {
		t.Fatalf("views.Page's fields changed (%v, reviewed: %v): decide whether the kept pages' key needs the new one", page, known)
	}
	if !reflect.TypeFor[views.UserInfo]().Comparable() {
		t.Fatal("views.UserInfo is no longer comparable: the key holds it by value")
	}
	// Two payers, or two states of one top-up, never share a key.
	pg := views.Page{Lang: i18n.Lang("fa"), TitleKey: "t", User: &views.UserInfo{Email: "a@example.com"}}
	other := pg
	other.User = &views.UserInfo{Email: "b@example.com"}
	v := views.TopUpView{PublicID: "abcdefgh", Status: "credited", AmountRials: 10}
	ka, _ := keyOf(keptResult, pg, v)
	kb, _ := keyOf(keptResult, other, v)
	v2 := v
	v2.CheckoutURL = routes.Checkout("ch_x")
	kc, _ := keyOf(keptResult, pg, v2)
	kr, _ := keyOf(keptReceipt, pg, v)
	if ka == kb || ka == kc || ka == kr {
		t.Fatal("different pages share a key")
	}
	if _, ok := keyOf(keptResult, views.Page{RefreshURL: "/x", RefreshSeconds: 3}, v); ok {
		t.Fatal("a refreshing page is kept")
	}
	if _, ok := keyOf(keptReceipt, pg, views.TopUpView{BankForm: &views.ToBankView{}}); ok {
		t.Fatal("a page with a bank's form is kept")
	}
}

// The kept pages are bounded: more top-ups replayed than it holds never
// grow the cache past its maximum.
func TestKeptPagesAreBounded(t *testing.T) {
	n := newKeptPages(2)
	app := fiber.New()
	app.Get("/:q", func(c *fiber.Ctx) error {
		pg := views.Page{Lang: i18n.Lang("en"), TitleKey: views.ResultTitleKey("credited"), SwitchLangURL: "/x?lang=fa", Nonce: "N"}
		v := views.TopUpView{PublicID: "abcdefgh" + c.Params("q"), Status: "credited", Neutral: true}
		key, _ := keyOf(keptResult, pg, v)
		return n.write(c, key, pg, v)
	})
	for i, q := range []string{"a", "b", "a", "c", "d", "e"} {
		res, err := app.Test(httptest.NewRequest(http.MethodGet, "/"+q, nil))
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %v %v", i, res, err)
		}
		_ = res.Body.Close()
		n.mu.RLock()
		size := len(n.pages)
		n.mu.RUnlock()
		if size > 2 {
			t.Fatalf("after %d requests the cache holds %d pages, more than its 2", i+1, size)
		}
	}
	if r := n.rendered(); r != 5 {
		t.Fatalf("%d renders, want 5 (the second \"a\" served from the cache)", r)
	}
}
