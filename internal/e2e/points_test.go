package e2e

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
)

// pointsTest hits each test-hook crash point once in a known flow at
// each gateway whose flow passes it (crashPoints), among them the two
// inside the credit's ledger transaction (before and after its
// postings), then checks the outcome as the chaos does: each paid top-up
// credited by exactly one ledger transaction (no posting lost or
// doubled), balances equal what each user paid, the bank agrees, and
// every rule of kifpool check holds. On PostgreSQL a second serve, never
// armed, runs beside the restarted one during each recovery, its worker
// competing for the rows the crash left; on SQLite a second serve of one
// database file is refused by design, so there is one. Each gateway has
// its own database, bank and serve(s), all driven at once: a scenario
// mostly waits for the lease of the killed holder (one budget and 2s) to
// run out. No webhooks here (the chaos has them): a sender killed
// mid-delivery holds its row for 60s.
func pointsTest(t *testing.T, d store.Dialect) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var all []*crashPoints
	for _, g := range bankGateways {
		// One top-up at a time per rig: four pooled connections are
		// plenty, and leave PostgreSQL's max_connections room for the
		// second instances and the other test packages running at once.
		rig := newCrashRigWith(t, d, map[string]string{"DATABASE_MAX_CONNS": "4"})
		email := g.name + "-points@e2e.example"
		all = append(all, &crashPoints{crashRig: rig, t: t, ctx: ctx, gw: g, br: signedUp(ctx, t, rig.appURL, email), email: email,
			other: rig.second(t, d)})
	}
	ready := time.Now()
	results := make([][]crashTopUp, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Go(func() { results[i] = c.run() })
	}
	wg.Wait()
	ran := time.Now()
	hit := 0
	for i, c := range all {
		drainWithBank(t, c.db, c.bank, 60*time.Second)
		_, actions := c.check(t, results[i])
		hit += len(results[i])
		t.Logf("%s at %s: outcomes %v", d, c.gw.name, actions)
	}
	t.Logf("%s: %d crash points hit; set up in %s, ran in %s, checked in %s", d, hit, ready.Sub(started).Round(time.Millisecond),
		ran.Sub(ready).Round(time.Millisecond), time.Since(ran).Round(time.Millisecond))
}

// crashPoints hits each test-hook crash point once in a known flow at
// its gateway, if the gateway's flow passes it, on a calm bank: arm the
// point, drive the flow until serve kills itself there, check what the
// crash left, restart serve unarmed (on PostgreSQL with a second
// instance beside it) and let it finish. It runs beside the other
// gateways' (it fails the test with Errorf only).
type crashPoints struct {
	*crashRig
	t     *testing.T
	ctx   context.Context
	gw    bankGateway
	br    *browser
	email string
	// other joins each recovery (PostgreSQL; nil on SQLite: second).
	other *proc
}

// pointScenario is one crash point in one flow.
type pointScenario struct {
	name  string
	point string
	// gateways: those whose flow passes the point
	gateways []string
	late     bool // paid after our worker failed the payment
	// callback: the payer comes back (else reconciliation finds it)
	callback bool
	// the status the crash leaves ("": any open one)
	left topup.Status
}

var pointScenarios = []pointScenario{
	// The bank verified it, the credit never committed: the worker finds
	// it open, verify answers "already verified", it is credited. (A first
	// attempt may have timed out on a loaded machine: the payment is then
	// pending_verification when it dies.)
	{"first verify", testhook.AfterVerify, []string{"zarinpal", "zibal", "sep"}, false, true, ""},
	// Mellat verified it (0) and was never asked to settle: the payment
	// is settling with the verified facts on its row; the worker asks
	// settle alone (not verify again) and credits it.
	{"verified, not settled", testhook.AfterVerifyBeforeSettle, []string{"mellat"}, false, true, topup.StatusSettling},
	// Mellat settled it, the credit never committed: settle again (45),
	// credited.
	{"settled, not credited", testhook.AfterSettle, []string{"mellat"}, false, true, topup.StatusSettling},
	// A callback reopened a failed payment and died before asking the
	// bank: the worker finishes the reopened payment. (Not Mellat: our
	// worker does not fail its unpaid payment, bankGateway.callbackOnly.)
	{"rescue by callback", testhook.AfterReopen, []string{"zarinpal", "zibal", "sep"}, true, true, topup.StatusPendingVerification},
	// Reconciliation (Zarinpal's list, Zibal's inquiry, SEP's receipt)
	// reopened a failed payment, the bank verified it, the credit never
	// committed: the worker finishes it (SEP: with the RefNum kept from
	// the token's receipt before that verify, as SEP forgets it after).
	{"rescue by reconciliation", testhook.AfterVerify, []string{"zarinpal", "zibal", "sep"}, true, false, topup.StatusPendingVerification},
	// Killed inside the credit's database transaction, before and after
	// its ledger rows: nothing of it commits (no posting, no balance, the
	// payment still open); the worker asks the bank again ("already
	// verified", Mellat: settle again) and credits it once (on
	// PostgreSQL whichever of the two instances takes it). At SEP the
	// RefNum it verifies is on the row before that verify (the worker may
	// check while the payer pays: a verify names only a RefNum the token's
	// receipt named and the row kept), since SEP forgets the token's
	// receipt once verified.
	{"inside the ledger, before its postings", testhook.InsideLedgerBeforePostings, []string{"zarinpal", "mellat", "sep"}, false, true, ""},
	{"inside the ledger, after its postings", testhook.InsideLedgerAfterPostings, []string{"zibal", "mellat", "sep"}, false, true, ""},
}

