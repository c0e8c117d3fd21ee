package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/cardrefund"
	crstore "github.com/kifpool/kifpool/internal/cardrefund/sqlstore"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// moneyOutPoints are the crash points of the money going out: the chaos
// arms a restarted serve with them as with the top-ups' points.
var moneyOutPoints = []string{testhook.AfterWithdrawalHold, testhook.AfterPayoutAccepted, testhook.AfterPayoutTransferred,
	testhook.DuringWithdrawalReturn, testhook.AfterCardRefundHold, testhook.BeforeCardRefundCall,
	testhook.AfterCardRefundAccepted}

// moneyOut is the chaos's money going out, beside its top-ups: users
// withdrawing to their verified accounts through the withdrawal form
// (retrying a submit with the same form after a connection error), the
// payout provider settling or failing what it holds while its faults
// (a time-out after accepting, duplicate submits, 503s, Jibit's late
// manual failure) are on, and an admin refunding credited Zarinpal
// top-ups to the card. check then holds the provider's book against our
// withdrawals and the bank's refunds against our card refunds.
type moneyOut struct {
	t        *testing.T
	rig      *crashRig
	provider *payoutClient
	refunds  *crstore.Store

	users    []*browser
	emails   []string
	accounts []int64
	admin    *browser
	codes    []string

	withdrawn, refundAttempts, connErrors atomic.Int64
}

// moneyOutFunds is what each withdrawer's wallet is funded with.
const moneyOutFunds = 50_000_000

// newMoneyOut signs up n withdrawers (each with a verified account and
// funds) and an admin, and turns the payout provider's faults on.
func newMoneyOut(ctx context.Context, t *testing.T, rig *crashRig, n int, seed uint64) *moneyOut {
	t.Helper()
	refunds, err := crstore.New(ctx, rig.db, ledger.New(rig.db))
	if err != nil {
		t.Fatal(err)
	}
	m := &moneyOut{t: t, rig: rig, provider: newPayoutClient(rig.bankURL), refunds: refunds}
	for i := range n {
		email := fmt.Sprintf("withdrawer%02d@e2e.example", i)
		m.users = append(m.users, signedUp(ctx, t, rig.appURL, email))
		m.emails = append(m.emails, email)
		var uid int64
		if err := rig.db.Gorm.Raw(`SELECT id FROM users WHERE email = ?`, email).Scan(&uid).Error; err != nil || uid == 0 {
			t.Fatalf("user %s: %v", email, err)
		}
		m.accounts = append(m.accounts, withdrawaltest.VerifiedAccount(t, rig.db, uid, withdrawaltest.Sheba("017", int(uid))))
		withdrawaltest.FundUser(t, rig.db, uid, moneyOutFunds)
	}
	m.admin, m.codes = signedInAdmin(ctx, t, rig, "chaos-admin@e2e.example")
	m.provider.setFaults(t, payouts.Faults{Seed: seed%1_000_000 + 1, Providers: map[string]payouts.ProviderFaults{
		payouts.Jibit: {AcceptThenHangRate: 0.1, DuplicateRate: 0.2, LateFailRate: 0.3, ErrorRate: 0.05, HangMS: 500},
		payouts.Zibal: {AcceptThenHangRate: 0.1, ErrorRate: 0.05, HangMS: 500},
	}})
	return m
}

// drive runs the withdrawers, the provider and the admin until done is
// closed; the returned function waits for them.
func (m *moneyOut) drive(ctx context.Context, seed uint64, done <-chan struct{}) (wait func()) {
	var wg sync.WaitGroup
	stopped := func() bool {
		select {
		case <-done:
			return true
		default:
			return ctx.Err() != nil
		}
	}
	for i := range m.users {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(100+i)))
			for !stopped() {
				if m.withdraw(ctx, i, int64(10_000+rng.IntN(20_000))) {
					m.withdrawn.Add(1)
				}
				sleepCtx(ctx, time.Duration(200+rng.IntN(600))*time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 200))
		for !stopped() {
			m.settle(ctx, rng, false)
			sleepCtx(ctx, 300*time.Millisecond)
		}
	})
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 300))
		for len(m.codes) > 0 && !stopped() {
			sleepCtx(ctx, time.Duration(1000+rng.IntN(2000))*time.Millisecond)
			m.refund(ctx, rng)
		}
	})
	return wg.Wait
}

