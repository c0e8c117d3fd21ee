package topup_test

// Reconciliation and the worker at the gateways whose verify needs the
// callback's data (SEP's RefNum, Mellat's SaleReferenceId), against the
// real drivers and the sandbox bank speaking their protocols at their
// own paths, on one fake clock (the bank's, the drivers' and ours).

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// newBankEnv is newEnv whose one gateway is the named driver against a
// sandbox bank on the env's clock, with the gateway's rules from its
// capability record.
func newBankEnv(t *testing.T, db *store.DB, name string) (*env, *sandbank.Bank) {
	t.Helper()
	return newBankEnvWrapped(t, db, name, nil)
}

// newBankEnvWrapped is newBankEnv whose driver is wrapped (nil: not).
func newBankEnvWrapped(t *testing.T, db *store.DB, name string, wrap func(gateway.Gateway) gateway.Gateway) (*env, *sandbank.Bank) {
	t.Helper()
	e := newEnv(t, db)
	bank := sandbank.New(sandbank.Options{Clock: e.clock.Now})
	srv := httptest.NewServer(bank.Handler())
	t.Cleanup(srv.Close)
	d, ok := drivers.Lookup(name)
	if !ok {
		t.Fatalf("no driver %s", name)
	}
	g, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: srv.Client(), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		g = wrap(g)
	}
	cfg := topuptest.Config()
	cfg.Gateways = map[string]topup.GatewayRules{name: topup.RulesOf(d.Capabilities)}
	e.store = &hookStore{Store: sqlstore.New(db)}
	e.svc = topup.NewService(e.store, gateway.Set{g}, e.clock.Now, nil, cfg)
	return e, bank
}

// reconcile runs reconciliation and returns its items by payment.
func (e *env) reconcile() (topup.ReconcileReport, map[string]topup.ReconcileItem) {
	e.t.Helper()
	return e.reconcileWith(topup.ReconcileConfig{Budget: time.Minute})
}

