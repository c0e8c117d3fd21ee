package topup_test

// Where a kept receipt came from (issue 31, items 1, 2 and 5): a
// callback's receipt is the payer's word until the bank ties it to the
// payment; only a receipt the bank confirmed is verified on its own, and a
// receipt another payment holds unconfirmed gives way to that payment's
// real callback once the bank confirms it there.

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// TestSEPUnconfirmedReceiptCreditsNothing (item 1): payment A is older
// than SEP's one-hour receipt window (cancelled, or never paid) and a
// callback for A carries the RefNum of B, a fresh sale just paid. SEP no
// longer keeps A's receipt, so nothing ties that RefNum to A: it is never
// verified for A (VerifyTransaction names no token), A goes to review as
// receipt_unconfirmed without the RefNum, and B's real callback keeps it
// and is credited, verified once at the bank. Same amount or another.
func TestSEPUnconfirmedReceiptCreditsNothing(t *testing.T) {
	cases := []struct {
		name    string
		aAmount int64
		aBefore string // what happened to A before the forged callback
	}{
		{"A cancelled, same amount", 130_000, "cancelled"},
		{"A never paid, same amount", 130_000, "open"},
		{"A cancelled, another amount", 110_000, "cancelled"},
		{"A never paid, another amount", 110_000, "open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := newBankEnv(t, db, "sep")
				a := e.start(c.aAmount)
				if c.aBefore == "cancelled" {
					if _, err := bank.Finish(a.AuthorityString(), false); err != nil {
						t.Fatal(err)
					}
					if got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), "", false); err != nil || got.Status != topup.StatusFailed {
						t.Fatalf("A's own callback: %s, %v", dump(got), err)
					}
				}
				e.clock.Advance(61 * time.Minute) // past A's receipt hour (and its verify window)
				b := e.start(130_000)
				cbB, err := bank.Finish(b.AuthorityString(), true)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), cbB.Form["RefNum"], true)
				if err != nil {
					t.Fatalf("A's forged callback: %v", err)
				}
				if got.Status == topup.StatusCredited || got.ReceiptString() == cbB.Form["RefNum"] {
					t.Fatalf("A after B's RefNum: %s receipt %q; want not credited, the RefNum not kept", dump(got), got.ReceiptString())
				}
				if ra := e.row(a.ID); ra.Status != topup.StatusNeedsReview || ra.StatusReason != "receipt_unconfirmed" {
					t.Errorf("A: %s; want needs_review/receipt_unconfirmed", dump(ra))
				}
				if bp, _ := bank.Payment(b.AuthorityString()); bp.State == sandbank.StateVerified {
					t.Fatalf("B's sale was verified through A's callback: %+v", bp)
				}
				got, err = e.backWith(ctx, b.PublicID, b.AuthorityString(), cbB.Form["RefNum"], true)
				if err != nil || got.Status != topup.StatusCredited || got.ReceiptString() != cbB.Form["RefNum"] {
					t.Fatalf("B's real callback: %s receipt %q, %v; want credited", dump(got), got.ReceiptString(), err)
				}
				if bp, _ := bank.Payment(b.AuthorityString()); bp.State != sandbank.StateVerified || bp.VerifyCount != 1 {
					t.Errorf("B at the bank: %+v", bp)
				}
				if e.balance() != 130_000 {
					t.Errorf("balance %d, want B's 130,000 only", e.balance())
				}
				e.assertUncredited(a)
				checkInvariants(t, db)
			})
		})
	}
}

// receiptField is the callback field that carries a gateway's receipt.
var receiptField = map[string]string{"sep": "RefNum", "mellat": "SaleReferenceId"}