// withdraw is one withdrawal by user i through the form; a submit that
// died with the server is sent again with the same form (its token makes
// it the same withdrawal). It reports whether a receipt came back.
func (m *moneyOut) withdraw(ctx context.Context, i int, tomans int64) bool {
	br := m.users[i]
	var form url.Values
	if !retry(ctx, 10*time.Second, func() bool {
		r, err := br.do(ctx, http.MethodGet, routes.Withdraw, nil)
		if err != nil {
			m.connErrors.Add(1)
			return false
		}
		form = apptest.Parse(r.body).Form(routes.Withdraw).Hidden()
		return r.status == http.StatusOK && form.Get("token") != ""
	}) {
		return false
	}
	form.Set("bank_account", fmt.Sprint(m.accounts[i]))
	form.Set("amount", fmt.Sprint(tomans))
	for _, confirm := range []string{"", "1"} {
		if confirm != "" {
			form.Set("confirm", confirm)
		}
		var got response
		if !retry(ctx, 20*time.Second, func() bool {
			r, err := br.do(ctx, http.MethodPost, routes.Withdraw, form)
			if err != nil {
				m.connErrors.Add(1)
				return false
			}
			got = r
			return r.status != http.StatusServiceUnavailable
		}) {
			return false
		}
		switch {
		case confirm == "" && got.status == http.StatusOK:
		case confirm != "" && got.status == http.StatusSeeOther && strings.HasPrefix(got.location, routes.Withdrawals+"/"):
			return true
		default:
			if got.status != http.StatusForbidden { // a CSRF token of a session gone with a restart is fine
				m.t.Errorf("%s: withdraw %d tomans (confirm %q): %d %q", m.emails[i], tomans, confirm, got.status, got.location)
			}
			return false
		}
	}
	return false
}

// settle is the provider's people at work: each payout in progress is
// settled (or, when fail is allowed, one in five failed).
func (m *moneyOut) settle(ctx context.Context, rng *rand.Rand, calm bool) {
	book, err := m.provider.list(ctx)
	if err != nil {
		return
	}
	for _, p := range book {
		if p.State != payouts.StateInProgress {
			continue
		}
		action := "settle"
		if !calm && rng.IntN(5) == 0 {
			action = "fail"
		}
		_ = m.provider.try(ctx, p.Provider, p.ID, action)
	}
}

// refund has the admin refund 2,000 tomans (the least) of a credited
// Zarinpal top-up not refunded yet to the card, with the next recovery
// code.
func (m *moneyOut) refund(ctx context.Context, rng *rand.Rand) {
	var ids []string
	if err := m.rig.db.Gorm.Raw(`SELECT public_id FROM topups WHERE status = 'credited' AND gateway = 'zarinpal'
		AND amount_rials >= 20000 AND id NOT IN (SELECT topup_id FROM card_refunds) ORDER BY id`).Scan(&ids).Error; err != nil || len(ids) == 0 {
		return
	}
	id := ids[rng.IntN(len(ids))]
	r, err := m.admin.do(ctx, http.MethodGet, routes.AdminTopUp(id), nil)
	if err != nil || r.status != http.StatusOK {
		return
	}
	csrf := apptest.Parse(r.body).Form(routes.AdminTopUpCardRefund(id)).Hidden().Get("_csrf")
	if csrf == "" {
		return
	}
	code := m.codes[0]
	m.codes = m.codes[1:]
	m.refundAttempts.Add(1)
	r, err = m.admin.do(ctx, http.MethodPost, routes.AdminTopUpCardRefund(id), url.Values{"_csrf": {csrf},
		"amount": {"2000"}, "note": {"chaos: the payer asked"}, "code": {code}})
	if err != nil {
		m.connErrors.Add(1)
		return
	}
	if r.status == http.StatusUnprocessableEntity {
		m.t.Errorf("refund top-up %s to the card: refused (422)", id)
	}
}

