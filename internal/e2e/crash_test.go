package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestCrashRestart drives concurrent top-ups through one serve process
// (SQLite file, and PostgreSQL) against a faulty standalone bank, and
// kills serve with SIGKILL at random moments, restarting it each time.
// Clients retry a step or move on. After the chaos the faults are cleared
// and the worker drains: the bank's VERIFIED set equals our credited set,
// everything the bank took ended credited exactly once, balances equal
// ledgers and what each user paid, and no payment is left open.
//
// E2E_SEED=N replays a run's random decisions (kill moments, client
// choices, the bank's faults); timing still differs between runs.
func TestCrashRestart(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			crashTest(t, d)
		})
	}
}

// What a client did with one top-up.
type crashTopUp struct {
	email     string
	authority string // "" when the client never reached the bank page
	rials     int64
	action    string // paid, cancelled, expired (too late to pay), left (at the bank page), none
}

func crashSeed(t *testing.T) uint64 {
	if s := os.Getenv("E2E_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

func crashTest(t *testing.T, dialect store.Dialect) {
	seed := crashSeed(t)
	t.Logf("seed %d (E2E_SEED=%d replays it)", seed, seed)
	started := time.Now()
	dbURL := storetest.URL(t, dialect)

	_, bankURL := startBank(t,
		"--seed", fmt.Sprint(seed%1_000_000+1),
		"--latency", "verify=20ms,request=10ms",
		"--error-rate", "verify=0.1",
		"--drop-rate", "verify=0.05",
		"--commit-then-hang", "--commit-hang-rate", "0.1", "--hang", "500ms",
		// An authority left at the bank page expires soon, so the worker
		// can fail it within the test (a real bank's live for minutes).
		"--authority-ttl", "5s")
	bank := newBankClient(bankURL)
	srv, appURL := newServe(t, "serve", dbURL, bankURL, map[string]string{
		"GATEWAY_ATTEMPT_TIMEOUT": "300ms",
		"GATEWAY_BUDGET":          "1s",
		"WORKER_INTERVAL":         "100ms",
		"WORKER_ABANDONED_AFTER":  "1s",
		"WORKER_STALE_CREATED":    "2s",
		"BREAKER_OPEN_TIMEOUT":    "1s",
	})
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}

	users, total, clients := 16, 200, 4
	if testing.Short() {
		users, total = 8, 60
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	browsers := make([]*browser, users)
	emails := make([]string, users)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for u := range users {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			browsers[u] = newBrowser(appURL)
			emails[u] = fmt.Sprintf("crash%02d@e2e.example", u)
			if err := browsers[u].signUp(ctx, emails[u]); err != nil {
				t.Errorf("sign up: %v", err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The chaos: SIGKILL serve every 0.5–2 s and restart it, until the
	// clients are done and it was killed at least three times.
	var (
		kills       atomic.Int64
		clientsDone = make(chan struct{})
		chaosDone   = make(chan struct{})
	)
	go func() {
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(seed, 0))
		for {
			select {
			case <-clientsDone:
				if kills.Load() >= 3 {
					return
				}
			default:
			}
			if !sleepCtx(ctx, time.Duration(500+rng.IntN(1500))*time.Millisecond) {
				return
			}
			srv.kill()
			kills.Add(1)
			if err := srv.start(); err != nil {
				t.Errorf("restart after kill %d: %v", kills.Load(), err)
				return
			}
		}
	}()

	var (
		mu         sync.Mutex
		results    []crashTopUp
		next       atomic.Int64
		connErrors atomic.Int64
	)
	for g := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)+1))
			for i := 0; ; i++ {
				k := next.Add(1)
				if k > int64(total) || ctx.Err() != nil {
					return
				}
				u := g + (i*clients)%users
				u %= users
				r := crashClient{t: t, br: browsers[u], bank: bank, bankURL: bankURL, rng: rng, connErrors: &connErrors}
				res := r.topUp(ctx, emails[u], int64(1000+rng.IntN(20000)))
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(clientsDone)
	<-chaosDone
	if ctx.Err() != nil {
		t.Fatalf("clients did not finish in time")
	}
	if t.Failed() {
		t.FailNow()
	}
	driven := time.Since(started)

	// Calm: no faults, one running serve; the worker must resolve the rest.
	faultStats := bank.stats()
	bank.clearFaults(t)
	db := openDB(t, dbURL)
	waited := drain(t, db, 90*time.Second)

	if n := kills.Load(); n < 3 {
		t.Errorf("serve was killed %d times, want at least 3", n)
	}
	ours := allPayments(t, db)
	byAuthority := map[string]payment.Payment{}
	for _, p := range ours {
		if p.Authority != nil {
			byAuthority[*p.Authority] = p
		}
	}
	want := map[string]int64{}
	actions := map[string]int{}
	for _, r := range results {
		actions[r.action]++
		if r.authority == "" {
			continue
		}
		p, ok := byAuthority[r.authority]
		if !ok {
			t.Errorf("%s: the client was sent to the bank with authority %s, which no payment of ours holds", r.email, r.authority)
			continue
		}
		switch r.action {
		case "paid":
			want[r.email] += r.rials
			if p.Status != payment.StatusCredited {
				t.Errorf("paid at the bank, but payment %s ended %s: %s", p.PublicID, p.Status, p.StatusReason)
			}
		case "cancelled", "expired", "left":
			if p.Status != payment.StatusFailed {
				t.Errorf("%s at the bank, but payment %s ended %s: %s", r.action, p.PublicID, p.Status, p.StatusReason)
			}
		}
		if p.AmountRials != r.rials {
			t.Errorf("payment %s: amount %d, the client asked for %d", p.PublicID, p.AmountRials, r.rials)
		}
	}
	for email, bal := range userBalances(t, db) {
		if bal != want[email] {
			t.Errorf("%s: balance %d rials, paid %d at the bank", email, bal, want[email])
		}
	}
	checkAgainstBank(t, ours, bank.payments(t))
	checkLedger(t, db)
	checkNoOverlappingVerifies(t, db)

	statuses := map[string]int{}
	for _, p := range ours {
		reason, _, _ := strings.Cut(p.StatusReason, ":")
		statuses[string(p.Status)+" ("+reason+")"]++
	}
	t.Logf("%s: %d top-ups by %d clients for %d users in %s with %d kills; client outcomes %v; %d client requests failed (connection); payments %v; drained in %s; %d restarts logged",
		dialect, len(results), clients, users, driven.Round(time.Millisecond), kills.Load(), actions, connErrors.Load(), statuses,
		waited.Round(time.Millisecond), srv.logCount("==== serve run")-1)
	t.Logf("bank fault stats during the chaos: %s", faultStats)
}

// crashClient is one top-up by a user while serve may die at any moment.
type crashClient struct {
	t       *testing.T
	br      *browser
	bank    *bankClient
	bankURL string
	rng     *rand.Rand
	// connErrors counts requests that died with the server.
	connErrors *atomic.Int64
}

// retry runs step until it reports done, pausing between attempts, for at
// most limit.
func retry(ctx context.Context, limit time.Duration, step func() (done bool)) bool {
	deadline := time.Now().Add(limit)
	for {
		if step() {
			return true
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 100*time.Millisecond) {
			return false
		}
	}
}

func (c *crashClient) topUp(ctx context.Context, email string, tomans int64) crashTopUp {
	res := crashTopUp{email: email, rials: tomans * 10, action: "none"}
	var csrf, token string
	if !retry(ctx, 20*time.Second, func() bool {
		var err error
		csrf, token, err = c.br.topUpForm(ctx)
		if err != nil && !errors.Is(err, errNotReady) {
			c.connErrors.Add(1)
		}
		return err == nil
	}) {
		return res
	}

	// Submit; after a connection error, usually submit the same form again
	// (the per-form token makes that safe), sometimes give up.
	var location string
	retry(ctx, 20*time.Second, func() bool {
		r, err := c.br.submitTopUp(ctx, csrf, token, tomans)
		switch {
		case err != nil:
			c.connErrors.Add(1)
			return c.rng.IntN(10) == 0 // give up: a payment may be left behind
		case r.status == http.StatusSeeOther:
			location = r.location
			return true
		case r.status == http.StatusServiceUnavailable && r.retryAfter != "":
			return false // the first submit is still in progress
		case r.status == http.StatusServiceUnavailable:
			return true // the gateway could not start it: no money taken
		case r.status == http.StatusTooManyRequests:
			sleepCtx(ctx, time.Second)
			return false
		}
		c.t.Errorf("%s: submit top-up: unexpected status %d", email, r.status)
		return true
	})
	res.authority = authorityOf(c.bankURL, location)
	if res.authority == "" {
		if location != "" && !strings.HasPrefix(location, "/payments/") {
			c.t.Errorf("%s: submit top-up redirected to %q", email, location)
		}
		return res
	}

	// At the bank: pay (mostly), cancel, or leave the page.
	roll := c.rng.IntN(100)
	if roll >= 90 {
		res.action = "left"
		return res
	}
	action := "pay"
	if roll >= 80 {
		action = "cancel"
	}
	redirect, status, err := c.bank.finish(ctx, res.authority, action)
	switch {
	case err == nil && status == http.StatusOK && action == "pay":
		res.action = "paid"
	case err == nil && status == http.StatusOK:
		res.action = "cancelled"
	case err == nil && status == http.StatusConflict:
		res.action = "expired" // reached the bank after the authority expired
		return res
	default:
		c.t.Errorf("%s: %s %s: status %d: %v", email, action, res.authority, status, err)
		return res
	}

	// Back from the bank, unless the payer closes the window.
	if c.rng.IntN(100) < 15 {
		return res
	}
	retry(ctx, 10*time.Second, func() bool {
		r, err := c.br.do(ctx, http.MethodGet, redirect, nil)
		switch {
		case err != nil:
			c.connErrors.Add(1)
			return c.rng.IntN(4) == 0 // the worker will find it
		case r.status != http.StatusOK:
			c.t.Errorf("%s: callback: status %d", email, r.status)
		}
		return true
	})
	return res
}