// reconcileWith is reconcile with explicit bounds.
func (e *env) reconcileWith(rc topup.ReconcileConfig) (topup.ReconcileReport, map[string]topup.ReconcileItem) {
	e.t.Helper()
	rep, err := e.svc.ReconcileWith(context.Background(), rc)
	if err != nil {
		e.t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	items := map[string]topup.ReconcileItem{}
	for _, it := range rep.Items() {
		items[it.PublicID] = it
	}
	return rep, items
}

// eventCount counts all payment events (a run that changes nothing adds
// none).
func (e *env) eventCount() int64 { return e.count(`SELECT COUNT(*) FROM topup_events`) }

// TestReconcileSEPByReceipt: SEP lists nothing, and its verify needs the
// callback's RefNum; within an hour of the token its receipt names it.
// Payers paid and their callbacks were lost: one payment failed here
// meanwhile, one is still open. Reconciliation asks each receipt, and the
// bank holding them paid, verifies and credits them through the state
// machine (the failed one reopened first), exactly once; a payer who
// cancelled is asked about and left alone. A second run changes nothing.
// A payment past the hour is reported as beyond SEP's API, not credited,
// and SEP is not asked about it.
func TestReconcileSEPByReceipt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, bank := newBankEnv(t, db, "sep")
		failed, open, cancelled := e.start(100_000), e.start(200_000), e.start(300_000)
		for _, p := range []topup.TopUp{failed, open} {
			if _, err := bank.Pay(p.AuthorityString()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := bank.Cancel(cancelled.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(5 * time.Minute)
		topuptest.ForceStatus(t, db, failed.ID, string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife))
		topuptest.ForceStatus(t, db, cancelled.ID, string(topup.StatusFailed), string(topup.ReasonBankCancelled))

		// A run whose budget is spent once its list is read, before it
		// asks anything: each payment is not reached, none counted as ours
		// looked at (as the other sources count), nothing credited.
		// (The run's context ends once the list is read: as a budget
		// spent, with no real time to race.)
		runCtx, spend := context.WithCancel(context.Background())
		defer spend()
		e.store.set(func(h *hookStore) { h.listed = func(context.Context) { spend() } })
		spent, err := e.svc.ReconcileWith(runCtx, topup.ReconcileConfig{Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		e.store.set(func(h *hookStore) { h.listed = nil })
		if spent.Unreached != 3 || spent.Ours != 0 || spent.Credited != 0 || spent.Left() != 3 || e.balance() != 0 {
			t.Fatalf("a spent budget's run: %+v, balance %d", spent, e.balance())
		}

		rep, items := e.reconcile()
		if rep.Gateway != "sep" || rep.Listed != 3 || rep.Ours != 2 || rep.Credited != 2 || rep.CreditedRials != 300_000 || len(items) != 2 {
			t.Fatalf("report %+v, items %+v", rep, items)
		}
		for _, p := range []topup.TopUp{failed, open} {
			if it := items[p.PublicID]; it.Kind != "credited" {
				t.Errorf("item of %s: %+v", p.PublicID, it)
			}
			r := e.row(p.ID)
			if r.Status != topup.StatusCredited || r.RefID == nil {
				t.Errorf("after reconciliation: %s", dump(r))
			}
			if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified || bp.VerifyCount != 1 {
				t.Errorf("at the bank: %+v", bp)
			}
		}
		if got := e.events(failed); !slices.Contains(got, "failed>pending_verification:reconcile:reopened") ||
			got[len(got)-1] != "pending_verification>credited:reconcile:verified_paid" {
			t.Errorf("events of the failed one: %v", got)
		}
		if r := e.row(cancelled.ID); r.Status != topup.StatusFailed || r.StatusReason != string(topup.ReasonBankCancelled) {
			t.Errorf("the cancelled one: %s", dump(r))
		}
		if e.balance() != 300_000 {
			t.Errorf("balance %d, want 300,000", e.balance())
		}

		events := e.eventCount()
		rep, items = e.reconcile()
		if rep.Credited != 0 || len(items) != 0 || e.balance() != 300_000 || e.eventCount() != events {
			t.Errorf("second run: %+v %+v, balance %d, events %d → %d", rep, items, e.balance(), events, e.eventCount())
		}

		// Past the hour: paid at the bank, the callback lost, under review
		// here; SEP keeps no receipt any more.
		late := e.start(400_000)
		if _, err := bank.Pay(late.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceStatus(t, db, late.ID, string(topup.StatusNeedsReview), string(topup.ReasonReturnedToPayer))
		e.clock.Advance(61 * time.Minute)
		before := bank.Stats()["sep-inquiry"].Calls
		rep, items = e.reconcile()
		if it := items[late.PublicID]; it.Kind != topup.KindReceiptExpired || it.Detail == "" || rep.Credited != 0 || len(items) != 1 {
			t.Errorf("past the hour: %+v, items %+v", rep, items)
		}
		if got := bank.Stats()["sep-inquiry"].Calls; got != before {
			t.Errorf("SEP's receipt was asked %d times past its hour", got-before)
		}
		e.assertUncredited(late)
		if r := e.row(late.ID); r.Status != topup.StatusNeedsReview || e.balance() != 300_000 {
			t.Errorf("past the hour: %s, balance %d", dump(r), e.balance())
		}
		checkInvariants(t, db)
	})
}

// TestReconcileMellatBySale: Mellat lists nothing, and its inquiry needs
// the callback's SaleReferenceId. A payer paid and came back; the bank
// verified the sale but its answer was lost, and the payment went to
// review here. Reconciliation asks bpInquiryRequest with the kept
// reference (0: verified), then verifies (43), settles (settling) and credits
// through the state machine, exactly once; a second run changes nothing.
// A payment whose payer never came back cannot be asked about: once
// ended, it is reported as such, never credited.
func TestReconcileMellatBySale(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "mellat")
		p := verifyAnswerLost(ctx, t, e, bank, 150_000)
		bank.ClearFaults()
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified {
			t.Fatalf("at the bank: %+v", bp)
		}
		topuptest.ForceStatus(t, db, p.ID, string(topup.StatusNeedsReview), string(topup.ReasonUnknownTooLong))

		// A payer who never came back, ended here at the bank's window.
		gone := e.start(250_000)
		if _, err := bank.Pay(gone.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		topuptest.ForceStatus(t, db, gone.ID, string(topup.StatusNeedsReview), string(topup.ReasonReturnedToPayer))

		rep, items := e.reconcile()
		if rep.Gateway != "mellat" || rep.Listed != 1 || rep.Credited != 1 || rep.CreditedRials != 150_000 || len(items) != 2 {
			t.Fatalf("report %+v, items %+v", rep, items)
		}
		if it := items[p.PublicID]; it.Kind != "credited" {
			t.Errorf("item: %+v", it)
		}
		if it := items[gone.PublicID]; it.Kind != topup.KindNoCallback || it.Detail == "" {
			t.Errorf("the payment without a callback: %+v", it)
		}
		if r := e.row(p.ID); r.Status != topup.StatusCredited || r.StatusReason != string(topup.ReasonSettled) {
			t.Errorf("after reconciliation: %s", dump(r))
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.SettledAt.IsZero() {
			t.Errorf("not settled at the bank: %+v", bp)
		}
		e.assertUncredited(gone)
		if e.balance() != 150_000 {
			t.Errorf("balance %d, want 150,000", e.balance())
		}

		events, inquiries := e.eventCount(), bank.Stats()["mellat-inquiry"].Calls
		rep, items = e.reconcile()
		if rep.Credited != 0 || rep.Listed != 0 || len(items) != 1 || items[gone.PublicID].Kind != topup.KindNoCallback ||
			e.balance() != 150_000 || e.eventCount() != events || bank.Stats()["mellat-inquiry"].Calls != inquiries {
			t.Errorf("second run: %+v %+v, balance %d, events %d → %d", rep, items, e.balance(), events, e.eventCount())
		}
		checkInvariants(t, db)
	})
}

// verifyAnswerLost starts a Mellat top-up of amount that the payer pays
// and comes back from with a sale, whose verify the bank commits and never
// answers: pending verification, the sale's reference kept (the callback's).
func verifyAnswerLost(ctx context.Context, t *testing.T, e *env, bank *sandbank.Bank, amount int64) topup.TopUp {
	t.Helper()
	p := e.start(amount)
	cb, err := bank.Finish(p.AuthorityString(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"mellat-verify": {CommitThenHang: true, HangMS: 1}}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true)
	if err != nil || got.Status != topup.StatusPendingVerification || got.ReceiptString() != cb.Form["SaleReferenceId"] {
		t.Fatalf("callback with the verify's answer lost: %s, %v", dump(got), err)
	}
	return got
}

// TestMellatVerifyUnansweredUntilTheWindow: the payer came back with a
// sale, the bank verified it, and every answer to our verify was lost
// until Mellat's verify window closed here: the worker sends the payment
// to review (returned_to_payer), keeping the sale's reference the verify
// went out with. An admin's recheck then asks the bank with it (43, then
// settle) and credits it once; so would reconciliation. (The reference
// was dropped with that move: the recheck made no call and failed the
// payment, bank_cancelled, on no word; the sale was never settled.)
func TestMellatVerifyUnansweredUntilTheWindow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "mellat")
		p := verifyAnswerLost(ctx, t, e, bank, 140_000)
		sale := p.ReceiptString()
		// Then Mellat answers nothing at all until the window closes.
		down := sandbank.OpFaults{DropRate: 1}
		if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"mellat-verify": down, "mellat-inquiry": down, "mellat-settle": down}}); err != nil {
			t.Fatal(err)
		}
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		for range 25 {
			e.clock.Advance(time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := e.row(p.ID)
		// Not "returned to the payer": the verify's answer was lost, and
		// the bank had in fact verified it.
		if r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonUnknownTooLong) ||
			r.ReceiptString() != sale {
			t.Fatalf("past the verify window: %s, receipt %q; want under review with the sale's reference", dump(r), r.ReceiptString())
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified {
			t.Fatalf("at the bank: %+v", bp)
		}
		bank.ClearFaults()
		if got, err := e.svc.AdminRecheck(ctx, p.PublicID, e.user.ID); err != nil || got.Status != topup.StatusCredited {
			t.Fatalf("the admin's recheck: %s, %v", dump(got), err)
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.SettledAt.IsZero() {
			t.Errorf("not settled at the bank: %+v", bp)
		}
		if e.balance() != 140_000 {
			t.Errorf("balance %d, want 140,000", e.balance())
		}
		if rep, items := e.reconcile(); rep.Credited != 0 || len(items) != 0 || e.balance() != 140_000 {
			t.Errorf("reconciliation after the credit: %+v %+v, balance %d", rep, items, e.balance())
		}
		checkInvariants(t, db)
	})
}