// calm clears the provider's faults, settles what it still holds and
// waits until every withdrawal and card refund ended (a withdrawal
// Jibit marked for its late failure: returned).
func (m *moneyOut) calm(ctx context.Context, limit time.Duration) {
	t := m.t
	t.Helper()
	m.provider.setFaults(t, payouts.Faults{})
	rng := rand.New(rand.NewPCG(1, 1))
	var open []string
	err := testwait.UntilContext(ctx, limit, "every withdrawal and card refund ended", func() bool {
		m.settle(ctx, rng, true)
		open = nil
		ours := map[string]withdrawal.Status{}
		for _, w := range withdrawaltest.All(t, m.rig.db) {
			ours[w.PublicID] = w.Status
			switch w.Status {
			case withdrawal.StatusPaid, withdrawal.StatusReturned, withdrawal.StatusFailed, withdrawal.StatusCancelled, withdrawal.StatusRejected:
			case withdrawal.StatusNeedsReview:
				// Zibal's submit cannot be repeated: one that died
				// before it reached the provider stays unknown, and
				// waits for an admin (WITHDRAWAL_UNKNOWN_REVIEW_AFTER),
				// its money held; checkPayouts holds it against the
				// provider's book.
			default:
				open = append(open, "withdrawal "+w.PublicID+" "+string(w.Status)+" "+w.StatusReason)
			}
		}
		book, err := m.provider.list(ctx)
		if err != nil {
			open = append(open, err.Error())
		}
		for _, p := range book {
			switch {
			case p.LateFail:
				open = append(open, "payout "+p.ID+" to be failed by hand")
			case p.State == payouts.StateManuallyFailed && ours[p.ID] != withdrawal.StatusReturned:
				// Failed by hand after it was paid: ours is paid until
				// the worker's next look during its watch finds it.
				open = append(open, "payout "+p.ID+" failed by hand, ours still "+string(ours[p.ID]))
			case p.State == payouts.StateTransferred && ours[p.ID] == withdrawal.StatusNeedsReview:
				// Transferred by the provider's settling above, after the
				// worker's last look at one in review (still asked about,
				// every WORKER_BACKOFF_MAX): its next look makes it paid.
				open = append(open, "payout "+p.ID+" transferred, ours still in review")
			}
		}
		for _, p := range allTopUps(t, m.rig.db) {
			list, err := m.refunds.OfTopUp(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, cr := range list {
				if cr.Status != cardrefund.StatusRefunded && cr.Status != cardrefund.StatusFailed {
					open = append(open, fmt.Sprintf("card refund %d %s", cr.ID, cr.Status))
				}
			}
		}
		return len(open) == 0
	})
	if err != nil {
		t.Fatalf("after %s still open: %v", limit, open)
	}
}

// check holds the provider's book against our withdrawals and the bank's
// refunds against our card refunds, and returns what each user's balance
// differs by from what they paid at the bank (rig.adjust): a withdrawer's
// funds less their paid withdrawals, a payer's refunded card refunds.
func (m *moneyOut) check(ctx context.Context) (adjust map[string]int64, stats string) {
	t := m.t
	t.Helper()
	checkPayouts(t, m.rig.db, m.provider.all(t))
	adjust = map[string]int64{}
	statuses := map[string]int{}
	for i, email := range m.emails {
		adjust[email] = moneyOutFunds
		for _, w := range withdrawaltest.All(t, m.rig.db) {
			if w.BankAccountID == m.accounts[i] {
				statuses[string(w.Status)]++
				if w.Status == withdrawal.StatusPaid {
					adjust[email] -= w.AmountRials
				}
			}
		}
	}
	emailOf := map[int64]string{}
	var rows []struct {
		ID    int64
		Email string
	}
	if err := m.rig.db.Gorm.Raw(`SELECT id, email FROM users`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		emailOf[r.ID] = r.Email
	}
	refunded := checkCardRefunds(ctx, t, m.rig, m.refunds, func(p topup.TopUp, rials int64) {
		adjust[emailOf[p.UserID]] -= rials
	})
	var returned int64
	for _, w := range withdrawaltest.All(t, m.rig.db) {
		returned += withdrawaltest.Returns(t, m.rig.db, w.PublicID)
	}
	return adjust, fmt.Sprintf("withdrawals %v (%d receipts, %d returns), card refunds: %d attempted, %d refunded; %d connection errors",
		statuses, m.withdrawn.Load(), returned, m.refundAttempts.Load(), refunded, m.connErrors.Load())
}

// checkCardRefunds asserts that for every top-up the bank gave back to
// the card exactly what our card refunds call refunded; each refunded
// card refund is passed to each. It returns how many were refunded.
func checkCardRefunds(ctx context.Context, t *testing.T, rig *crashRig, refunds *crstore.Store, each func(topup.TopUp, int64)) int {
	t.Helper()
	n := 0
	for _, p := range allTopUps(t, rig.db) {
		list, err := refunds.OfTopUp(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ours int64
		for _, cr := range list {
			if cr.Status == cardrefund.StatusRefunded {
				ours += cr.AmountRials
				n++
				if each != nil {
					each(p, cr.AmountRials)
				}
			}
		}
		if p.Authority != nil && refundedAtBank(t, rig.bank, *p.Authority) != ours {
			t.Errorf("top-up %s: the bank gave back %d, our card refunds %d", p.PublicID, refundedAtBank(t, rig.bank, *p.Authority), ours)
		}
	}
	return n
}

// list is the provider's book (an error while the bank is unreachable).
func (c *payoutClient) list(ctx context.Context) ([]payouts.Payout, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/_sandbank/payouts", nil)
	if err != nil {
		return nil, err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out []payouts.Payout
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// try settles, fails or returns a payout, reporting the answer's status.
func (c *payoutClient) try(ctx context.Context, provider, id, action string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+payouts.ControlPath(provider, id, action), nil)
	if err != nil {
		return 0
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// setFaults sets the provider's faults (empty: none).
func (c *payoutClient) setFaults(t *testing.T, f payouts.Faults) {
	t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.hc.Post(c.base+payouts.FaultsPath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("payout faults: %d", res.StatusCode)
	}
}
