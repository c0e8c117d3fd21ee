package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
)

// TestFailoverToTheNextGateway runs serve against a standalone bank
// offering Zarinpal and Zibal, on SQLite and PostgreSQL, and takes
// Zarinpal down through the bank's fault injection (every Zarinpal
// operation answers 503). New top-ups asking for Zarinpal fail (no money
// taken) until its breaker opens, then go to Zibal, the next healthy
// gateway: the answer sends the payer to Zibal's page and the row says
// zibal. A payment already at Zarinpal, paid there while it is down, is
// never restarted elsewhere: its callback says we are confirming, it
// keeps its gateway and authority, nothing about it is asked of Zibal.
// When Zarinpal comes back it is verified there and credited once.
func TestFailoverToTheNextGateway(t *testing.T) {
	eachDialect(t, failover)
}

func failover(t *testing.T, d store.Dialect) {
	dbURL := storetest.URL(t, d)
	_, bankURL := startBank(t)
	bank := newBankClient(bankURL)
	srv, appURL := newServe(t, "serve", dbURL, bankURL, map[string]string{
		// One failure in two calls opens a breaker; it lets a probe through
		// after 2s.
		"BREAKER_MIN_REQUESTS": "1", "BREAKER_FAILURE_PERCENT": "50", "BREAKER_OPEN_TIMEOUT": "2s",
		"WORKER_INTERVAL": "100ms", "PENDING_RECHECK_AFTER": "500ms",
		"WORKER_BACKOFF_BASE": "300ms", "WORKER_BACKOFF_MAX": "1s",
		// WORKER_ABANDONED_AFTER stays 2m: the worker leaves the unpaid
		// payment alone, and only the failing submits count towards
		// Zarinpal's breaker.
	})
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, dbURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	email := fmt.Sprintf("failover-%s@e2e.example", d)
	br := signedUp(ctx, t, appURL, email)
	submit := func(tomans int64) response {
		t.Helper()
		r, err := br.topUpAt(ctx, tomans, "zarinpal")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// A payment at Zarinpal, the payer at its page.
	gw, waiting, ok := toBank(bankURL, submit(3000))
	if !ok || gw.name != "zarinpal" {
		t.Fatalf("the first top-up went to %q", gw.name)
	}
	before, _ := topUpByAuthority(t, db, waiting)

	// Zarinpal down. Top-ups asking for it fail, no money taken, until
	// its breaker opens; then they go to Zibal.
	down := sandbank.OpFaults{ErrorRate: 1}
	bank.setFaults(t, sandbank.Faults{Ops: map[string]sandbank.OpFaults{"request": down, "verify": down, "inquiry": down, "unverified": down}})
	var moved string
	failedSubmits := 0
	testwait.Eventually(t, 30*time.Second, "a top-up asking for Zarinpal to go to Zibal", func() bool {
		r := submit(4000)
		gw, token, ok := toBank(bankURL, r)
		switch {
		case ok && gw.name == "zibal":
			moved = token
			return true
		case r.status == http.StatusServiceUnavailable:
			failedSubmits++
			return false
		}
		t.Fatalf("a top-up while Zarinpal is down: %d %q (gateway %q)", r.status, r.location, gw.name)
		return false
	})
	if p, ok := topUpByAuthority(t, db, moved); !ok || p.Gateway != "zibal" || p.Status != topup.StatusAwaitingPayment {
		t.Fatalf("the moved top-up: %s %s", p.Gateway, p.Status)
	}
	if n := apptest.Count(t, db, `SELECT COUNT(*) FROM topups WHERE gateway = 'zarinpal' AND amount_rials = 40000 AND status <> 'failed'`); n != 0 {
		t.Errorf("%d top-ups left open at the down gateway", n)
	}

	// The payment already at Zarinpal is paid there while it is down:
	// confirming, still Zarinpal's, nothing asked of Zibal.
	cb, status, err := bank.finishAt(ctx, "zarinpal", waiting, "pay")
	if err != nil || status != http.StatusOK {
		t.Fatalf("pay: %d %v", status, err)
	}
	r, err := br.back(ctx, cb)
	if st := apptest.TopUpStatus(r.body); err != nil || r.status != http.StatusOK || st == "credited" || st == "failed" {
		t.Fatalf("the callback while its gateway is down: %d %q %v; want a page saying we are confirming", r.status, st, err)
	}
	p, _ := topUpByAuthority(t, db, waiting)
	if p.ID != before.ID || p.Gateway != "zarinpal" || p.Status.Terminal() {
		t.Fatalf("the payment at the down gateway is now %s at %s", p.Status, p.Gateway)
	}
	if n := apptest.Count(t, db, `SELECT COUNT(*) FROM gateway_calls WHERE topup_id = ? AND gateway <> 'zarinpal'`, p.ID); n != 0 {
		t.Errorf("%d calls about the Zarinpal payment went to another gateway", n)
	}

	// Zarinpal is back: verified there, credited once.
	bank.clearFaults(t)
	if p, ok := waitStatus(ctx, db, waiting, topup.StatusCredited, 60*time.Second); !ok || p.Gateway != "zarinpal" {
		t.Fatalf("after Zarinpal came back: %s (%s) at %s", p.Status, p.StatusReason, p.Gateway)
	}
	if bal := userBalances(t, db)[email]; bal != 30_000 {
		t.Errorf("balance %d, want 30000", bal)
	}
	if bp := bank.topUps(t)[waiting]; bp.State != sandbank.StateVerified || bp.Gateway != "zarinpal" {
		t.Errorf("the bank holds the payment as %s at %s", bp.State, bp.Gateway)
	}
	checkLedger(t, db)
	t.Logf("%s: %d top-ups failed (no money taken) before Zarinpal's breaker opened", d, failedSubmits)
}