// TestForgedReceiptNeverBeatsTheRealOne (item 2): payment A holds B's
// receipt on a callback's word only (a forged callback for A kept it, and
// A's check has not answered yet) when B's real callback comes. The bank
// is asked with B's receipt for B (SEP: B's token's receipt names it;
// Mellat: B's sale order binds it), confirms it, and B takes it from A:
// credited once, never refused for a receipt another payment held.
func TestForgedReceiptNeverBeatsTheRealOne(t *testing.T) {
	for _, gw := range []string{"sep", "mellat"} {
		t.Run(gw, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := newBankEnv(t, db, gw)
				a, b := e.start(110_000), e.start(130_000)
				cbB, err := bank.Finish(b.AuthorityString(), true)
				if err != nil {
					t.Fatal(err)
				}
				receipt := cbB.Form[receiptField[gw]]
				// The hold a forged callback for A leaves (never confirmed).
				if err := db.Gorm.Exec(`UPDATE topups SET receipt = ? WHERE id = ?`, receipt, a.ID).Error; err != nil {
					t.Fatal(err)
				}
				got, err := e.backWith(ctx, b.PublicID, b.AuthorityString(), receipt, true)
				if err != nil || got.Status != topup.StatusCredited || got.ReceiptString() != receipt {
					t.Fatalf("B's real callback: %s receipt %q, %v; want credited with its receipt", dump(got), got.ReceiptString(), err)
				}
				if ra := e.row(a.ID); ra.Receipt != nil || ra.Status == topup.StatusCredited {
					t.Errorf("A after B took its receipt: %s receipt %q", dump(ra), ra.ReceiptString())
				}
				if bp, _ := bank.Payment(b.AuthorityString()); bp.State != sandbank.StateVerified || bp.VerifyCount != 1 {
					t.Errorf("B at the bank: %+v", bp)
				}
				if e.balance() != 130_000 {
					t.Errorf("balance %d, want 130,000", e.balance())
				}
				checkInvariants(t, db)
			})
		})
	}
}

// TestNewReceiptInPacingWindowIsNotKept (item 2): at Mellat, A's payer
// cancelled and A failed on the bank's word. A forged callback for A
// carrying B's SaleReferenceId within A's pacing window would be kept
// unchecked until the worker asks (and, sent again after each check,
// hold it for Mellat's whole 20-minute window, which then reverses B's
// sale): it is refused, nothing kept. B's real callback is credited.
func TestNewReceiptInPacingWindowIsNotKept(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "mellat")
		a, b := e.start(110_000), e.start(130_000)
		if _, err := bank.Finish(a.AuthorityString(), false); err != nil {
			t.Fatal(err)
		}
		if got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), "", false); err != nil || got.Status != topup.StatusFailed {
			t.Fatalf("A's own callback: %s, %v", dump(got), err)
		}
		cbB, err := bank.Finish(b.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		receipt := cbB.Form["SaleReferenceId"]
		e.clock.Advance(2 * time.Second) // within A's pacing window
		if got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), receipt, true); err == nil {
			t.Errorf("A's forged callback in its pacing window: %s, accepted", dump(got))
		}
		if ra := e.row(a.ID); ra.Receipt != nil || ra.Status != topup.StatusFailed {
			t.Fatalf("A after the forged callback: %s receipt %q; want failed, nothing kept", dump(ra), ra.ReceiptString())
		}
		got, err := e.backWith(ctx, b.PublicID, b.AuthorityString(), receipt, true)
		if err != nil || got.Status != topup.StatusCredited || e.balance() != 130_000 {
			t.Fatalf("B's real callback: %s, %v, balance %d", dump(got), err, e.balance())
		}
		// After the window, a receipt brought to A is checked at once:
		// B's sale is no sale of A's order, and nothing is kept.
		e.clock.Advance(time.Minute)
		if _, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), receipt, true); err == nil {
			t.Errorf("A's forged callback after the window: accepted; want the receipt refused (B holds it, confirmed)")
		}
		if ra := e.row(a.ID); ra.Status == topup.StatusCredited || ra.Receipt != nil {
			t.Errorf("A: %s receipt %q", dump(ra), ra.ReceiptString())
		}
		checkInvariants(t, db)
	})
}

// A payment the bank verified (its reference on the row) is never
// labelled returned_to_payer when its gateway's verify window closes: the
// merchant kept that money; it waits for MaxUnknown instead.
func TestVerifiedNeverReturnedToPayer(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rules := topup.Rules{VerifyDeadline: 30 * time.Minute, MaxUnknown: 2 * time.Hour}
	ref := int64(4242)
	for _, c := range []struct {
		name   string
		refID  *int64
		to     topup.Status
		reason topup.Reason
		ok     bool
	}{
		{"not verified", nil, topup.StatusNeedsReview, topup.ReasonReturnedToPayer, true},
		{"verified", &ref, "", "", false},
	} {
		opened := now.Add(-31 * time.Minute)
		p := topup.TopUp{Status: topup.StatusPendingVerification, CreatedAt: opened, OpenedAt: &opened, RefID: c.refID}
		to, reason, ok := topup.Expiry(p, now, rules)
		if to != c.to || reason != c.reason || ok != c.ok {
			t.Errorf("%s: Expiry = %s %s %v, want %s %s %v", c.name, to, reason, ok, c.to, c.reason, c.ok)
		}
	}
}

