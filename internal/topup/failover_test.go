package topup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestFailoverByHealth: with two gateways, a top-up goes to the payer's
// choice, or to the next healthy one when the chosen one's breaker is
// open (never by asking the bank); a payment already at the down gateway
// is never restarted elsewhere: it is verified at its own gateway, and
// the worker postpones it while that gateway is down, checking the other
// gateway's payments meanwhile. A gateway switched off by an operator is
// not offered, but its payments are still verified there.
func TestFailoverByHealth(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		other := topuptest.NewGateway()
		other.GatewayName = "other"
		off := map[string]bool{}
		cfg := topuptest.Config()
		cfg.Disabled = func(context.Context) (map[string]bool, error) { return off, nil }
		e.svc = topup.NewService(sqlstore.New(db), gateway.Set{e.gw, other}, e.clock.Now, nil, cfg)

		// Healthy: the first by default, the chosen one when chosen.
		first := e.start(40_000)
		in := e.input(topup.NewFormToken(), 50_000)
		in.Gateway = "other"
		chosen, err := e.svc.StartTopUp(ctx, in)
		if err != nil || chosen.TopUp.Gateway != "other" || first.Gateway != "fake" || chosen.PayURL == "" {
			t.Fatalf("first %s, chosen %+v, %v", first.Gateway, chosen, err)
		}
		in = e.input(topup.NewFormToken(), 50_000)
		in.Gateway = "paypal"
		if _, err := e.svc.StartTopUp(ctx, in); !errors.Is(err, topup.ErrUnknownGateway) {
			t.Errorf("an unknown gateway: %v", err)
		}

		// The first gateway down: a new top-up preferring it goes to the other.
		e.gw.Open.Store(true)
		in = e.input(topup.NewFormToken(), 60_000)
		in.Gateway = "fake"
		moved, err := e.svc.StartTopUp(ctx, in)
		if err != nil || moved.TopUp.Gateway != "other" || moved.TopUp.Status != topup.StatusAwaitingPayment {
			t.Fatalf("failover: %+v, %v", moved, err)
		}
		if req, _, _ := e.gw.Counts(); req != 1 {
			t.Errorf("%d requests at the down gateway, want the first payment's only", req)
		}

		// The payment at the down gateway is never asked of the other:
		// the worker postpones it, and checks the other's payments.
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		e.clock.Advance(topuptest.WorkerConfig().AbandonedAfter + 1)
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 0 {
			t.Errorf("%d verifies at the down gateway", ver)
		}
		if got := e.row(chosen.TopUp.ID); got.Status != topup.StatusCredited {
			t.Errorf("the other gateway's payment: %s, want credited by the worker", dump(got))
		}
		if got := e.row(first.ID); got.Status != topup.StatusAwaitingPayment || got.Gateway != "fake" {
			t.Errorf("the down gateway's payment: %s", dump(got))
		}
		for _, a := range other.VerifyInputs {
			if a.Authority == first.AuthorityString() {
				t.Errorf("the down gateway's payment was asked of the other gateway")
			}
		}

		// Back up: its payer returns and it is verified at its own gateway.
		e.gw.Open.Store(false)
		got, err := e.back(ctx, first.PublicID, first.AuthorityString())
		if err != nil || got.Status != topup.StatusCredited {
			t.Errorf("return at its own gateway: %s, %v", dump(got), err)
		}
		if _, ver, _ := e.gw.Counts(); ver != 1 {
			t.Errorf("%d verifies at its own gateway, want 1", ver)
		}

		// Every gateway down: refused before anything is written.
		e.gw.Open.Store(true)
		other.Open.Store(true)
		var before int64 = e.count(`SELECT COUNT(*) FROM topups`)
		if _, err := e.svc.StartTopUp(ctx, e.input(topup.NewFormToken(), 60_000)); !errors.Is(err, topup.ErrGatewayFailed) {
			t.Errorf("all down: %v, want ErrGatewayFailed", err)
		}
		if n := e.count(`SELECT COUNT(*) FROM topups`); n != before {
			t.Errorf("%d payments after a refusal, want %d", n, before)
		}

		// Switched off by an operator: not offered, even when healthy.
		e.gw.Open.Store(false)
		other.Open.Store(false)
		off["fake"] = true
		r, err := e.svc.StartTopUp(ctx, e.input(topup.NewFormToken(), 70_000))
		if err != nil || r.TopUp.Gateway != "other" {
			t.Errorf("fake switched off: %+v, %v", r, err)
		}
		in = e.input(topup.NewFormToken(), 70_000)
		in.Gateway = "fake"
		if _, err := e.svc.StartTopUp(ctx, in); !errors.Is(err, topup.ErrUnknownGateway) {
			t.Errorf("choosing a switched-off gateway: %v, want ErrUnknownGateway", err)
		}
		checkInvariants(t, db)
	})
}

