package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// What a user does with one top-up in TestTwoInstancesOnePostgres.
type scenario int

const (
	paidDupCallbacks  scenario = iota // pay; callbacks on both instances at once
	paidSilent                        // pay; never come back (the workers must find it)
	paidOneCallback                   // pay; come back once, then a late duplicate on the other instance
	cancelledCallback                 // cancel; callbacks on both instances at once
	cancelledSilent                   // cancel; never come back
	numScenarios
)

func (s scenario) paid() bool { return s <= paidOneCallback }

// TestTwoInstancesOnePostgres runs two serve processes with workers on one
// PostgreSQL schema and one standalone bank. Users top up on "their"
// instance; callbacks are duplicated onto the other instance at the same
// moment, some payments are never called back, some are cancelled. After
// the workers drain: one ledger entry per paid payment, balances equal
// ledgers and what each user paid, the bank's VERIFIED set is our credited
// set, and no payment was ever verified by two actors at the same time.
func TestTwoInstancesOnePostgres(t *testing.T) {
	started := time.Now()
	dbURL := storetest.URL(t, store.Postgres)
	_, bankURL := startBank(t)
	bank := newBankClient(bankURL)
	env := map[string]string{"WORKER_INTERVAL": "100ms", "WORKER_ABANDONED_AFTER": "1s", "WORKER_CONCURRENCY": "4"}
	srvA, urlA := newServe(t, "serve-a", dbURL, bankURL, env)
	srvB, urlB := newServe(t, "serve-b", dbURL, bankURL, env)
	// Both start (and migrate the one schema) at the same time.
	var wg sync.WaitGroup
	for _, p := range []*proc{srvA, srvB} {
		wg.Go(func() {
			if err := p.start(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	instances := []string{urlA, urlB}

	users, perUser := 30, 5
	if testing.Short() {
		users, perUser = 10, 5
	}
	type topUp struct {
		email     string
		authority string
		rials     int64
		scenario  scenario
	}
	var (
		mu     sync.Mutex
		topUps []topUp
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sem := make(chan struct{}, 10)
	for u := range users {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			own, other := instances[u%2], instances[(u+1)%2]
			br := newBrowser(own)
			email := fmt.Sprintf("user%02d@e2e.example", u)
			if err := br.signUp(ctx, email); err != nil {
				t.Errorf("sign up: %v", err)
				return
			}
			for j := range perUser {
				k := u*perUser + j
				sc := scenario((u + j) % int(numScenarios))
				tomans := int64(1000 + (k*137)%9000)
				csrf, token, err := br.topUpForm(ctx)
				if err != nil {
					t.Errorf("%s: %v", email, err)
					return
				}
				r, err := br.submitTopUp(ctx, csrf, token, tomans)
				if err != nil {
					t.Errorf("%s: submit: %v", email, err)
					return
				}
				authority := authorityOf(bankURL, r.location)
				if r.status != http.StatusSeeOther || authority == "" {
					t.Errorf("%s: submit: status %d location %q", email, r.status, r.location)
					return
				}
				action := "pay"
				if !sc.paid() {
					action = "cancel"
				}
				redirect, status, err := bank.finish(ctx, authority, action)
				if err != nil || status != http.StatusOK {
					t.Errorf("%s: %s %s: status %d: %v", email, action, authority, status, err)
					return
				}
				mu.Lock()
				topUps = append(topUps, topUp{email, authority, tomans * 10, sc})
				mu.Unlock()
				want := "credited"
				if !sc.paid() {
					want = "failed"
				}
				callback := func(base string) {
					r, err := br.do(ctx, http.MethodGet, onHost(redirect, base), nil)
					if err != nil {
						t.Errorf("%s: callback on %s: %v", email, base, err)
						return
					}
					if got := apptest.DataStatus(r.body); r.status != http.StatusOK || got != want {
						t.Errorf("%s: callback on %s: status %d, page says %q, want %q", email, base, r.status, got, want)
					}
				}
				switch sc {
				case paidDupCallbacks, cancelledCallback:
					var cb sync.WaitGroup
					for _, base := range []string{own, other, own, other} {
						cb.Go(func() { callback(base) })
					}
					cb.Wait()
				case paidOneCallback:
					callback(own)
					callback(other)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	driven := time.Since(started)

	db := openDB(t, dbURL)
	waited := drain(t, db, 60*time.Second)

	ours := allPayments(t, db)
	if len(ours) != len(topUps) {
		t.Errorf("%d payments in the database, %d top-ups made", len(ours), len(topUps))
	}
	byAuthority := map[string]payment.Payment{}
	for _, p := range ours {
		byAuthority[p.AuthorityString()] = p
	}
	want := map[string]int64{}
	paid := 0
	for _, tu := range topUps {
		p, ok := byAuthority[tu.authority]
		switch {
		case !ok:
			t.Errorf("no payment for authority %s", tu.authority)
		case tu.scenario.paid() && p.Status != payment.StatusCredited:
			t.Errorf("paid top-up %s (scenario %d) ended %s: %s", p.PublicID, tu.scenario, p.Status, p.StatusReason)
		case !tu.scenario.paid() && p.Status != payment.StatusFailed:
			t.Errorf("cancelled top-up %s (scenario %d) ended %s: %s", p.PublicID, tu.scenario, p.Status, p.StatusReason)
		}
		if tu.scenario.paid() {
			want[tu.email] += tu.rials
			paid++
		}
	}
	for email, bal := range userBalances(t, db) {
		if bal != want[email] {
			t.Errorf("%s: balance %d rials, paid %d", email, bal, want[email])
		}
	}
	bankPayments := bank.payments(t)
	checkAgainstBank(t, ours, bankPayments)
	checkLedger(t, db)
	checkNoOverlappingVerifies(t, db)

	verifies := map[int]int{}
	for _, bp := range bankPayments {
		verifies[bp.VerifyCount]++
	}
	t.Logf("%d users, %d top-ups (%d paid) on 2 instances in %s; drained in %s; verify calls per payment at the bank: %v",
		users, len(topUps), paid, driven.Round(time.Millisecond), waited.Round(time.Millisecond), verifies)
}

// checkNoOverlappingVerifies asserts from gateway_calls (shared by every
// instance) that no two verify attempts of one payment overlapped in time:
// one actor at a time asks the bank about a payment.
func checkNoOverlappingVerifies(t *testing.T, db *store.DB) {
	t.Helper()
	var calls []payment.GatewayCall
	if err := db.Gorm.Where("operation = ? AND payment_id IS NOT NULL AND outcome <> ?", "verify", "breaker_open").
		Order("payment_id, started_at").Find(&calls).Error; err != nil {
		t.Fatalf("gateway_calls: %v", err)
	}
	if len(calls) == 0 {
		t.Fatal("no verify calls recorded")
	}
	byPayment := map[int64][]payment.GatewayCall{}
	for _, c := range calls {
		byPayment[*c.PaymentID] = append(byPayment[*c.PaymentID], c)
	}
	overlaps := 0
	for id, cs := range byPayment {
		sort.Slice(cs, func(i, j int) bool { return cs[i].StartedAt.Before(cs[j].StartedAt) })
		// Sweep in start order, keeping the attempt that ends last so far.
		last := cs[0]
		for _, c := range cs[1:] {
			lastEnd := last.StartedAt.Add(time.Duration(last.DurationMS) * time.Millisecond)
			if c.StartedAt.Before(lastEnd) {
				overlaps++
				t.Errorf("payment %d: verify attempt %d (started %s, %dms, %s) overlaps attempt %d (started %s, %dms, %s)", id,
					c.ID, c.StartedAt.Format(time.RFC3339Nano), c.DurationMS, c.Outcome,
					last.ID, last.StartedAt.Format(time.RFC3339Nano), last.DurationMS, last.Outcome)
			}
			if end := c.StartedAt.Add(time.Duration(c.DurationMS) * time.Millisecond); end.After(lastEnd) {
				last = c
			}
		}
	}
	t.Logf("%d verify attempts over %d payments, %d overlapping", len(calls), len(byPayment), overlaps)
}