// TestMellatWithoutCallbackEndsAtTheWindow: a Mellat payment whose payer
// paid and never came back cannot be verified (the sale's reference comes
// only with the callback) nor asked about. The worker keeps it open until
// Mellat's verify window (20 minutes from its creation) closes — not at
// the authority's lifetime, shorter or longer — and then sends it to
// review as returned to the payer by the bank (which it was: the bank
// reverses an unverified sale at 20 minutes). Never failed, never
// credited.
func TestMellatWithoutCallbackEndsAtTheWindow(t *testing.T) {
	for _, lifetime := range []time.Duration{10 * time.Minute, time.Hour} {
		t.Run(lifetime.String(), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := newBankEnv(t, db, "mellat")
				p := e.start(150_000)
				if _, err := bank.Pay(p.AuthorityString()); err != nil {
					t.Fatal(err)
				}
				wc := topuptest.WorkerConfig()
				wc.AuthorityLifetime = lifetime
				w := e.svc.NewWorker(wc)
				for minute := 1; minute <= 25; minute++ {
					e.clock.Advance(time.Minute)
					if _, err := w.RunOnce(ctx); err != nil {
						t.Fatal(err)
					}
					r := e.row(p.ID)
					switch {
					case minute < 20 && r.Status != topup.StatusAwaitingPayment:
						t.Fatalf("minute %d, within the window: %s", minute, dump(r))
					case minute < 20 && (r.Attempts != 0 || r.LastCheckedAt != nil):
						// Issue 31 item 3: nothing was asked, nothing is counted.
						t.Fatalf("minute %d: a check without a bank call counted: %s last checked %v", minute, dump(r), r.LastCheckedAt)
					case minute >= 3 && minute < 20 && (r.NextCheckAt == nil || r.NextCheckAt.Before(p.CreatedAt.Add(20*time.Minute))):
						// Looked at once (abandoned after 2 minutes), then next
						// when the verify window closes.
						t.Fatalf("minute %d: next check %v, want at the verify window's end", minute, r.NextCheckAt)
					case minute > 20 && (r.Status != topup.StatusNeedsReview || r.StatusReason != string(topup.ReasonReturnedToPayer)):
						t.Fatalf("minute %d, past the window: %s", minute, dump(r))
					}
				}
				if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateReversed {
					t.Errorf("at the bank: %+v", bp)
				}
				if n := bank.Stats()["mellat-verify"].Calls + bank.Stats()["mellat-inquiry"].Calls; n != 0 {
					t.Errorf("the bank was asked %d times about a sale nobody named", n)
				}
				e.assertUncredited(p)
				if e.balance() != 0 {
					t.Errorf("balance %d", e.balance())
				}
				checkInvariants(t, db)
			})
		})
	}
}

