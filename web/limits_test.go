package web_test

// Oversized bodies and slow clients, tried over a real socket against the
// app as serve runs it (server.New's Fiber app on a listener): requests are
// written by hand, byte by byte where the attack needs it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/web"
)

// rawConn is one hand-written HTTP/1.1 connection to the app.
type rawConn struct {
	net.Conn
	br     *bufio.Reader
	dialed time.Time
}

func dialApp(app *apptest.App) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(app.URL, "http://"), 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{Conn: c, br: bufio.NewReader(c), dialed: time.Now()}, nil
}

// answer reads the status of the app's answer, waiting at most within.
// status 0 with err: no answer (the connection was closed or reset
// without one, or within passed: see isTimeout).
func (rc *rawConn) answer(within time.Duration) (int, error) {
	if err := rc.SetReadDeadline(time.Now().Add(within)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // only the status matters
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// closedByPeer waits (at most within) for the app to close the connection.
func (rc *rawConn) closedByPeer(within time.Duration) error {
	if err := rc.SetReadDeadline(time.Now().Add(within)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, rc.br)
	if isTimeout(err) {
		return fmt.Errorf("still open after %v", within)
	}
	return nil // EOF (nil from Copy) or reset: closed either way
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// requestHead is a request line and headers, ended by the blank line.
func requestHead(app *apptest.App, method, path string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, strings.TrimPrefix(app.URL, "http://"))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// cookieHeader is the Cookie header a browser with c's cookies would send.
func cookieHeader(app *apptest.App, c *apptest.Client) string {
	u, _ := url.Parse(app.URL)
	var parts []string
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return "Cookie: " + strings.Join(parts, "; ")
}

// dbState counts what an accepted request could have written.
func dbState(t *testing.T, db *store.DB) map[string]int64 {
	t.Helper()
	state := storetest.Rows(t, db, "users", "sessions", "wallets", "topups", "topup_events", "ledger_transactions", "ledger_postings",
		"gateway_calls", "auth_throttles", "api_tokens", "idempotency_keys")
	state["balances"] = ledgertest.WalletsTotal(t, db)
	state["credited"] = topuptest.Count(t, db, topup.StatusCredited)
	state["returned"] = int64(len(topuptest.Select(t, db, func(p topup.TopUp) bool { return p.ReturnedAt != nil })))
	return state
}

// TestOversizedBodiesAreRefused: a body over web.MaxBodyBytes, on the
// sign-in form, the bank's callback and the API, is answered 413 (or the
// connection is closed) without reaching a handler: nothing changes in
// the database. The same requests with a body just under the limit are
// served, so the refusal is the limit's and not something else's.
func TestOversizedBodiesAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{})
		// A user with a payment the bank has just paid (its callback
		// would credit it) and an API token that may top up.
		payer, payURL := app.StartTopUp(t, "big@example.com", "10000")
		authority := apptest.Authority(payURL)
		if _, err := app.Server.Bank.Pay(authority); err != nil {
			t.Fatal(err)
		}
		first := topuptest.First(t, db)
		publicID, userID := first.PublicID, first.UserID
		apiSecret, _, err := app.Server.Tokens.Create(context.Background(), apitoken.CreateInput{UserID: userID, Name: "big", Scope: string(apitoken.ScopeTopUp)})
		if err != nil {
			t.Fatal(err)
		}
		signer := app.NewClient(t) // an anonymous visitor at the sign-in form
		signInCSRF := apptest.Input(signer.Get(routes.SignIn).Body, "_csrf")

		// Each target: its request head without Content-Length or
		// Transfer-Encoding, and a body of n bytes that it would accept.
		type target struct {
			name string
			head func(framing string) string
			body func(n int) string
		}
		form := func(fields url.Values, n int) string {
			s := fields.Encode() + "&pad="
			return s + strings.Repeat("x", max(n-len(s), 0))
		}
		targets := []target{
			{"sign-in form",
				func(framing string) string {
					return requestHead(app, "POST", routes.SignIn, cookieHeader(app, signer), "Content-Type: application/x-www-form-urlencoded", framing)
				},
				func(n int) string {
					return form(url.Values{"_csrf": {signInCSRF}, "email": {"big@example.com"}, "password": {"correct horse battery"}}, n)
				}},
			{"bank callback",
				func(framing string) string {
					return requestHead(app, "POST", routes.TopUpReturn(publicID), "Content-Type: application/x-www-form-urlencoded", framing)
				},
				func(n int) string { return form(url.Values{"Authority": {authority}, "Status": {"OK"}}, n) }},
			{"API top-up",
				func(framing string) string {
					return requestHead(app, "POST", routes.APITopUps, "Authorization: Bearer "+apiSecret,
						"Idempotency-Key: big-body-1", "Content-Type: application/json", framing)
				},
				func(n int) string { // JSON padded with white space
					s := `{"amount_rials": 100000}`
					return s + strings.Repeat(" ", max(n-len(s), 0))
				}},
		}

		before := dbState(t, db)
		for _, tg := range targets {
			// Declared: the Content-Length alone is refused, before a byte
			// of the body is sent (so the answer is certain to arrive).
			for _, n := range []int{web.MaxBodyBytes + 1, 10 << 20} {
				rc, err := dialApp(app)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(rc, tg.head("Content-Length: "+strconv.Itoa(n))); err != nil {
					t.Fatal(err)
				}
				if status, err := rc.answer(30 * time.Second); status != http.StatusRequestEntityTooLarge {
					t.Errorf("%s, Content-Length %d: status %d (%v), want 413", tg.name, n, status, err)
				} else if err := rc.closedByPeer(30 * time.Second); err != nil {
					t.Errorf("%s, Content-Length %d: connection %v after 413", tg.name, n, err)
				}
				_ = rc.Close()
			}
			// Chunked, no length given: refused once the body read passes
			// the limit. The client may still be writing when the app
			// closes, so the 413 can be lost in the reset: a closed
			// connection is an acceptable answer; a served request is not.
			rc, err := dialApp(app)
			if err != nil {
				t.Fatal(err)
			}
			body := tg.body(web.MaxBodyBytes + 4096)
			go func() {
				if _, err := io.WriteString(rc, tg.head("Transfer-Encoding: chunked")); err != nil {
					return
				}
				for len(body) > 0 {
					chunk := body[:min(4096, len(body))]
					body = body[len(chunk):]
					if _, err := fmt.Fprintf(rc, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
						return // the app closed the connection
					}
				}
				_, _ = io.WriteString(rc, "0\r\n\r\n")
			}()
			status, err := rc.answer(30 * time.Second)
			if status != http.StatusRequestEntityTooLarge && (status != 0 || isTimeout(err)) {
				t.Errorf("%s, chunked %d bytes: status %d (%v), want 413 or the connection closed", tg.name, web.MaxBodyBytes+4096, status, err)
			}
			_ = rc.Close()
		}
		if after := dbState(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("oversized requests changed the database:\nbefore %v\nafter  %v", before, after)
		}

		// Just under the limit, the same requests are served.
		under := web.MaxBodyBytes - 1024
		for _, tg := range targets {
			rc, err := dialApp(app)
			if err != nil {
				t.Fatal(err)
			}
			body := tg.body(under)
			if _, err := io.WriteString(rc, tg.head("Content-Length: "+strconv.Itoa(len(body)))+body); err != nil {
				t.Fatal(err)
			}
			status, err := rc.answer(60 * time.Second)
			_ = rc.Close()
			want := map[string]int{"sign-in form": http.StatusSeeOther, "bank callback": http.StatusSeeOther, "API top-up": http.StatusCreated}[tg.name]
			if status != want {
				t.Errorf("%s, %d bytes (under the limit): status %d (%v), want %d", tg.name, len(body), status, err, want)
			}
		}
		after := dbState(t, db)
		if after["sessions"] != before["sessions"]+1 || after["credited"] != 1 || after["topups"] != before["topups"]+1 {
			t.Errorf("bodies under the limit: sessions %d → %d, credited %d, payments %d → %d; want a new session, the payment credited, an API payment",
				before["sessions"], after["sessions"], after["credited"], before["topups"], after["topups"])
		}
		if got := payer.Balance(); got != 100_000 {
			t.Errorf("balance %d after the callback under the limit, want 100000", got)
		}
		apptest.CheckInvariants(t, db)
	})
}

