package topup_test

// Tests of starting a top-up (service.go).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestStartTopUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		tok := topup.NewFormToken()
		r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil {
			t.Fatalf("StartTopUp: %v", err)
		}
		if len(e.gw.Authorities) != 1 {
			t.Fatalf("%d authorities handed out", len(e.gw.Authorities))
		}
		authority := e.gw.Authorities[0]
		p := e.row(r.TopUp.ID)
		if r.Replayed || r.PayURL != e.gw.PayURL(authority) || r.TopUp.Status != topup.StatusAwaitingPayment {
			t.Errorf("result = %+v", r)
		}
		if p.Status != topup.StatusAwaitingPayment || p.AuthorityString() != authority || p.AmountRials != 50_000 ||
			p.Gateway != "fake" || p.UserID != e.user.ID || p.WalletID != e.wallet.ID || p.FormToken != tok ||
			!topup.ValidPublicID(p.PublicID) || p.RefID != nil || p.ResolvedAt != nil || p.Attempts != 0 {
			t.Errorf("row = %s", dump(p))
		}
		in := e.gw.RequestInputs[0]
		if in.AmountRials != 50_000 || in.CallbackURL != "http://app.test"+routes.TopUpReturn(p.PublicID) ||
			in.OrderID != p.PublicID || in.Email != e.user.Email {
			t.Errorf("request input = %+v", in)
		}

		// A repeat submit of the form: the same answer, no second request.
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if !r2.Replayed || r2.TopUp.ID != p.ID || r2.PayURL != r.PayURL {
			t.Errorf("replay = %+v, want payment %d and %s", r2, p.ID, r.PayURL)
		}
		// The same form with another amount.
		_, err = e.svc.StartTopUp(ctx, e.input(tok, 60_000))
		var reused *topup.FormReusedError
		if !errors.As(err, &reused) || reused.Existing.ID != p.ID {
			t.Errorf("other amount: %v, want *FormReusedError for payment %d", err, p.ID)
		}
		if req, ver, _ := e.gw.Counts(); req != 1 || ver != 0 {
			t.Errorf("gateway called: %d requests, %d verifies; want 1, 0", req, ver)
		}
		if n := e.count(`SELECT COUNT(*) FROM topups`); n != 1 {
			t.Errorf("%d payments, want 1", n)
		}
		if r := e.row(p.ID); r.AmountRials != 50_000 || r.Status != topup.StatusAwaitingPayment {
			t.Errorf("row after reuse = %s", dump(r))
		}

		// Lookups.
		if got, err := e.svc.ByPublicID(ctx, p.PublicID); err != nil || got.ID != p.ID {
			t.Errorf("ByPublicID = %+v, %v", got, err)
		}
		if got, err := e.svc.ForOwner(ctx, p.PublicID, e.user.ID); err != nil || got.ID != p.ID {
			t.Errorf("ForOwner(owner) = %+v, %v", got, err)
		}
		if _, err := e.svc.ForOwner(ctx, p.PublicID, e.user.ID+1000); !errors.Is(err, topup.ErrNotFound) {
			t.Errorf("ForOwner(stranger) = %v, want ErrNotFound", err)
		}
		checkInvariants(t, db)
	})
}

func TestStartTopUpRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		tests := []struct {
			name   string
			token  string
			amount int64
			want   error
		}{
			{"empty token", "", 50_000, topup.ErrBadFormToken},
			{"short token", "abc", 50_000, topup.ErrBadFormToken},
			{"long token", strings.Repeat("a", 23), 50_000, topup.ErrBadFormToken},
			{"token with a bad character", strings.Repeat("a", 21) + "!", 50_000, topup.ErrBadFormToken},
			{"bad token and bad amount", "", 1, topup.ErrBadFormToken},
			{"below minimum", topup.NewFormToken(), 9_990, topup.ErrAmountTooSmall},
			{"zero", topup.NewFormToken(), 0, money.ErrNotPositive},
			{"negative", topup.NewFormToken(), -50_000, money.ErrNotPositive},
			{"not whole tomans", topup.NewFormToken(), 50_005, money.ErrNotWholeTomans},
			{"above maximum", topup.NewFormToken(), 1_000_000_010, topup.ErrAmountTooLarge},
		}
		for _, tt := range tests {
			r, err := e.svc.StartTopUp(ctx, e.input(tt.token, tt.amount))
			if !errors.Is(err, tt.want) || r.TopUp.ID != 0 {
				t.Errorf("%s: StartTopUp = %+v, %v; want %v", tt.name, r, err, tt.want)
			}
		}
		if n := e.count(`SELECT COUNT(*) FROM topups`); n != 0 {
			t.Errorf("%d payments written by refused submits", n)
		}
		if req, _, _ := e.gw.Counts(); req != 0 {
			t.Errorf("%d gateway requests for refused submits", req)
		}
		// The limits themselves are allowed.
		for _, amount := range []int64{10_000, 1_000_000_000} {
			if p := e.start(amount); p.AmountRials != amount {
				t.Errorf("start(%d) = %s", amount, dump(p))
			}
		}
	})
}

