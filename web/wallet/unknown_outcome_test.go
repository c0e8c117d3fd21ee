package wallet_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
)

// brokenStart is the top-up start with a database gone mid-request.
type brokenStart struct{ topup.Starter }

func (brokenStart) Start(context.Context, topup.Request) (topup.StartResult, error) {
	return topup.StartResult{}, errors.New("insert payment: connection reset by peer")
}

// A form sent whose outcome the app cannot tell (an error it has no
// sentence for) is not answered "try again", which could make a second
// one from a new form, but "look at your wallet first", with the link,
// in the payer's language.
func TestAFormWhoseOutcomeIsUnknownSaysLookFirst(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Server: server.Options{WrapTopUp: func(s topup.Starter) topup.Starter {
			return brokenStart{s}
		}}})
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			c := app.NewClient(t)
			c.GetIn(string(l), routes.SignUp)
			c.SignUp("unknown-" + string(l) + "@example.com")
			csrf, tok := c.TopUpForm()
			r := c.PostTopUp(csrf, tok, "10000")
			if r.Status != http.StatusInternalServerError || !strings.Contains(r.Body, html.EscapeString(i18n.T(l, "error.internal_post"))) ||
				strings.Contains(r.Body, html.EscapeString(i18n.T(l, "error.internal"))) {
				t.Fatalf("%s: the form's unknown outcome: %d %.400s", l, r.Status, r.Body)
			}
			links := apptest.Parse(r.Body).Attrs("href")
			found := false
			for _, h := range links {
				found = found || h == routes.Wallet
			}
			if !found {
				t.Fatalf("%s: no link to the wallet in %v", l, links)
			}
		}
	})
}