// slowAttack is one kind of slow client: first is written at once, then
// trickle(i) is the i-th byte written, one every pace, until the app cuts
// the connection off.
type slowAttack struct {
	name    string
	first   string
	trickle func(i int) byte
}

// cycle returns s then its tail from the index from, forever.
func cycle(s string, from int) func(i int) byte {
	return func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return s[from+(i-len(s))%(len(s)-from)]
	}
}

// TestSlowClientsAreCutOff: with HTTP_READ_TIMEOUT, a client reading
// one request slower than that is answered 408 (or just disconnected) no
// sooner than the time-out after it connected and within a generous bound
// after it; while several such clients hang, normal requests are answered
// (before any of them is cut off: they do not wait for them). The kinds:
// a slowloris (headers byte by byte, never ending), a body declared within
// the limit that stalls, and a body trickled byte by byte.
//
// Not parallel: it measures answers against the read time-out (normal
// requests answered before any slow client is cut off, 5s after it
// connected), which other whole-app tests loading the machine would make
// late.
func TestSlowClientsAreCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the read time-out three times")
	}
	const (
		readTimeout = 5 * time.Second
		slack       = 25 * time.Second // a loaded machine answers late, never early
		pace        = 100 * time.Millisecond
		clients     = 6
	)
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{Env: map[string]string{"HTTP_READ_TIMEOUT": readTimeout.String()}})
	if got := app.Server.App.Config().ReadTimeout; got != readTimeout {
		t.Fatalf("the app's read time-out is %v, want HTTP_READ_TIMEOUT's %v", got, readTimeout)
	}
	if got := app.Server.App.Config().BodyLimit; got != web.MaxBodyBytes {
		t.Fatalf("the app's body limit is %d, want %d", got, web.MaxBodyBytes)
	}
	anon := app.NewClient(t)
	csrf := apptest.Input(anon.Get(routes.SignIn).Body, "_csrf")
	signIn := url.Values{"_csrf": {csrf}, "email": {"slow@example.com"}, "password": {"correct horse battery"}}.Encode()
	bodyHead := func(length int) string {
		return requestHead(app, "POST", routes.SignIn, cookieHeader(app, anon), "Content-Type: application/x-www-form-urlencoded",
			"Content-Length: "+strconv.Itoa(length))
	}
	attacks := []slowAttack{
		{"slowloris: headers byte by byte", "",
			cycle(fmt.Sprintf("GET "+routes.SignIn+" HTTP/1.1\r\nHost: %s\r\nX-Slow: a\r\n", strings.TrimPrefix(app.URL, "http://")), len("GET "+routes.SignIn+" HTTP/1.1\r\n"))},
		{"a body declared within the limit, then nothing", bodyHead(60_000) + signIn, nil},
		{"a body trickled byte by byte", bodyHead(60_000), cycle(signIn+"&pad=x", len(signIn)+5)},
	}
	normal := &http.Client{Timeout: slack, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			before := dbState(t, db)
			var closed atomic.Int32
			var started, done sync.WaitGroup
			started.Add(clients)
			type outcome struct {
				took   time.Duration
				status int
				err    error
			}
			outcomes := make([]outcome, clients)
			for i := range clients {
				done.Add(1)
				go func() {
					defer done.Done()
					rc, err := dialApp(app)
					if err != nil {
						outcomes[i].err = err
						started.Done()
						return
					}
					defer rc.Close()
					stop := make(chan struct{})
					go func() { // the attacker's writes
						first := at.first
						if first == "" && at.trickle != nil {
							first = string(at.trickle(0))
						}
						_, err := io.WriteString(rc, first)
						started.Done()
						if err != nil || at.trickle == nil {
							return
						}
						tick := time.NewTicker(pace)
						defer tick.Stop()
						for n := 1; ; n++ {
							select {
							case <-stop:
								return
							case <-tick.C:
							}
							if _, err := rc.Write([]byte{at.trickle(n)}); err != nil {
								return
							}
						}
					}()
					status, err := rc.answer(readTimeout + slack)
					outcomes[i] = outcome{took: time.Since(rc.dialed), status: status, err: err}
					closed.Add(1)
					close(stop)
				}()
			}
			started.Wait()

			// All of them hang: normal requests are still answered, and
			// before the first slow client is cut off.
			for _, path := range []string{routes.Healthz, routes.SignIn} {
				res, err := normal.Get(app.URL + path)
				if err != nil {
					t.Fatalf("GET %s while %d slow clients hang: %v", path, clients, err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode != http.StatusOK {
					t.Errorf("GET %s while %d slow clients hang: %d", path, clients, res.StatusCode)
				}
			}
			if n := closed.Load(); n != 0 {
				t.Errorf("%d slow clients were cut off before the normal requests were answered: they waited on them, or the read time-out is shorter than %v", n, readTimeout)
			}

			done.Wait()
			for i, o := range outcomes {
				switch {
				case isTimeout(o.err):
					t.Errorf("client %d: still connected %v after it connected; the read time-out is %v", i, o.took, readTimeout)
				case o.status != http.StatusRequestTimeout && o.status != 0:
					t.Errorf("client %d: answered %d, want 408 or the connection closed", i, o.status)
				case o.took < readTimeout-100*time.Millisecond:
					t.Errorf("client %d: cut off after %v, before the read time-out %v (%d %v)", i, o.took, readTimeout, o.status, o.err)
				}
			}
			if after := dbState(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("slow clients changed the database:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