// TestPaidCallbackAfterABankCancelIsAskedAgain: a Mellat payment ended
// failed (bank_cancelled) by a callback without a sale (the bank's
// cancel, or a forged one), then the payer pays on the page still open
// and comes back with a sale within the pacing window. That callback is
// not a duplicate of the bank's word, but the bank was asked moments ago:
// its new receipt is refused, never kept unchecked (issue 31: kept, a
// forged one would hold another payment's sale), and the payer's retry
// after the window is checked at once and credited once. A duplicate of
// the cancel itself is still answered from the row.
func TestPaidCallbackAfterABankCancelIsAskedAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "mellat")
		p := e.start(120_000)
		got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), "", false)
		if err != nil || got.Status != topup.StatusFailed || got.StatusReason != string(topup.ReasonBankCancelled) {
			t.Fatalf("callback without a sale: %s, %v", dump(got), err)
		}
		events := e.eventCount()
		if got, err := e.backWith(ctx, p.PublicID, p.AuthorityString(), "", false); err != nil ||
			got.Status != topup.StatusFailed || e.eventCount() != events {
			t.Fatalf("a duplicate of the cancel: %s, %v, events %d → %d", dump(got), err, events, e.eventCount())
		}
		cb, err := bank.Finish(p.AuthorityString(), true)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Second) // within the pacing window
		got, err = e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true)
		if !errors.Is(err, topup.ErrReceiptTooSoon) {
			t.Fatalf("callback with a sale within the window: %s, %v; want refused, too soon", dump(got), err)
		}
		if r := e.row(p.ID); r.Receipt != nil || r.Status != topup.StatusFailed {
			t.Fatalf("after the refused callback: %s receipt %q", dump(r), r.ReceiptString())
		}
		e.assertUncredited(p)
		e.clock.Advance(30 * time.Second)
		if got, err = e.backWith(ctx, p.PublicID, cb.Form["RefId"], cb.Form["SaleReferenceId"], true); err != nil {
			t.Fatalf("the payer's retry after the window: %s, %v", dump(got), err)
		}
		if _, err := e.svc.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(p.ID); r.Status != topup.StatusCredited || e.balance() != 120_000 {
			t.Fatalf("after the worker: %s, balance %d", dump(r), e.balance())
		}
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified || bp.SettledAt.IsZero() {
			t.Errorf("at the bank: %+v", bp)
		}
		checkInvariants(t, db)
	})
}