func TestStartTopUpGatewayFails(t *testing.T) {
	errs := []struct {
		name   string
		err    error
		reason topup.Reason
	}{
		{"transient", &gateway.TransientError{Op: "request", HTTPStatus: 502, Err: errors.New("bad gateway")}, topup.ReasonRequestFailed},
		{"rejected", &gateway.RejectedError{Op: "request", Code: -9, Message: "validation error"}, topup.ReasonRequestRefused},
		{"breaker open", gateway.ErrUnavailable, topup.ReasonGatewayUnavailable},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range errs {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, db)
				e.gw.Set(func(f *topuptest.Gateway) { f.RequestErr = tc.err })
				tok := topup.NewFormToken()
				r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
				if !errors.Is(err, topup.ErrGatewayFailed) || !errors.Is(err, tc.err) {
					t.Fatalf("StartTopUp error = %v, want ErrGatewayFailed wrapping %v", err, tc.err)
				}
				if r.PayURL != "" || r.TopUp.Status != topup.StatusFailed {
					t.Errorf("result = %+v", r)
				}
				p := e.row(r.TopUp.ID)
				if p.Status != topup.StatusFailed || p.Authority != nil || p.ResolvedAt == nil ||
					p.StatusReason != string(tc.reason) {
					t.Errorf("row = %s", dump(p))
				}
				// A repeat of the form says the same, without asking the bank again.
				r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
				if !errors.Is(err, topup.ErrGatewayFailed) || !r2.Replayed || r2.TopUp.ID != p.ID || r2.PayURL != "" {
					t.Errorf("replay = %+v, %v", r2, err)
				}
				if req, _, _ := e.gw.Counts(); req != 1 {
					t.Errorf("%d requests, want 1", req)
				}
				// A callback for it cannot match: it never had an authority.
				if _, err := e.back(ctx, p.PublicID, ""); !errors.Is(err, topup.ErrAuthorityMismatch) {
					t.Errorf("Return of a failed start = %v, want ErrAuthorityMismatch", err)
				}
				if _, ver, _ := e.gw.Counts(); ver != 0 {
					t.Errorf("%d verifies, want 0", ver)
				}
				// A fresh form works once the gateway is back.
				e.gw.Set(func(f *topuptest.Gateway) { f.RequestErr = nil })
				e.start(50_000)
				checkInvariants(t, db)
			})
		}
	})
}

func TestStartTopUpConcurrentSubmits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.gw.Set(func(f *topuptest.Gateway) { f.RequestDelay = 100 * time.Millisecond })
		tok := topup.NewFormToken()
		const n = 20
		results := make([]topup.StartResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = e.svc.StartTopUp(context.Background(), e.input(tok, 70_000))
			})
		}
		close(start)
		wg.Wait()
		replayed := 0
		for i := range n {
			if errs[i] != nil {
				t.Errorf("submit %d: %v", i, errs[i])
				continue
			}
			if results[i].Replayed {
				replayed++
			}
			if results[i].PayURL == "" || results[i].PayURL != results[0].PayURL || results[i].TopUp.ID != results[0].TopUp.ID {
				t.Errorf("submit %d: %+v, want %s", i, results[i], results[0].PayURL)
			}
		}
		if replayed != n-1 {
			t.Errorf("%d replayed answers, want %d", replayed, n-1)
		}
		if req, _, _ := e.gw.Counts(); req != 1 {
			t.Errorf("%d gateway requests, want 1", req)
		}
		if c := e.count(`SELECT COUNT(*) FROM topups`); c != 1 {
			t.Errorf("%d payments, want 1", c)
		}
		if p := e.row(results[0].TopUp.ID); p.Status != topup.StatusAwaitingPayment || e.gw.PayURL(p.AuthorityString()) != results[0].PayURL {
			t.Errorf("row = %s", dump(p))
		}
	})
}

// A repeat submit that outwaits ReplayWait while the first submit is still
// talking to the bank says so, and never starts a second payment.
func TestStartTopUpReplayStillProcessing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *topup.Config) { c.ReplayWait = 30 * time.Millisecond })
		gate := make(chan struct{}) // the bank answers the first once the repeat has
		e.gw.Set(func(f *topuptest.Gateway) { f.RequestGate = gate })
		tok := topup.NewFormToken()
		first := make(chan error, 1)
		var r1 topup.StartResult
		go func() {
			var err error
			r1, err = e.svc.StartTopUp(ctx, e.input(tok, 50_000))
			first <- err
		}()
		testwait.Eventually(t, 5*time.Second, "the payment row", func() bool { return e.count(`SELECT COUNT(*) FROM topups`) == 1 })
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if !errors.Is(err, topup.ErrStillProcessing) || !r2.Replayed || r2.PayURL != "" || r2.TopUp.Status != topup.StatusCreated {
			t.Errorf("repeat while the first is at the bank = %+v, %v; want ErrStillProcessing", r2, err)
		}
		close(gate)
		if err := <-first; err != nil || r1.TopUp.Status != topup.StatusAwaitingPayment {
			t.Fatalf("first submit = %+v, %v", r1, err)
		}
		// Once the first is done, a repeat gets its answer.
		r3, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil || !r3.Replayed || r3.PayURL != r1.PayURL {
			t.Errorf("repeat after the first = %+v, %v", r3, err)
		}
		if req, _, _ := e.gw.Counts(); req != 1 {
			t.Errorf("%d requests, want 1", req)
		}
	})
}

