package web_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// A request refused for its own size (a bank's callback, or a link, with
// a query longer than the server reads) is answered with its 4xx status
// and a page saying the request was too large, never "something went
// wrong on our side" (found probing the callback with a 9,000-digit
// trackId: 431 titled as an internal error).
func TestOversizedRequestsSayTooLarge(t *testing.T) {
	t.Parallel()
	app := apptest.Start(t, storetest.New(t, store.SQLite), apptest.Options{})
	c := app.NewClient(t)
	long := strings.Repeat("9", 9000)
	for _, tt := range []struct{ name, path string }{
		{"callback", routes.TopUpReturn("abcdefghijklmnopqrstuvwx") + "?trackId=" + long},
		{"page", routes.SignIn + "?x=" + long},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The server answers before it has read the whole request, and
			// closes: the rest, unread, can reset the connection under the
			// answer on a loaded machine. A reset is asked again.
			var res *http.Response
			var err error
			for range 5 {
				if res, err = c.HTTP.Get(app.URL + tt.path); err == nil || !errors.Is(err, syscall.ECONNRESET) {
					break
				}
			}
			if err != nil {
				t.Fatalf("GET %s…: %v", tt.path[:40], err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			r := apptest.Response{Status: res.StatusCode, Body: string(body)}
			if r.Status < 400 || r.Status >= 500 {
				t.Fatalf("GET %s…: %d, want a 4xx", tt.path[:40], r.Status)
			}
			msg := apptest.Parse(r.Body).TestID("message")
			if msg == nil {
				t.Fatalf("no message page: %.300s", r.Body)
			}
			if got, want := msg.Text(), i18n.T(i18n.FA, "error.too_large_title"); !strings.Contains(got, want) {
				t.Errorf("page says %q, want %q", got, want)
			}
		})
	}
}