// A callback's receipt is the payer's claim until the bank confirms it.
// A forged one (another payment's sale, or one made up) that the bank
// knows no sale of ours by fails the payment as unpaid and is dropped
// with that move, so it blocks neither the other payment's real callback
// (unique (gateway, receipt)) nor this payment's own: both payers, who
// paid, are credited once each.
func TestAForgedReceiptBlocksNoRealCallback(t *testing.T) {
	for _, forged := range []string{"another payment's sale", "a made-up sale"} {
		t.Run(forged, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := newBankEnv(t, db, "mellat")
				a, b := e.start(110_000), e.start(130_000)
				cbA, err := bank.Finish(a.AuthorityString(), true)
				if err != nil {
					t.Fatal(err)
				}
				cbB, err := bank.Finish(b.AuthorityString(), true)
				if err != nil {
					t.Fatal(err)
				}
				receipt := cbB.Form["SaleReferenceId"]
				if forged == "a made-up sale" {
					receipt = "987654321012"
				}
				got, err := e.backWith(ctx, a.PublicID, cbA.Form["RefId"], receipt, true)
				if err != nil || got.Status != topup.StatusFailed || got.Receipt != nil {
					t.Fatalf("A's forged callback: %s, %v; want failed with no receipt kept", dump(got), err)
				}
				if got, err := e.backWith(ctx, b.PublicID, cbB.Form["RefId"], cbB.Form["SaleReferenceId"], true); err != nil ||
					got.Status != topup.StatusCredited {
					t.Fatalf("B's real callback: %s, %v", dump(got), err)
				}
				e.clock.Advance(2 * time.Second) // within A's pacing window
				// A new receipt the bank cannot be asked about now is refused,
				// never kept unchecked (issue 31); the payer's retry after the
				// window is checked at once.
				if got, err := e.backWith(ctx, a.PublicID, cbA.Form["RefId"], cbA.Form["SaleReferenceId"], true); !errors.Is(err, topup.ErrReceiptTooSoon) {
					t.Fatalf("A's real callback in the window: %s, %v; want refused, too soon", dump(got), err)
				}
				if ra := e.row(a.ID); ra.Receipt != nil {
					t.Fatalf("A kept a receipt unchecked: %q", ra.ReceiptString())
				}
				e.clock.Advance(30 * time.Second)
				if got, err := e.backWith(ctx, a.PublicID, cbA.Form["RefId"], cbA.Form["SaleReferenceId"], true); err != nil ||
					got.Status != topup.StatusCredited {
					t.Fatalf("A's real callback after the window: %s, %v; want credited at once", dump(got), err)
				}
				if _, err := e.svc.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				ra, rb := e.row(a.ID), e.row(b.ID)
				if ra.Status != topup.StatusCredited || rb.Status != topup.StatusCredited || e.balance() != 240_000 {
					t.Fatalf("A %s, B %s, balance %d; want both credited, 240000", dump(ra), dump(rb), e.balance())
				}
				if ra.ReceiptString() != cbA.Form["SaleReferenceId"] || rb.ReceiptString() != cbB.Form["SaleReferenceId"] {
					t.Errorf("receipts: A %q, B %q", ra.ReceiptString(), rb.ReceiptString())
				}
				checkInvariants(t, db)
			})
		})
	}
}

