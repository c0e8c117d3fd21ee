package topup_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// TestReconcileDue: a gateway's periodic reconciliation is due when none
// is stored, or when its newest started an interval or more ago.
func TestReconcileDue(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	const interval = 10 * time.Minute
	for _, c := range []struct {
		name    string
		started time.Time
		found   bool
		want    bool
	}{
		{"never reconciled", time.Time{}, false, true},
		{"just now", now, true, false},
		{"a second short of the interval", now.Add(-interval + time.Second), true, false},
		{"exactly the interval", now.Add(-interval), true, true},
		{"long ago", now.Add(-24 * time.Hour), true, true},
		{"in the future (another's clock)", now.Add(time.Minute), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := topup.ReconcileDue(topup.ReconcileReport{StartedAt: c.started}, c.found, now, interval)
			if got != c.want {
				t.Errorf("due %v, want %v", got, c.want)
			}
		})
	}
}

// TestReconcileIfDueSharesOneSchedule: instances over one database share
// the periodic reconciliation's schedule through the stored reports and
// each gateway's turn. The first to look reconciles every gateway;
// another instance looking within the interval asks no bank; once a
// gateway's newest report is an interval old, the next look reconciles
// that gateway alone, and what it finds is credited; while another
// instance holds a gateway's turn (its run still asking the bank, its
// report not yet stored), a look that finds the gateway due leaves it.
func TestReconcileIfDueSharesOneSchedule(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const interval = 10 * time.Minute
		e := newEnv(t, db)
		other := topuptest.NewGateway()
		other.GatewayName = "other"
		gws := gateway.Set{e.gw, other}
		first := topup.NewService(sqlstore.New(db), gws, e.clock.Now, nil, topuptest.Config())
		second := topup.NewService(sqlstore.New(db), gws, e.clock.Now, nil, topuptest.Config())

		rep, ran, err := first.ReconcileIfDue(ctx, interval)
		if err != nil || !ran || rep.Gateway != "fake,other" {
			t.Fatalf("first look: ran %v, gateways %q, %v", ran, rep.Gateway, err)
		}
		if n := len(topuptest.Reconciles(t, db)); n != 2 {
			t.Fatalf("%d reports after the first look, want one per gateway", n)
		}
		e.clock.Advance(interval - time.Second)
		if _, ran, err := second.ReconcileIfDue(ctx, interval); err != nil || ran {
			t.Fatalf("another instance within the interval: ran %v, %v", ran, err)
		}
		if n := len(topuptest.Reconciles(t, db)); n != 2 {
			t.Fatalf("%d reports after a look within the interval, want 2", n)
		}

		// "other" reconciled by hand meanwhile (kifpool reconcile, an
		// admin): only "fake" is due when the interval has passed.
		e.clock.Advance(time.Second / 2)
		if _, err := topup.NewService(sqlstore.New(db), gateway.Set{other}, e.clock.Now, nil, topuptest.Config()).Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		lost := e.start(70_000)
		e.gw.Set(func(g *topuptest.Gateway) {
			g.Unverified = []gateway.Unverified{{Authority: lost.AuthorityString(), AmountRials: 70_000, CallbackURL: e.svc.CallbackURL(lost.PublicID)}}
		})
		e.clock.Advance(time.Second / 2)
		rep, ran, err = second.ReconcileIfDue(ctx, interval)
		if err != nil || !ran || rep.Gateway != "fake" || rep.Credited != 1 || rep.CreditedRials != 70_000 {
			t.Fatalf("the look past the interval: ran %v, %+v, %v", ran, rep, err)
		}
		if got := e.row(lost.ID); got.Status != topup.StatusCredited {
			t.Errorf("the payment the bank listed: %s", dump(got))
		}
		if b := e.balance(); b != 70_000 {
			t.Errorf("balance %d, want 70000", b)
		}
		if _, ran, err := first.ReconcileIfDue(ctx, interval); err != nil || ran {
			t.Errorf("the first instance right after: ran %v, %v", ran, err)
		}
		if n := len(topuptest.Reconciles(t, db)); n != 4 {
			t.Errorf("%d reports, want 4 (two, other's by hand, fake's)", n)
		}

		// An interval on, a third instance has taken both turns and is
		// still running: the two others find the gateways due by their
		// reports, and leave them.
		e.clock.Advance(interval)
		st := sqlstore.New(db)
		now := e.clock.Now()
		for _, gw := range []string{"fake", "other"} {
			if ok, err := st.ClaimReconcileTurn(ctx, gw, now, now.Add(interval)); err != nil || !ok {
				t.Fatalf("the third instance's turn of %s: %v %v", gw, ok, err)
			}
			if ok, err := st.ClaimReconcileTurn(ctx, gw, now, now.Add(interval)); err != nil || ok {
				t.Fatalf("a second claim of %s at the same moment: %v %v", gw, ok, err)
			}
		}
		for _, svc := range []*topup.Service{first, second} {
			if _, ran, err := svc.ReconcileIfDue(ctx, interval); err != nil || ran {
				t.Errorf("a look while another instance holds the turns: ran %v, %v", ran, err)
			}
		}
		if n := len(topuptest.Reconciles(t, db)); n != 4 {
			t.Errorf("%d reports after the looks during another's run, want 4", n)
		}
		checkInvariants(t, db)
	})
}