// TestGatewayVerifyWindowInTheWorker: the worker applies each payment's
// own gateway's verify window: a payment whose outcome is still unknown
// when its gateway's window has closed goes to review (unknown_too_long
// when its verifies went out unanswered: the bank may have kept it;
// returned_to_payer otherwise), while a payment
// of a gateway without a documented window stays open until
// WORKER_MAX_UNKNOWN. Nothing is credited.
func TestGatewayVerifyWindowInTheWorker(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		windowed := topuptest.NewGateway()
		windowed.GatewayName = "windowed"
		cfg := topuptest.Config()
		cfg.Gateways = map[string]topup.GatewayRules{"windowed": {VerifyDeadline: 20 * time.Minute}}
		e.svc = topup.NewService(sqlstore.New(db), gateway.Set{e.gw, windowed}, e.clock.Now, nil, cfg)
		plain := e.start(40_000)
		in := e.input(topup.NewFormToken(), 50_000)
		in.Gateway = "windowed"
		r, err := e.svc.StartTopUp(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		inWindow := r.TopUp
		// Both banks time out: the payers came back, the outcome unknown.
		for _, g := range []*topuptest.Gateway{e.gw, windowed} {
			g.Unknown.Store(true)
		}
		for _, p := range []topup.TopUp{plain, inWindow} {
			if got, err := e.back(ctx, p.PublicID, p.AuthorityString()); err != nil || got.Status != topup.StatusPendingVerification {
				t.Fatalf("return: %s, %v", dump(got), err)
			}
		}
		w := e.svc.NewWorker(topuptest.WorkerConfig())
		for range 25 {
			e.clock.Advance(time.Minute)
			if _, err := w.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Its verifies went out unanswered: the bank may have verified it
		// and kept the money, so it is unknown, not "returned to payer".
		if got := e.row(inWindow.ID); got.Status != topup.StatusNeedsReview || got.StatusReason != string(topup.ReasonUnknownTooLong) {
			t.Errorf("past its gateway's window: %s", dump(got))
		}
		if got := e.row(plain.ID); got.Status != topup.StatusPendingVerification {
			t.Errorf("a gateway without a window, 25 minutes on: %s", dump(got))
		}
		e.assertUncredited(inWindow)
		checkInvariants(t, db)
	})
}

// TestReadSwitchesOnce: under ReadSwitchesOnce a request reads the
// operator's switches once however often it asks what is offered, while
// the breakers' health is read at each call; without it, each call reads.
func TestReadSwitchesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		other := topuptest.NewGateway()
		other.GatewayName = "other"
		reads := 0
		cfg := topuptest.Config()
		cfg.Disabled = func(context.Context) (map[string]bool, error) {
			reads++
			return map[string]bool{"other": reads > 1}, nil
		}
		svc := topup.NewService(sqlstore.New(db), gateway.Set{e.gw, other}, e.clock.Now, nil, cfg)
		names := func(offers []topup.GatewayOffer) string {
			var out []string
			for _, o := range offers {
				out = append(out, fmt.Sprintf("%s:%v", o.Name, o.Healthy))
			}
			return strings.Join(out, ",")
		}

		ctx := topup.ReadSwitchesOnce(context.Background())
		first, err := svc.Offered(ctx)
		if err != nil || names(first) != "fake:true,other:true" {
			t.Fatalf("first: %s %v", names(first), err)
		}
		e.gw.Open.Store(true)
		second, err := svc.Offered(ctx)
		if err != nil || names(second) != "fake:false,other:true" || reads != 1 {
			t.Fatalf("second in the same request: %s %v (%d reads), want the switches kept and the health new", names(second), err, reads)
		}
		// Another request reads them again (and sees "other" switched off).
		third, err := svc.Offered(topup.ReadSwitchesOnce(context.Background()))
		if err != nil || names(third) != "fake:false" || reads != 2 {
			t.Fatalf("another request: %s %v (%d reads)", names(third), err, reads)
		}
		if _, err := svc.Offered(context.Background()); err != nil || reads != 3 {
			t.Fatalf("without the memo: %v (%d reads)", err, reads)
		}
	})
}
