package topup_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/wallet"
)

// TestAmountOneRuleForBothForms: an amount typed in tomans (the form) and
// the same amount in rials (the API) get the same answer from the one set
// of rules.
func TestAmountOneRuleForBothForms(t *testing.T) {
	uc := topup.NewStartService(nil, nil, money.Limits{MinRials: 20_000, MaxRials: 5_000_000})
	for _, tt := range []struct {
		typed string
		rials int64
		want  error
	}{
		{"۲٬۰۰۰", 20_000, nil},
		{"1,999", 19_990, money.ErrTooSmall},
		{"500000", 5_000_000, nil},
		{"500001", 5_000_010, money.ErrTooLarge},
		{"0", 0, money.ErrNotPositive},
	} {
		gotTyped, errTyped := uc.Amount(topup.Typed(tt.typed))
		gotRials, errRials := uc.Amount(topup.Rials(tt.rials))
		if !errors.Is(errTyped, tt.want) || !errors.Is(errRials, tt.want) || (tt.want == nil && (errTyped != nil || errRials != nil)) {
			t.Errorf("%q / %d rials: %v / %v, want %v", tt.typed, tt.rials, errTyped, errRials, tt.want)
		}
		if tt.want == nil && (gotTyped != tt.rials || gotRials != tt.rials) {
			t.Errorf("%q / %d rials read as %d / %d", tt.typed, tt.rials, gotTyped, gotRials)
		}
	}
	if _, err := uc.Amount(topup.Rials(20_005)); !errors.Is(err, money.ErrNotWholeTomans) {
		t.Errorf("20005 rials: %v, want not whole tomans", err)
	}
}

// TestStartRefusesBeforeAnyRead: a malformed token or a bad amount is
// refused before the payment or wallet services are touched (they are
// nil here: any use would panic).
func TestStartRefusesBeforeAnyRead(t *testing.T) {
	uc := topup.NewStartService(nil, nil, money.Limits{MinRials: 20_000, MaxRials: 5_000_000})
	ctx := context.Background()
	if _, err := uc.Start(ctx, topup.Request{UserID: 1, FormToken: "short", Amount: topup.Rials(50_000)}); !errors.Is(err, topup.ErrBadFormToken) {
		t.Errorf("bad token: %v", err)
	}
	if _, err := uc.Start(ctx, topup.Request{UserID: 1, FormToken: topup.NewFormToken(), Amount: topup.Typed("abc")}); !errors.Is(err, money.ErrInvalid) {
		t.Errorf("bad amount: %v", err)
	}
}

// twinFirst is a policy whose first Allow lets a double click's twin
// submit the same form first (its payment inserted and counted between
// this submit's two reads), and then refuses, as a limit the twin filled
// would.
type twinFirst struct {
	twin   func()
	refuse error
}

func (p *twinFirst) Allow(context.Context, int64, int64) error {
	if twin := p.twin; twin != nil {
		p.twin = nil
		twin()
	}
	return p.refuse
}

func (p *twinFirst) Quota(int64) *topup.Quota { return nil }

// A double click at a limit: the twin's payment counts against the limit
// this submit is checked for, but this submit is a repeat of that form,
// so it gets the twin's answer, never the limit's refusal; a new form is
// refused.
func TestARepeatIsNeverRefusedByTheLimitItsTwinFilled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		rules := money.Limits{MinRials: 10_000, MaxRials: 5_000_000}
		wallets := wallet.NewService(db, nil)
		plain := topup.NewStartService(e.svc, wallets, rules)
		full := errors.New("limit reached")
		req := topup.Request{UserID: e.user.ID, Email: e.user.Email, FormToken: topup.NewFormToken(), Amount: topup.Rials(50_000)}
		var first topup.StartResult
		var firstErr error
		p := &twinFirst{refuse: full, twin: func() { first, firstErr = plain.Start(ctx, req) }}
		capped := topup.NewStartService(e.svc, wallets, rules).WithPolicy(p)
		got, err := capped.Start(ctx, req)
		if firstErr != nil || err != nil {
			t.Fatalf("the twin: %v; this submit: %v, want both answered", firstErr, err)
		}
		if got.TopUp.ID != first.TopUp.ID || got.PayURL != first.PayURL {
			t.Fatalf("this submit got payment %d (%s), the twin %d (%s): want the twin's answer", got.TopUp.ID, got.PayURL, first.TopUp.ID, first.PayURL)
		}
		other := req
		other.FormToken = topup.NewFormToken()
		if _, err := capped.Start(ctx, other); !errors.Is(err, full) {
			t.Fatalf("a new form at the limit: %v, want refused", err)
		}
		if n := e.count(`SELECT COUNT(*) FROM topups WHERE user_id = ?`, e.user.ID); n != 1 {
			t.Fatalf("%d payments, want the twin's one", n)
		}
	})
}