// A SEP payment whose payer never came back is verified with the RefNum
// its token's receipt names, and SEP forgets that receipt once verified.
// The RefNum is kept on the row before the verify, so that a crash after
// the verify (here: its answer recorded nowhere, the credit failing)
// leaves what the next check verifies again with ("already verified"):
// credited once, never left to wait for a receipt nobody can give.
func TestSEPReceiptKeptBeforeVerify(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "sep")
		p := e.start(150_000)
		paid, err := bank.Finish(p.AuthorityString(), true) // the callback it would make is lost
		if err != nil {
			t.Fatal(err)
		}
		e.store.set(func(h *hookStore) {
			h.credit = func(topup.Move) error { return errors.New("killed after the verify") }
		})
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.row(p.ID)
		if bp, _ := bank.Payment(p.AuthorityString()); bp.State != sandbank.StateVerified || r.Status == topup.StatusCredited {
			t.Fatalf("after the first check: bank %+v, row %s", bp, dump(r))
		}
		if r.ReceiptString() == "" || r.ReceiptString() != paid.Form["RefNum"] {
			t.Fatalf("receipt kept %q, want the token's RefNum %q", r.ReceiptString(), paid.Form["RefNum"])
		}
		e.store.set(func(h *hookStore) { h.credit = nil })
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.NewWorker(topuptest.WorkerConfig()).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if r := e.row(p.ID); r.Status != topup.StatusCredited || e.balance() != 150_000 {
			t.Fatalf("after the second check: %s, balance %d", dump(r), e.balance())
		}
		checkInvariants(t, db)
	})
}

