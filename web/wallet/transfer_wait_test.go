package wallet_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// inEither: got is key's text in Persian or in English.
func inEither(got, key string, args ...any) bool {
	return got == i18n.T(i18n.FA, key, args...) || got == i18n.T(i18n.EN, key, args...)
}

// Past the unknown-recipient allowance, a Send may be the second press of
// a double click whose first is still in flight (it may commit after this
// answer): the 429 never says nothing was sent, only that this press made
// no transfer, and sends the user to the wallet's history before a fresh
// form. The confirmation step's 429 keeps the form (its token: the same
// form again is answered with its receipt) and says the same.
func TestUnknownRecipientWaitNeverSaysNothingWasSent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_UNKNOWN_RECIPIENTS": "1"},
			Server: server.Options{RateLimits: true}})
		alice := signUpFunded(t, app, "alice@example.com", 5_000_000)
		signUpFunded(t, app, "bob@example.com", 0)
		c := app.NewClient(t)
		c.SignIn("alice@example.com", transferPW)
		confirm := apptest.Parse(review(t, c, "bob@example.com", "2000", "").Body)
		send := confirm.Form(routes.Transfer).Hidden()
		if confirm.TestID("transfer-confirm") == nil || send.Get("confirmed") != "1" {
			t.Fatal("no confirmation step")
		}
		// The allowance's one place goes to an unknown address.
		if r := review(t, c, "nobody@example.com", "2000", ""); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("an unknown address: %d", r.Status)
		}
		r := c.Post(routes.Transfer, send)
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("Send past the allowance: %d", r.Status)
		}
		doc := apptest.Parse(r.Body)
		said := false
		for _, p := range doc.Elements("p") {
			said = said || inEither(p.Text(), "transfer.unknown_wait")
		}
		if doc.TestID("message") == nil || !said {
			t.Fatalf("Send past the allowance says: %q", r.Body)
		}
		linked := false
		for _, a := range doc.Elements("a") {
			if a.Attr("href") == routes.Wallet && inEither(a.Text(), "transfer.see_history") {
				linked = true
			}
		}
		if !linked {
			t.Fatal("Send past the allowance: no link to the wallet's history")
		}
		if ledgertest.Balance(t, db, alice) != 5_000_000 {
			t.Fatal("money moved past the allowance")
		}
		// The confirmation step: the form, with the same sentence's
		// warning, and the wait in minutes.
		r = review(t, c, "bob@example.com", "2000", "")
		secs, _ := strconv.ParseInt(r.Header.Get("Retry-After"), 10, 64)
		e := apptest.Parse(r.Body).TestID("transfer-error")
		if r.Status != http.StatusTooManyRequests || e == nil || !inEither(e.Text(), "transfer.error_too_many_unknown", "minutes", (secs+59)/60) {
			t.Fatalf("Continue past the allowance: %d %v", r.Status, e)
		}
		// Neither sentence says nothing was sent: this request made no
		// transfer, an earlier press may have, the history tells.
		for _, key := range []string{"transfer.error_too_many_unknown", "transfer.unknown_wait"} {
			txt := i18n.T(i18n.EN, key, "minutes", 5)
			for _, want := range []string{"made no transfer", "may have been made", "history"} {
				if !strings.Contains(txt, want) {
					t.Errorf("%s does not say %q: %q", key, want, txt)
				}
			}
		}
	})
}