// A first submit that hangs past its budget is failed by a repeat submit; if
// the bank then answers the first, its authority must not be handed out.
func TestStartTopUpAbandonedFirstSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		gate := make(chan struct{}) // the bank answers the first once the repeat has failed it
		e.gw.Set(func(f *topuptest.Gateway) { f.RequestGate = gate })
		tok := topup.NewFormToken()
		type result struct {
			r   topup.StartResult
			err error
		}
		first := make(chan result, 1)
		go func() {
			r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
			first <- result{r, err}
		}()
		testwait.Eventually(t, 5*time.Second, "the payment row", func() bool { return e.count(`SELECT COUNT(*) FROM topups`) == 1 })
		e.clock.Advance(time.Minute) // the first submit is now long past RequestTimeout
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if !errors.Is(err, topup.ErrGatewayFailed) || r2.TopUp.Status != topup.StatusFailed || r2.PayURL != "" {
			t.Errorf("repeat of an abandoned submit = %+v, %v; want a failed payment", r2, err)
		}
		close(gate)
		r1 := <-first
		if r1.r.PayURL != "" || r1.r.TopUp.Status != topup.StatusFailed || !errors.Is(r1.err, topup.ErrGatewayFailed) {
			t.Errorf("late first submit = %+v, %v; want the failed payment and no bank URL", r1.r, r1.err)
		}
		p := e.row(r2.TopUp.ID)
		if p.Status != topup.StatusFailed || p.Authority != nil || !strings.Contains(p.StatusReason, "abandoned") {
			t.Errorf("row = %s", dump(p))
		}
		if n := e.count(`SELECT COUNT(*) FROM topups`); n != 1 {
			t.Errorf("%d payments, want 1", n)
		}
	})
}

// The API's optional description reaches the bank after ours.
func TestStartTopUpDescription(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		in := e.input(topup.NewFormToken(), 20_000)
		in.Description = "  order 42  "
		if _, err := e.svc.StartTopUp(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		plain := e.input(topup.NewFormToken(), 20_000)
		if _, err := e.svc.StartTopUp(context.Background(), plain); err != nil {
			t.Fatal(err)
		}
		got := []string{e.gw.RequestInputs[0].Description, e.gw.RequestInputs[1].Description}
		if !strings.HasSuffix(got[0], " — order 42") || strings.Contains(got[1], "—") || got[1] == "" {
			t.Errorf("descriptions at the bank %q", got)
		}
	})
}

// An open breaker refuses new top-ups before anything is written, but a
// form that was already submitted is answered as its first submit was:
// "no money was taken" would be false for a payment that exists (it may
// be paid at the bank), and a fresh form would invite a second payment.
func TestOpenBreakerAnswersRepeatsOfSubmittedForms(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		token := topup.NewFormToken()
		first, err := e.svc.StartTopUp(ctx, e.input(token, 40_000))
		if err != nil || first.PayURL == "" {
			t.Fatalf("first submit: %+v, %v", first, err)
		}
		e.gw.Open.Store(true)
		cases := []struct {
			name    string
			token   string
			wantErr error
		}{
			{"the same form again", token, nil},
			{"a new form", topup.NewFormToken(), topup.ErrGatewayFailed},
		}
		for _, tc := range cases {
			if _, err := e.svc.CheckGateway(ctx, e.user.ID, tc.token, ""); !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: CheckGateway = %v, want %v", tc.name, err, tc.wantErr)
			}
			r, err := e.svc.StartTopUp(ctx, e.input(tc.token, 40_000))
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: StartTopUp = %+v, %v; want %v", tc.name, r, err, tc.wantErr)
				continue
			}
			if tc.wantErr == nil && (!r.Replayed || r.TopUp.ID != first.TopUp.ID || r.PayURL != first.PayURL) {
				t.Errorf("%s: %+v, want the first submit's answer %+v", tc.name, r, first)
			}
		}
		// Another user's token is not this user's form.
		if _, err := e.svc.CheckGateway(ctx, e.user.ID+1000, token, ""); !errors.Is(err, topup.ErrGatewayFailed) {
			t.Errorf("another user's form: %v, want ErrGatewayFailed", err)
		}
		if n := e.count(`SELECT COUNT(*) FROM topups`); n != 1 {
			t.Errorf("%d payments, want the first only", n)
		}
	})
}