// pointRun is one scenario and its top-up.
type pointRun struct {
	sc  pointScenario
	res crashTopUp
}

func (c *crashPoints) run() []crashTopUp {
	var runs []*pointRun
	for _, sc := range pointScenarios {
		if slices.Contains(sc.gateways, c.gw.name) {
			runs = append(runs, &pointRun{sc: sc, res: crashTopUp{email: c.email, gateway: c.gw.name, rials: 12_340, action: "none"}})
		}
	}
	// The late payers' top-ups first, all at once: the worker fails them
	// together, at our authority lifetime.
	for _, r := range runs {
		if r.sc.late && !c.start(r) {
			return c.done(runs)
		}
	}
	for _, r := range runs {
		if r.sc.late {
			if _, ok := waitStatus(c.ctx, c.db, r.res.authority, topup.StatusFailed, 60*time.Second); !ok {
				c.fail(r, "the worker did not fail the unpaid payment")
				return c.done(runs)
			}
		}
	}
	for _, r := range runs {
		if !r.sc.late && !c.start(r) || !c.one(r) {
			// Leave serve running unarmed, so the test can still drain.
			c.srv.kill()
			c.srv.setEnv(testhook.EnvCrashAt, "")
			if err := c.srv.start(); err != nil {
				c.t.Errorf("restart after a failed crash point: %v", err)
			}
			break
		}
	}
	return c.done(runs)
}

// done lists the top-ups that reached the bank, checked with the rest
// whatever happened.
func (c *crashPoints) done(runs []*pointRun) []crashTopUp {
	var out []crashTopUp
	for _, r := range runs {
		if r.res.authority != "" {
			out = append(out, r.res)
		}
	}
	return out
}

func (c *crashPoints) fail(r *pointRun, format string, args ...any) bool {
	c.t.Helper()
	c.t.Errorf("crash point %s (%s at %s): "+format, append([]any{r.sc.point, r.sc.name, c.gw.name}, args...)...)
	return false
}

// start submits r's top-up at its gateway.
func (c *crashPoints) start(r *pointRun) bool {
	sent, err := c.br.topUpAt(c.ctx, r.res.rials/10, c.gw.name)
	if err != nil {
		return c.fail(r, "top-up: %v", err)
	}
	gw, authority, ok := toBank(c.bankURL, sent)
	if !ok || gw.name != c.gw.name {
		return c.fail(r, "submit answered %d %q, went to %q", sent.status, sent.location, gw.name)
	}
	r.res.authority = authority
	return true
}

