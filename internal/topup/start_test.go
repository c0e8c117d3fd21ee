package topup_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/topup"
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
