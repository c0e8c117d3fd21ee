package pay_test

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
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c, payURL := app.StartTopUp(t, "receipt@example.com", "50000")
	back := c.PayAtBank(payURL, "pay")
	c.Get(back)
	publicID := strings.Split(strings.TrimPrefix(back, app.URL+routes.TopUps+"/"), "/")[0]
	r := c.Get(routes.TopUpPage(publicID))
	if r.Status != http.StatusOK || apptest.TopUpStatus(r.Body) != "credited" {
		t.Fatalf("receipt: %d %q", r.Status, apptest.TopUpStatus(r.Body))
	}
	doc := apptest.Parse(r.Body)
	if ref := doc.TestID("payment-id"); ref.Attr("data-payment-id") != publicID || ref.Text() != views.ShortRef(publicID) {
		t.Errorf("receipt's reference: %q %q", ref.Attr("data-payment-id"), ref.Text())
	}
	for button, copies := range map[string]string{"copy-payment-ref": "payment-ref", "copy-ref-id": "ref-id"} {
		if got := doc.TestID(button).Attr("data-copy"); got != copies {
			t.Errorf("receipt's %s button copies %q, want %q", button, got, copies)
		}
	}
	if doc.TestID("print") == nil {
		t.Error("receipt lacks its print button")
	}
	if len(views.ShortRef(publicID)) != 14 {
		t.Errorf("short reference %q", views.ShortRef(publicID))
	}
}