// one arms the point, pays r's top-up and waits for serve to die there;
// then checks what the crash left, restarts serve unarmed (on PostgreSQL
// with the second instance, whose worker competes for the same row),
// waits for the credit and checks it is one ledger transaction.
func (c *crashPoints) one(r *pointRun) bool {
	t, ctx, point := c.t, c.ctx, r.sc.point
	t.Helper()
	began := time.Now()
	before := c.srv.logCount("testhook: SIGKILL at " + point)
	// Arm the point, then pay.
	c.srv.kill()
	c.srv.setEnv(testhook.EnvCrashAt, point)
	if err := c.srv.start(); err != nil {
		return c.fail(r, "restart armed: %v", err)
	}
	cb, status, err := c.bank.finishAt(ctx, c.gw.name, r.res.authority, "pay")
	if err != nil || status != http.StatusOK {
		return c.fail(r, "pay: status %d: %v", status, err)
	}
	r.res.action = "paid"
	if r.sc.late {
		r.res.action = "late-paid"
	}
	if r.sc.callback {
		// The callback dies with serve (or, if the worker got there first,
		// serve dies under the worker).
		_, _ = c.br.back(ctx, cb)
	}
	select {
	case <-c.srv.exited():
	case <-time.After(60 * time.Second):
		return c.fail(r, "serve never reached the point")
	case <-ctx.Done():
		return c.fail(r, "out of time")
	}
	if n := c.srv.logCount("testhook: SIGKILL at " + point); n != before+1 {
		return c.fail(r, "serve exited, but not at the point (%d kills there, %d before)", n, before)
	}
	// What the crash left: the bank took the money (and, after verify,
	// counts it verified; Mellat's settled after settle); we have not
	// credited it.
	p, ok := topUpByAuthority(t, c.db, r.res.authority)
	if !ok || r.sc.left != "" && p.Status != r.sc.left || r.sc.left == "" && p.Status.Terminal() {
		return c.fail(r, "after the crash the payment is %s (%s), want %s", p.Status, p.StatusReason, cmp.Or(string(r.sc.left), "open"))
	}
	var postings int64
	if err := c.db.Gorm.Raw(`SELECT COUNT(*) FROM ledger_postings lp JOIN ledger_transactions t ON t.id = lp.transaction_id
		WHERE t.topup_id = ?`, p.ID).Scan(&postings).Error; err != nil || postings != 0 {
		return c.fail(r, "after the crash the payment has %d ledger postings (%v), want none: the credit's transaction died whole", postings, err)
	}
	if p.Status == topup.StatusSettling && (p.RefID == nil || p.VerifiedAmountRials == nil || *p.VerifiedAmountRials != p.AmountRials) {
		return c.fail(r, "settling without the verified facts: ref %v, verified %v", p.RefID, p.VerifiedAmountRials)
	}
	wantBank, wantSettled := sandbank.StateVerified, c.gw.name == "mellat"
	switch point {
	case testhook.AfterReopen:
		wantBank, wantSettled = sandbank.StatePaid, false
	case testhook.AfterVerifyBeforeSettle:
		wantSettled = false
	}
	held, err := c.bank.list()
	if err != nil {
		return c.fail(r, "the bank's payments: %v", err)
	}
	if bp := held[r.res.authority]; bp.State != wantBank || !bp.SettledAt.IsZero() != wantSettled {
		return c.fail(r, "after the crash the bank says %s (settled %v), want %s (settled %v)", bp.State, !bp.SettledAt.IsZero(), wantBank, wantSettled)
	}
	// Restart unarmed (on PostgreSQL with the second instance): the
	// payment is finished and credited, once.
	crashed := time.Now()
	c.srv.setEnv(testhook.EnvCrashAt, "")
	if err := c.srv.start(); err != nil {
		return c.fail(r, "restart: %v", err)
	}
	if c.other != nil {
		if err := c.other.start(); err != nil {
			return c.fail(r, "the second instance: %v", err)
		}
	}
	restarted, instances := time.Now(), 1
	p, ok = waitStatus(ctx, c.db, r.res.authority, topup.StatusCredited, 60*time.Second)
	credited := time.Now()
	if c.other != nil {
		c.other.stop()
		instances++
	}
	if !ok {
		return c.fail(r, "not credited after the restart: %s (%s)", p.Status, p.StatusReason)
	}
	// Both instances have stopped working on it: it has its one ledger
	// transaction (r.check asserts the rest, whole).
	var txs int64
	if err := c.db.Gorm.Raw(`SELECT COUNT(*) FROM ledger_transactions WHERE topup_id = ? AND kind = 'topup'`, p.ID).Scan(&txs).Error; err != nil || txs != 1 {
		return c.fail(r, "credited with %d ledger transactions (%v), want one", txs, err)
	}
	if held, err = c.bank.list(); err != nil || r.sc.left == topup.StatusSettling && held[r.res.authority].VerifyCount != 1 {
		return c.fail(r, "verify asked %d times, want once (a settling payment is settled, not verified again): %v",
			held[r.res.authority].VerifyCount, err)
	}
	t.Logf("%s at %s (%s): crashed %s after arming, restarted in %s (%d instances), credited %s later", point, c.gw.name, r.sc.name,
		crashed.Sub(began).Round(time.Millisecond), restarted.Sub(crashed).Round(time.Millisecond), instances,
		credited.Sub(restarted).Round(time.Millisecond))
	return true
}

// topUpByAuthority reads our top-up holding authority.
func topUpByAuthority(t *testing.T, db *store.DB, authority string) (topup.TopUp, bool) {
	var p topup.TopUp
	err := db.Gorm.Where("authority = ?", authority).Take(&p).Error
	if err != nil && t != nil {
		t.Logf("payment of %s: %v", authority, err)
	}
	return p, err == nil
}

// waitStatus polls our payment of authority until it has status, for at
// most limit; it returns the payment as last read.
func waitStatus(ctx context.Context, db *store.DB, authority string, status topup.Status, limit time.Duration) (topup.TopUp, bool) {
	var p topup.TopUp
	err := testwait.UntilContext(ctx, limit, "payment of "+authority+" to be "+string(status), func() bool {
		var found bool
		p, found = topUpByAuthority(nil, db, authority)
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
		for a, bp := range bank.topUps(t) {
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
		p, _ := topUpByAuthority(t, db, a)
		t.Errorf("bank PAID %s still unverified after %s (ours: %s %s)", a, limit, p.Status, p.StatusReason)
	}
	t.FailNow()
	return 0
}
