package account_test

import (
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// blackhole accepts SMTP connections and never says a word (a mail server
// that hangs) until stop is called.
func blackhole(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}

// A mail server that hangs blocks nothing (issue 18, item 3): with the
// sender stuck on it, "forgot password" answers at once, a top-up is paid,
// called back and credited, and the mails wait in their table, queued.
func TestAHangingMailServerBlocksNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		addr, stop := blackhole(t)
		app := apptest.Start(t, db, apptest.Options{
			Env:        map[string]string{"SMTP_URL": "smtp://" + addr, "MAIL_INTERVAL": "20ms"},
			Background: true,
		})
		// Registered after the app's: runs before its shutdown, which then
		// does not wait for the stuck sender's 30 seconds.
		t.Cleanup(stop)
		app.NewClient(t).SignUp("patient@example.com")
		c := app.NewClient(t)
		for i := range 2 {
			start := time.Now()
			r := c.Submit(routes.PasswordForgot, routes.PasswordForgot, url.Values{"email": {"patient@example.com"}})
			if took := time.Since(start); r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("forgot-sent") == nil || took > 5*time.Second {
				t.Fatalf("forgot %d with the mail server hanging: %d after %v", i+1, r.Status, took)
			}
		}
		start := time.Now()
		payer, payURL := app.StartTopUp(t, "payer@example.com", "50000")
		back := payer.PayAtBank(payURL, "pay")
		if r := payer.Get(back); apptest.TopUpStatus(r.Body) != "credited" || time.Since(start) > 10*time.Second {
			t.Fatalf("the credit with the mail server hanging: %q after %v", apptest.TopUpStatus(r.Body), time.Since(start))
		}
		queued := 0
		for _, m := range mailtest.Rows(t, db) {
			if m.Status == mail.StatusQueued {
				queued++
			}
		}
		if n := queued; n != 2 {
			t.Fatalf("%d mails queued, want both reset mails", n)
		}
	})
}
