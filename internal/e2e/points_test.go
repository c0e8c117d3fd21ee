package e2e

import (
	"cmp"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
)

// crashPoints hits each test-hook crash point once in a known flow, on a
// calm bank, with one serve: arm the point, drive the flow until serve
// kills itself there, check what the crash left, restart serve unarmed
// and let it finish.
type crashPoints struct {
	t       *testing.T
	ctx     context.Context
	srv     *proc
	db      *store.DB
	bank    *bankClient
	bankURL string
	br      *browser
	email   string
}

func (c *crashPoints) run() []crashTopUp {
	var out []crashTopUp
	for _, sc := range []struct {
		name  string
		point string
		late  bool // paid after our worker failed the payment
		// callback: the payer comes back (else reconciliation finds it)
		callback bool
		// the status the crash leaves ("": any open one)
		left payment.Status
	}{
		// The bank verified it (100), the credit never committed: the
		// worker finds it open, verify answers 101, it is credited. (A
		// first attempt may have timed out on a loaded machine: the
		// payment is then pending_verification when it dies.)
		{"first verify", testhook.AfterVerify, false, true, ""},
		// A callback reopened a failed payment and died before asking the
		// bank: the worker finishes the reopened payment.
		{"rescue by callback", testhook.AfterReopen, true, true, payment.StatusPendingVerification},
		// Reconciliation reopened a failed payment, the bank verified it,
		// the credit never committed: the worker finishes it.
		{"rescue by reconciliation", testhook.AfterVerify, true, false, payment.StatusPendingVerification},
	} {
		r, ok := c.one(sc.name, sc.point, sc.late, sc.callback, sc.left)
		if r.authority != "" {
			out = append(out, r) // checked with the rest, whatever happened
		}
		if !ok {
			// Leave serve running unarmed, so the test can still drain.
			c.srv.kill()
			c.srv.setEnv(testhook.EnvCrashAt, "")
			if err := c.srv.start(); err != nil {
				c.t.Errorf("restart after a failed crash point: %v", err)
			}
			break
		}
	}
	return out
}

func (c *crashPoints) one(name, point string, late, callback bool, left payment.Status) (crashTopUp, bool) {
	t, ctx := c.t, c.ctx
	t.Helper()
	res := crashTopUp{email: c.email, rials: 12_340, action: "none"}
	fail := func(format string, args ...any) (crashTopUp, bool) {
		t.Errorf("crash point %s (%s): "+format, append([]any{point, name}, args...)...)
		return res, false
	}
	csrf, token, err := c.br.topUpForm(ctx)
	if err != nil {
		return fail("top-up form: %v", err)
	}
	r, err := c.br.submitTopUp(ctx, csrf, token, res.rials/10)
	if err != nil || r.status != http.StatusSeeOther {
		return fail("submit: status %d: %v", r.status, err)
	}
	if res.authority = authorityOf(c.bankURL, r.location); res.authority == "" {
		return fail("submit went to %q", r.location)
	}
	if late {
		// The payer keeps the bank page open past our authority lifetime.
		if _, ok := waitStatus(ctx, c.db, res.authority, payment.StatusFailed, 60*time.Second); !ok {
			return fail("the worker did not fail the unpaid payment")
		}
	}
	before := c.srv.logCount("testhook: SIGKILL at " + point)
	// Arm the point, then pay.
	c.srv.kill()
	c.srv.setEnv(testhook.EnvCrashAt, point)
	if err := c.srv.start(); err != nil {
		return fail("restart armed: %v", err)
	}
	redirect, status, err := c.bank.finish(ctx, res.authority, "pay")
	if err != nil || status != http.StatusOK {
		return fail("pay: status %d: %v", status, err)
	}
	res.action = "paid"
	if late {
		res.action = "late-paid"
	}
	if callback {
		// The callback dies with serve (or, if the worker got there first,
		// serve dies under the worker).
		_, _ = c.br.do(ctx, http.MethodGet, redirect, nil)
	}
	select {
	case <-c.srv.exited():
	case <-time.After(60 * time.Second):
		return fail("serve never reached the point")
	case <-ctx.Done():
		return fail("out of time")
	}
	if n := c.srv.logCount("testhook: SIGKILL at " + point); n != before+1 {
		return fail("serve exited, but not at the point (%d kills there, %d before)", n, before)
	}
	// What the crash left: the bank took the money (and, after verify,
	// counts it verified); we have not credited it.
	p, ok := paymentByAuthority(t, c.db, res.authority)
	if !ok || left != "" && p.Status != left || left == "" && p.Status.Terminal() {
		return fail("after the crash the payment is %s (%s), want %s", p.Status, p.StatusReason, cmp.Or(string(left), "open"))
	}
	wantBank := sandbank.StatePaid
	if point == testhook.AfterVerify {
		wantBank = sandbank.StateVerified
	}
	if bp := c.bank.payments(t)[res.authority]; bp.State != wantBank {
		return fail("after the crash the bank says %s, want %s", bp.State, wantBank)
	}
	// Restart unarmed: the payment is finished and credited.
	c.srv.setEnv(testhook.EnvCrashAt, "")
	if err := c.srv.start(); err != nil {
		return fail("restart: %v", err)
	}
	if p, ok := waitStatus(ctx, c.db, res.authority, payment.StatusCredited, 60*time.Second); !ok {
		return fail("not credited after the restart: %s (%s)", p.Status, p.StatusReason)
	}
	return res, true
}

// paymentByAuthority reads our payment holding authority.
func paymentByAuthority(t *testing.T, db *store.DB, authority string) (payment.Payment, bool) {
	var p payment.Payment
	err := db.Gorm.Where("authority = ?", authority).Take(&p).Error
	if err != nil && t != nil {
		t.Logf("payment of %s: %v", authority, err)
	}
	return p, err == nil
}

// waitStatus polls our payment of authority until it has status, for at
// most limit; it returns the payment as last read.
func waitStatus(ctx context.Context, db *store.DB, authority string, status payment.Status, limit time.Duration) (payment.Payment, bool) {
	var p payment.Payment
	err := testwait.UntilContext(ctx, limit, "payment of "+authority+" to be "+string(status), func() bool {
		var found bool
		p, found = paymentByAuthority(nil, db, authority)
		return found && p.Status == status
	})
	return p, err == nil
}

// drainWithBank waits until no payment of ours is open and the bank holds
// no paid-but-unverified payment (reconciliation's work), or fails the
// test at the deadline.
func drainWithBank(t *testing.T, db *store.DB, bank *bankClient, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var unverified []string
	err := testwait.Until(limit, "no open payment and nothing paid at the bank unverified", func() bool {
		drain(t, db, max(limit-time.Since(start), time.Second))
		unverified = nil
		for a, bp := range bank.payments(t) {
			if bp.State == sandbank.StatePaid {
				unverified = append(unverified, a)
			}
		}
		return len(unverified) == 0
	})
	if err == nil {
		return time.Since(start)
	}
	for _, a := range unverified {
		p, _ := paymentByAuthority(t, db, a)
		t.Errorf("bank PAID %s still unverified after %s (ours: %s %s)", a, limit, p.Status, p.StatusReason)
	}
	t.FailNow()
	return 0
}