// TestDeadlineDropsUnconfirmedReceipt (item 5): a payment the worker ends
// at a deadline drops a receipt the bank never confirmed for it (here a
// forged one a Mellat payment held when its authority's lifetime ended),
// so that it blocks no other payment afterwards.
func TestDeadlineDropsUnconfirmedReceipt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, _ := newBankEnv(t, db, "mellat")
		a := e.start(110_000)
		if err := db.Gorm.Exec(`UPDATE topups SET receipt = ? WHERE id = ?`, "987654321012", a.ID).Error; err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(21 * time.Minute)
		if _, err := e.svc.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.row(a.ID)
		if !r.Status.Terminal() || r.Receipt != nil {
			t.Fatalf("after the deadline: %s receipt %q; want ended, the unconfirmed receipt dropped", dump(r), r.ReceiptString())
		}
		checkInvariants(t, db)
	})
}

// TestFailedCreditOfAFailedTopUpGoesToReview (item 5): the bank
// verified a payment, but while its verifier's lease ran out another actor
// failed it, and the credit then failed too. The bank holds money for it:
// it does not stay failed, it goes to review (credit_failed).
func TestFailedCreditOfAFailedTopUpGoesToReview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.store.set(func(h *hookStore) {
			h.credit = func(topup.Move) error {
				// Meanwhile another actor ended it, its lease run out.
				if err := db.Gorm.Exec(`UPDATE topups SET status = ?, status_reason = ?, lease_owner = '', lease_until = NULL WHERE id = ?`,
					string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife), p.ID).Error; err != nil {
					t.Error(err)
				}
				return errors.New("the ledger refused the entry")
			}
		})
		if _, err := e.back(ctx, p.PublicID, p.AuthorityString()); err == nil {
			t.Fatal("the credit did not fail")
		}
		r := e.row(p.ID)
		if r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonCreditFailed) || r.CreditFailures != 1 {
			t.Fatalf("after the failed credit: %s (failures %d); want needs_review/credit_failed", dump(r), r.CreditFailures)
		}
		e.assertUncredited(p)
	})
}

// TestAnEventSaysSomethingNew (item 4): anyone holding a return link can
// make us ask the bank about a failed payment once per pacing window. Each
// round trip reopens it and fails it again on the bank's word: the
// payment's events record each move, but partners hear "topup.failed"
// once — a webhook only when the public outcome changes. And a payment an
// admin closed as failed is not reopened by a callback at all: the row
// answers, the bank is not asked, the admin's decision stands.
func TestAnEventSaysSomethingNew(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "sep")
		hooks, err := webhook.New(db, nil, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef"), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := hooks.Create(ctx, e.user.ID, "http://127.0.0.1:1/all", webhook.Types(), nil); err != nil {
			t.Fatal(err)
		}
		deliveries := func(p topup.TopUp, typ string) int64 {
			return e.count(`SELECT COUNT(*) FROM webhook_deliveries WHERE topup_id = ? AND type = ?`, p.ID, typ)
		}
		a := e.start(110_000)
		if _, err := bank.Finish(a.AuthorityString(), false); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), "", false)
			if err != nil || got.Status != topup.StatusFailed {
				t.Fatalf("round trip %d: %s, %v", i, dump(got), err)
			}
			e.clock.Advance(30 * time.Second)
		}
		if n := deliveries(a, webhook.TypeFailed); n != 1 {
			t.Errorf("topup.failed deliveries of one failed payment asked about 5 times: %d, want 1", n)
		}

		// An admin's close.
		b := e.start(120_000)
		if _, err := bank.Finish(b.AuthorityString(), false); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceStatus(t, db, b.ID, string(topup.StatusNeedsReview), string(topup.ReasonUnknownTooLong))
		if got, err := e.svc.AdminCloseFailed(ctx, b.PublicID, e.user.ID, "the payer confirmed they did not pay"); err != nil || got.Status != topup.StatusFailed {
			t.Fatalf("admin close: %s, %v", dump(got), err)
		}
		e.clock.Advance(time.Minute)
		events := len(e.events(b))
		verifies := bank.Stats()["sep-verify"].Calls + bank.Stats()["sep-inquiry"].Calls
		got, err := e.backWith(ctx, b.PublicID, b.AuthorityString(), "", true)
		if err != nil || got.Status != topup.StatusFailed || got.StatusReason != string(topup.ReasonClosedByAdmin) {
			t.Fatalf("callback after the admin's close: %s, %v; want the admin's decision", dump(got), err)
		}
		if n := len(e.events(b)); n != events {
			t.Errorf("events after the callback: %d, want %d (%v)", n, events, e.events(b))
		}
		if n := bank.Stats()["sep-verify"].Calls + bank.Stats()["sep-inquiry"].Calls; n != verifies {
			t.Errorf("the bank was asked about an admin-closed payment (%d calls, want %d)", n, verifies)
		}
		if n := deliveries(b, webhook.TypeFailed); n != 1 {
			t.Errorf("topup.failed deliveries after the admin's close and a callback: %d, want 1", n)
		}
	})
}

