package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A request for another name of the app (http://localhost:PORT while
// BASE_URL is http://127.0.0.1:PORT) is sent to BASE_URL's host before any
// cookie is set, keeping method, path and query (issue 10, point 8);
// health checks answer wherever they arrive.
func TestOtherHostRedirectsToBaseURL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		method  string
		path    string
		host    string // "" for BASE_URL's own host
		headers map[string]string
		want    int // 307 means redirected to the same path on BASE_URL
	}{
		{"own host", nil, "GET", routes.SignIn, "", nil, http.StatusOK},
		{"own host, upper case", nil, "GET", routes.SignIn, "UPPER", nil, http.StatusOK},
		{"other name", nil, "GET", routes.SignIn + "?lang=en&next=" + url.QueryEscape(routes.Wallet), "localhost", nil, http.StatusTemporaryRedirect},
		{"other name, a form post", nil, "POST", routes.SignIn, "localhost", nil, http.StatusTemporaryRedirect},
		{"other name, the bank's callback", nil, "POST", routes.TopUpReturn("abc") + "?Authority=A1&Status=OK", "localhost", nil, http.StatusTemporaryRedirect},
		{"other name, a double-slash path", nil, "GET", "//evil.example/x", "localhost", nil, http.StatusTemporaryRedirect},
		{"other name, health check", nil, "GET", routes.Healthz, "localhost", nil, http.StatusOK},
		{"other name, readiness check", nil, "GET", routes.Readyz, "localhost", nil, http.StatusOK},
		// The API's bearer token would be dropped by a client following a
		// redirect to another host: it is answered where it arrives.
		{"other name, the API without a token", nil, "GET", routes.APIWallet, "localhost", nil, http.StatusUnauthorized},
		{"other name, the API's document", nil, "GET", routes.APIOpenAPI, "localhost", nil, http.StatusOK},
		{"other name, a path that only starts like the API", nil, "GET", "/apix", "localhost", nil, http.StatusTemporaryRedirect},
		{"forwarded host believed from a trusted proxy", map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}, "GET", routes.SignIn, "localhost",
			map[string]string{"X-Forwarded-Host": "BASE"}, http.StatusOK},
		{"forwarded other host from a trusted proxy", map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}, "GET", routes.SignIn, "",
			map[string]string{"X-Forwarded-Host": "wallet.example"}, http.StatusTemporaryRedirect},
		{"forwarded host ignored from anyone else", nil, "GET", routes.SignIn, "localhost",
			map[string]string{"X-Forwarded-Host": "BASE"}, http.StatusTemporaryRedirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{Env: tc.env})
			base, _ := url.Parse(app.URL)
			c := app.NewClient(t)
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, app.URL+tc.path, strings.NewReader("a=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			switch tc.host {
			case "":
			case "UPPER":
				req.Host = strings.ToUpper(base.Host)
			default:
				req.Host = tc.host + ":" + base.Port()
			}
			if strings.HasPrefix(tc.path, "//") {
				req.URL.Opaque = tc.path // sent as is
			}
			for k, v := range tc.headers {
				req.Header.Set(k, strings.ReplaceAll(v, "BASE", base.Host))
			}
			r := c.Do(req)
			if r.Status != tc.want {
				t.Fatalf("%s %s (Host %s): %d, want %d (Location %q)", tc.method, tc.path, req.Host, r.Status, tc.want, r.Location)
			}
			if tc.want != http.StatusTemporaryRedirect {
				return
			}
			if strings.HasPrefix(tc.path, "//") {
				// Whatever the request line said, the redirect stays on BASE_URL.
				if !strings.HasPrefix(r.Location, app.URL+"/") {
					t.Errorf("Location %q leaves %s", r.Location, app.URL)
				}
			} else if want := app.URL + tc.path; r.Location != want {
				t.Errorf("Location %q, want %q", r.Location, want)
			}
			if ck := r.Header.Values("Set-Cookie"); len(ck) > 0 {
				t.Errorf("cookies set on the other host: %q", ck)
			}
		})
	}
}
