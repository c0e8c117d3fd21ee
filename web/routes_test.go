package web_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The app registers exactly the patterns internal/routes declares: a
// route added without its name there (or a name left behind) fails here.
func TestRegisteredRoutesAreTheDeclaredOnes(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	var got []string
	for _, r := range app.Server.App.GetRoutes(true) {
		if !slices.Contains(got, r.Path) {
			got = append(got, r.Path)
		}
	}
	want := routes.Patterns()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("registered route patterns\n%q\ndeclared in internal/routes\n%q", got, want)
	}
}

// The exemptions follow from the order of registration: what is
// registered before canonicalHost answers under any host name, the bank's
// callback (registered before the CSRF check) takes a POST without a
// token, and the admin's second-factor page (registered before the admin
// group's middleware) is reached before the second factor.
func TestExemptionsByRegistrationOrder(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, host string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, app.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res
	}
	for _, tc := range []struct {
		method, path, host string
		want               int
	}{
		{"GET", routes.Healthz, "localhost", http.StatusOK},
		{"GET", routes.Readyz, "localhost", http.StatusOK},
		{"GET", routes.APIOpenAPI, "localhost", http.StatusOK},
		{"GET", routes.APIWallet, "localhost", http.StatusUnauthorized},
		{"GET", routes.SignIn, "localhost", http.StatusTemporaryRedirect},
		{"GET", routes.Asset("app.css"), "localhost", http.StatusTemporaryRedirect},
		// No CSRF token: refused everywhere but on the bank's callback
		// (whose unknown payment is the 404 page, not the check's 403).
		{"POST", routes.SignOut, "", http.StatusForbidden},
		{"POST", routes.TopUpAbandon("abcdefghijklmnopqrstuvwx"), "", http.StatusForbidden},
		{"POST", routes.TopUpReturn("abcdefghijklmnopqrstuvwx"), "", http.StatusNotFound},
	} {
		if res := do(tc.method, tc.path, tc.host); res.StatusCode != tc.want {
			t.Errorf("%s %s (host %q): status %d, want %d", tc.method, tc.path, tc.host, res.StatusCode, tc.want)
		}
	}
}