// A check that made no bank call (Mellat without a sale named) counts
// nothing and looks again when the verify window closes (item 3); one
// that asked the bank counts as before.
func TestCheckWithoutACallCountsNothing(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	created := now.Add(-3 * time.Minute)
	rules := topup.Rules{RecheckDelay: 20 * time.Second, VerifyDeadline: 20 * time.Minute, CallbackOnly: true}
	p := topup.TopUp{ID: 1, AmountRials: 50_000, Status: topup.StatusAwaitingPayment, CreatedAt: created, OpenedAt: &created}
	for _, c := range []struct {
		name    string
		noCall  bool
		counted bool
		next    time.Time
	}{
		{"no call", true, false, created.Add(20*time.Minute + time.Second)},
		{"asked the bank", false, true, now.Add(20 * time.Second)},
	} {
		d := topup.Decide(topup.Input{Step: topup.StepCheck, Actor: topup.ActorWorker, TopUp: p, Now: now, Rules: rules,
			Verify: gateway.VerifyResult{Outcome: gateway.VerifyNoSale, Code: 42, NoCall: c.noCall}})
		if d.Action != topup.ActionKeep || d.Checked != c.counted || d.CountAttempt != c.counted || d.NextCheckAt == nil || !d.NextCheckAt.Equal(c.next) {
			t.Errorf("%s: %+v (next %v), want keep, counted %v, next %v", c.name, d, d.NextCheckAt, c.counted, c.next)
		}
	}
}

// outboxObserver counts what the service tells its observer.
type outboxObserver struct {
	mu                     sync.Mutex
	outbox, creditFailures int
}

func (o *outboxObserver) Transitioned(string, topup.Status, topup.Status, topup.Actor) {}
func (o *outboxObserver) Credited(string, int64)                                       {}
func (o *outboxObserver) CreditFailed(string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.creditFailures++
}
func (o *outboxObserver) OutboxFailed(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outbox++
}

// TestOutboxFailureIsObservedOnItsOwn (item 5): when the partners'
// webhook outbox refuses a credit's event (its insert fails), the credit
// of a bank-verified payment is rolled back; the failure is told apart
// from the bank's (topup.ErrOutbox, OutboxObserver: its own metric and
// alert), and the payment is credited once the outbox works again.
func TestOutboxFailureIsObservedOnItsOwn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		obs := &outboxObserver{}
		e := newEnvWith(t, db, func(c *topup.Config) { c.Observer = obs })
		p := e.start(40_000)
		if err := db.Gorm.Exec(`ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_gone`).Error; err != nil {
			t.Fatal(err)
		}
		_, err := e.back(ctx, p.PublicID, p.AuthorityString())
		if !errors.Is(err, topup.ErrOutbox) {
			t.Fatalf("credit with the outbox refusing: %v, want ErrOutbox", err)
		}
		obs.mu.Lock()
		if obs.outbox != 1 || obs.creditFailures != 1 {
			t.Errorf("observed %d outbox failures and %d failed credits, want 1 and 1", obs.outbox, obs.creditFailures)
		}
		obs.mu.Unlock()
		e.assertUncredited(p)
		if err := db.Gorm.Exec(`ALTER TABLE webhook_deliveries_gone RENAME TO webhook_deliveries`).Error; err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("after the repair: %s, %v", dump(got), err)
		}
		checkInvariants(t, db)
	})
}