// SEP: a callback for payment A carrying B's RefNum holds that RefNum on
// A only until A's check asks SEP's receipt of A's own token: paid, the
// RefNum the bank names replaces it (and A is credited with A's sale);
// cancelled, A fails and the RefNum is dropped. Either way B's real
// callback, right after, keeps its RefNum and is credited at once,
// never refused for a RefNum another payment held.
func TestSEPForgedRefNumGivesWay(t *testing.T) {
	for _, aPaid := range []bool{true, false} {
		name := map[bool]string{true: "A paid", false: "A cancelled"}[aPaid]
		t.Run(name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e, bank := newBankEnv(t, db, "sep")
				a, b := e.start(110_000), e.start(130_000)
				cbA, err := bank.Finish(a.AuthorityString(), aPaid)
				if err != nil {
					t.Fatal(err)
				}
				cbB, err := bank.Finish(b.AuthorityString(), true)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.backWith(ctx, a.PublicID, a.AuthorityString(), cbB.Form["RefNum"], true)
				wantA, wantReceipt := topup.StatusFailed, ""
				if aPaid {
					wantA, wantReceipt = topup.StatusCredited, cbA.Form["RefNum"]
				}
				if err != nil || got.Status != wantA || got.ReceiptString() != wantReceipt {
					t.Fatalf("A's callback with B's RefNum: %s receipt %q, %v; want %s with receipt %q", dump(got), got.ReceiptString(), err, wantA, wantReceipt)
				}
				got, err = e.backWith(ctx, b.PublicID, b.AuthorityString(), cbB.Form["RefNum"], true)
				if err != nil || got.Status != topup.StatusCredited || got.ReceiptString() != cbB.Form["RefNum"] {
					t.Fatalf("B's real callback: %s, %v", dump(got), err)
				}
				want := int64(130_000)
				if aPaid {
					want += 110_000
				}
				if e.balance() != want {
					t.Fatalf("balance %d, want %d", e.balance(), want)
				}
				checkInvariants(t, db)
			})
		})
	}
}

// TestReconcileZarinpalVerifiedByTheBank: with its panel's auto-verify
// on, Zarinpal verifies a paid payment by itself, and lists it no more
// as unverified. One that ended here first (its page's lifetime passed
// with no word from the bank, the payer's callback lost) was found by
// nothing. Reconciliation now asks such an ended payment by inquiry and
// credits it, once; one the bank said was never paid is not asked.
func TestReconcileZarinpalVerifiedByTheBank(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e, bank := newBankEnv(t, db, "zarinpal")
		late, cancelled := e.start(100_000), e.start(200_000)
		if _, err := bank.Pay(late.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		if _, err := bank.Cancel(cancelled.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		// The bank's own verify of the paid one: its auto-verify.
		srv := httptest.NewServer(bank.Handler())
		t.Cleanup(srv.Close)
		d, _ := drivers.Lookup("zarinpal")
		auto, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: srv.Client(), Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if vr, err := auto.Verify(ctx, gateway.VerifyInput{Authority: late.AuthorityString(), AmountRials: 100_000}); err != nil || vr.Outcome != gateway.VerifyPaid {
			t.Fatalf("the bank's own verify: %+v %v", vr, err)
		}
		e.clock.Advance(30 * time.Minute)
		topuptest.ForceStatus(t, db, late.ID, string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife))
		topuptest.ForceStatus(t, db, cancelled.ID, string(topup.StatusFailed), string(topup.ReasonBankCancelled))

		rep, items := e.reconcile()
		if rep.Credited != 1 || rep.CreditedRials != 100_000 || items[late.PublicID].Kind != "credited" || len(items) != 1 {
			t.Fatalf("report %+v, items %+v", rep, items)
		}
		if r := e.row(late.ID); r.Status != topup.StatusCredited || r.RefID == nil {
			t.Fatalf("the late one after reconciliation: %s", dump(r))
		}
		if r := e.row(cancelled.ID); r.Status != topup.StatusFailed || r.StatusReason != string(topup.ReasonBankCancelled) {
			t.Fatalf("the cancelled one: %s", dump(r))
		}
		if e.balance() != 100_000 {
			t.Fatalf("balance %d, want 100,000", e.balance())
		}
		// Again: nothing more to credit.
		if rep, _ := e.reconcile(); rep.Credited != 0 || e.balance() != 100_000 {
			t.Fatalf("a second run: %+v, balance %d", rep, e.balance())
		}
		checkInvariants(t, db)
	})
}