// slowList is a gateway whose list answers only when the test says.
type slowList struct {
	*topuptest.Gateway
	entered, answer chan struct{}
}

func (g slowList) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	close(g.entered)
	<-g.answer
	return g.Gateway.ListUnverified(ctx)
}

// TestAPeriodicRunKeepsItsTurnWhileItGoesOn: a periodic run holds its
// gateway's turn for at most an interval (here a second), but keeps it
// while it goes on: a run still asking the bank past its hold is not
// joined by another instance's, and gives the turn back when it ends.
func TestAPeriodicRunKeepsItsTurnWhileItGoesOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const interval = time.Second
		e := newEnv(t, db)
		slow := slowList{Gateway: e.gw, entered: make(chan struct{}), answer: make(chan struct{})}
		first := topup.NewService(sqlstore.New(db), gateway.Set{slow}, e.clock.Now, nil, topuptest.Config())
		second := topup.NewService(sqlstore.New(db), gateway.Set{e.gw}, e.clock.Now, nil, topuptest.Config())
		held := func() bool {
			var n int64
			if err := db.Gorm.Raw(`SELECT COUNT(*) FROM reconcile_turns WHERE gateway = ? AND next_at > ?`, e.gw.Name(), e.clock.Now().UTC()).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		type result struct {
			ran bool
			err error
		}
		done := make(chan result, 1)
		go func() {
			_, ran, err := first.ReconcileIfDue(ctx, interval)
			done <- result{ran, err}
		}()
		<-slow.entered
		// Five holds on, the run still asking: its turn is kept. The
		// clock moves a fifth of the hold at a time, each step only once
		// the turn was renewed since (a hold from then on): a jump past
		// the turn's end would be a renewal come too late, which rightly
		// stops the run.
		for range 25 {
			e.clock.Advance(interval / 5)
			step := e.clock.Now()
			testwait.Eventually(t, 10*time.Second, "the running run's turn renewed past its hold", func() bool {
				var n int64
				if err := db.Gorm.Raw(`SELECT COUNT(*) FROM reconcile_turns WHERE gateway = ? AND next_at >= ?`, e.gw.Name(), step.Add(interval).UTC()).Scan(&n).Error; err != nil {
					t.Fatal(err)
				}
				return n == 1
			})
		}
		if !held() {
			t.Fatal("the running run's turn is not held")
		}
		if _, ran, err := second.ReconcileIfDue(ctx, interval); err != nil || ran {
			t.Fatalf("another instance beside a running run: ran %v, %v", ran, err)
		}
		close(slow.answer)
		if r := <-done; r.err != nil || !r.ran {
			t.Fatalf("the slow run: ran %v, %v", r.ran, r.err)
		}
		if held() {
			t.Fatal("the turn was not given back when the run ended")
		}
		if n := len(topuptest.Reconciles(t, db)); n != 1 {
			t.Fatalf("%d reports, want the one run's", n)
		}
	})
}