// NewReceiptTooSoon, the receipt rule of a callback inside the pacing
// window (item 2), as a table.
func TestNewReceiptTooSoon(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-5*time.Second), now.Add(-time.Minute)
	kept := "R0"
	for _, c := range []struct {
		name    string
		p       topup.TopUp
		receipt string
		want    bool
	}{
		{"first callback", topup.TopUp{Status: topup.StatusAwaitingPayment, LastCheckedAt: &recent}, "R1", false},
		{"new receipt, asked moments ago", topup.TopUp{Status: topup.StatusFailed, ReturnedAt: &old, LastCheckedAt: &recent}, "R1", true},
		{"new receipt after the window", topup.TopUp{Status: topup.StatusFailed, ReturnedAt: &old, LastCheckedAt: &old}, "R1", false},
		{"never asked", topup.TopUp{Status: topup.StatusAwaitingPayment, ReturnedAt: &old}, "R1", false},
		{"the kept receipt again", topup.TopUp{Status: topup.StatusPendingVerification, ReturnedAt: &old, LastCheckedAt: &recent, Receipt: &kept}, "R0", false},
		{"no receipt", topup.TopUp{Status: topup.StatusFailed, ReturnedAt: &old, LastCheckedAt: &recent}, "", false},
		{"credited", topup.TopUp{Status: topup.StatusCredited, ReturnedAt: &old, LastCheckedAt: &recent}, "R1", false},
	} {
		if got := topup.NewReceiptTooSoon(c.p, c.receipt, now, 20*time.Second); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMellatCallbackOfAnotherSale: Mellat's guide requires the merchant to
// check a callback's SaleOrderId before any verify, and its FinalAmount is
// what the payer paid after an online discount. Another sale's callback
// brought to A (its RefId A's, the rest B's) and B's own with a lower
// FinalAmount are refused, nothing kept and nothing verified; B's
// callback as the bank sent it credits B its amount.
func TestMellatCallbackOfAnotherSale(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "mellat")
		d, _ := drivers.Lookup("mellat")
		parse := func(form map[string]string) func(string) (callback.Params, bool) {
			return func(string) (callback.Params, bool) {
				return d.ParseCallback(func(string) string { return "" }, func(k string) string { return form[k] }, true)
			}
		}
		a, b := e.start(110_000), e.start(130_000)
		cbB, err := bank.Finish(b.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		forged := maps.Clone(cbB.Form)
		forged["RefId"] = a.AuthorityString()
		if _, _, err := e.svc.Return(ctx, a.PublicID, parse(forged)); !errors.Is(err, topup.ErrBadCallback) {
			t.Fatalf("B's sale brought to A: %v, want ErrBadCallback", err)
		}
		if ra := e.row(a.ID); ra.Receipt != nil || ra.ReturnedAt != nil || ra.Status != topup.StatusAwaitingPayment {
			t.Fatalf("A after another sale's callback: %s receipt %q", dump(ra), ra.ReceiptString())
		}
		discounted := maps.Clone(cbB.Form)
		discounted["FinalAmount"] = "120000"
		if _, _, err := e.svc.Return(ctx, b.PublicID, parse(discounted)); !errors.Is(err, topup.ErrBadCallback) {
			t.Fatalf("B paid 120,000 of 130,000: %v, want ErrBadCallback", err)
		}
		// The payer sends it again without the FinalAmount that refused it.
		delete(discounted, "FinalAmount")
		if _, _, err := e.svc.Return(ctx, b.PublicID, parse(discounted)); !errors.Is(err, topup.ErrBadCallback) {
			t.Fatalf("B's sale without its FinalAmount: %v, want ErrBadCallback", err)
		}
		if rb := e.row(b.ID); rb.Receipt != nil || rb.ReturnedAt != nil {
			t.Fatalf("B after the discounted callback: %s", dump(rb))
		}
		if bp, _ := bank.Payment(b.AuthorityString()); bp.VerifyCount != 0 {
			t.Fatalf("B verified %d times on refused callbacks", bp.VerifyCount)
		}
		got, _, err := e.svc.Return(ctx, b.PublicID, parse(cbB.Form))
		if err != nil || got.Status != topup.StatusCredited || got.AmountRials != 130_000 {
			t.Fatalf("B's own callback: %s %v", dump(got), err)
		}
		if e.balance() != 130_000 {
			t.Fatalf("balance %d, want 130,000", e.balance())
		}
		checkInvariants(t, db)
	})
}