// TestReconcileCoversMoreThanOneRun: a gateway with more ended payments
// in the day than one run reads (Batch) has them all asked over the runs,
// least recently asked first (past their hot hour, which every run asks).
// Before, each run read the newest ones, and an older payment the bank
// holds paid was never asked again.
func TestReconcileCoversMoreThanOneRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, bank := newBankEnv(t, db, "zibal")
		var ps []topup.TopUp
		for range 4 {
			ps = append(ps, e.start(100_000))
			e.clock.Advance(time.Minute)
		}
		paid := ps[0] // the oldest
		if _, err := bank.Pay(paid.AuthorityString()); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			topuptest.ForceStatus(t, db, p.ID, string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife))
		}
		// Past the hot hour, when they are read by their turn.
		e.clock.Advance(2 * time.Hour)
		rc := topup.ReconcileConfig{Budget: time.Minute, Batch: 2}
		rep, _ := e.reconcileWith(rc)
		if rep.Listed != 2 || rep.Credited != 0 {
			t.Fatalf("first run: %+v", rep)
		}
		e.clock.Advance(time.Minute)
		rep, items := e.reconcileWith(rc)
		if rep.Listed != 2 || rep.Credited != 1 || items[paid.PublicID].Kind != "credited" {
			t.Fatalf("second run: %+v %+v", rep, items)
		}
		if r := e.row(paid.ID); r.Status != topup.StatusCredited || r.RefID == nil || len(e.ledgerOf(paid.ID)) != 1 {
			t.Fatalf("the paid one after two runs: %s", dump(r))
		}
		for _, p := range ps[1:] {
			if r := e.row(p.ID); r.Status != topup.StatusFailed || r.ReconciledAt == nil {
				t.Fatalf("%s after two runs: %s", p.PublicID, dump(r))
			}
		}
		if e.balance() != 100_000 {
			t.Fatalf("balance %d, want 100,000", e.balance())
		}
		// A payment that ended within the hot hour is asked at every run,
		// ahead of the others, however recently it was asked.
		fresh := e.start(50_000)
		topuptest.ForceStatus(t, db, fresh.ID, string(topup.StatusFailed), string(topup.ReasonNotPaidAfterLife))
		one := topup.ReconcileConfig{Budget: time.Minute, Batch: 1}
		for run := range 2 {
			e.clock.Advance(10 * time.Minute)
			started := e.clock.Now().Truncate(time.Millisecond)
			e.reconcileWith(one)
			if r := e.row(fresh.ID); r.ReconciledAt == nil || r.ReconciledAt.Before(started) {
				t.Fatalf("run %d: the hot payment looked at %v, want in this run (from %v)", run+1, r.ReconciledAt, started)
			}
		}
		checkInvariants(t, db)
	})
}

// UnsureEnded keeps the ended payments the bank gave no word on: failed
// at the lifetime within the window, or under review.
func TestUnsureEnded(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	recent, long := now.Add(-10*time.Minute), now.Add(-2*time.Hour)
	ps := []topup.TopUp{
		{PublicID: "lifetime", Status: topup.StatusFailed, StatusReason: string(topup.ReasonNotPaidAfterLife), ResolvedAt: &recent},
		{PublicID: "lifetime long ago", Status: topup.StatusFailed, StatusReason: string(topup.ReasonNotPaidAfterLife), ResolvedAt: &long},
		{PublicID: "lifetime, no end time", Status: topup.StatusFailed, StatusReason: string(topup.ReasonNotPaidAfterLife), UpdatedAt: recent},
		{PublicID: "review", Status: topup.StatusNeedsReview, StatusReason: string(topup.ReasonUnknownTooLong), ResolvedAt: &long},
		{PublicID: "cancelled", Status: topup.StatusFailed, StatusReason: string(topup.ReasonBankCancelled), ResolvedAt: &recent},
		{PublicID: "admin", Status: topup.StatusFailed, StatusReason: "closed_by_admin", ResolvedAt: &recent},
	}
	var got []string
	for _, p := range topup.UnsureEnded(ps, now) {
		got = append(got, p.PublicID)
	}
	if !slices.Equal(got, []string{"lifetime", "lifetime, no end time", "review"}) {
		t.Fatalf("unsure: %v", got)
	}
}
