package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/views"
)

func TestShortRef(t *testing.T) {
	for in, want := range map[string]string{
		"jiwfnqzhkkeuvw5egdz4zpa2": "JIWF-NQZH-KKEU",
		"abcdefgh":                 "ABCD-EFGH",
		"abcde":                    "ABCD-E",
		"":                         "",
	} {
		if got := views.ShortRef(in); got != want {
			t.Errorf("ShortRef(%q) = %q, want %q", in, got, want)
		}
	}
}

// The receipt shows a short grouped reference (the full id in the URL and
// an attribute), copy buttons for it and the bank's reference, and a print
// button (issue 10, point 5).
func TestReceiptReferences(t *testing.T) {
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c, payURL := startTopUp(t, app, "receipt@example.com", "50000")
	back := payAtBank(t, c, payURL, "pay")
	c.Get(back)
	publicID := strings.Split(strings.TrimPrefix(back, app.URL+routes.Payments+"/"), "/")[0]
	r := c.Get(routes.Payment(publicID))
	if r.Status != http.StatusOK || apptest.PaymentStatus(r.Body) != "credited" {
		t.Fatalf("receipt: %d %q", r.Status, apptest.PaymentStatus(r.Body))
	}
	for _, want := range []string{
		`data-payment-id="` + publicID + `"`,
		`>` + views.ShortRef(publicID) + `</span>`,
		`data-testid="copy-payment-ref"`, `data-copy="payment-ref"`,
		`data-testid="copy-ref-id"`, `data-copy="ref-id"`,
		`data-testid="print"`,
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("receipt lacks %s", want)
		}
	}
	if len(views.ShortRef(publicID)) != 14 {
		t.Errorf("short reference %q", views.ShortRef(publicID))
	}
}
