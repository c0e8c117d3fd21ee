package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/routes"
)

// TestPayouts: PAYOUTS lists payout providers (or `sandbox`, the sandbox
// bank's, or `none`); its default follows GATEWAYS; never sandbox payouts
// of real money nor real payouts of sandbox money; each bad value is
// refused with its variable's name.
func TestPayouts(t *testing.T) {
	real := map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "SESSION_SECRET": strongSecret}
	jibitKeys := map[string]string{"JIBIT_API_KEY": "api-key-123456", "JIBIT_SECRET_KEY": "secret-key-123456"}
	zibalKeys := map[string]string{"ZIBAL_PAYOUT_TOKEN": "token-12345678", "ZIBAL_PAYOUT_WALLET_ID": "42"}
	with := func(kvs ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, kv := range kvs {
			for k, v := range kv {
				out[k] = v
			}
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    []string
		payouts string
		wantErr string
	}{
		{"default with the sandbox bank", nil, drivers.SandboxNames(), "sandbox", ""},
		{"default with real gateways: none", real, nil, "none", ""},
		{"none", map[string]string{"PAYOUTS": "none"}, nil, "none", ""},
		{"real providers", with(real, jibitKeys, zibalKeys, map[string]string{"PAYOUTS": "Jibit, zibal"}), []string{"jibit", "zibal"}, "jibit,zibal", ""},
		{"the sandbox's payouts of real money", with(real, map[string]string{"PAYOUTS": "sandbox"}), nil, "", "PAYOUTS"},
		{"real payouts of the sandbox's money", with(jibitKeys, map[string]string{"PAYOUTS": "jibit"}), nil, "", "PAYOUTS"},
		{"unknown", with(real, map[string]string{"PAYOUTS": "paypal"}), nil, "", "PAYOUTS"},
		{"twice", with(real, jibitKeys, map[string]string{"PAYOUTS": "jibit,jibit"}), nil, "", "PAYOUTS"},
		{"sandbox in a list", map[string]string{"PAYOUTS": "sandbox,jibit"}, nil, "", "PAYOUTS"},
		{"none in a list", with(real, jibitKeys, map[string]string{"PAYOUTS": "none,jibit"}), nil, "", "PAYOUTS"},
		{"a driver's required setting", with(real, map[string]string{"PAYOUTS": "jibit", "JIBIT_API_KEY": "api-key-123456"}), nil, "", "JIBIT_SECRET_KEY"},
		{"a bad setting", with(real, zibalKeys, map[string]string{"PAYOUTS": "zibal", "ZIBAL_PAYOUT_WALLET_ID": "abc"}), nil, "", "ZIBAL_PAYOUT_WALLET_ID"},
		{"a plain-http base", with(real, jibitKeys, map[string]string{"PAYOUTS": "jibit", "JIBIT_BASE_URL": "http://napi.jibit.ir/trf"}), nil, "", "JIBIT_BASE_URL"},
		{"minimum below a provider's", map[string]string{"WITHDRAWAL_MIN_RIALS": "5000"}, nil, "", "WITHDRAWAL_MIN_RIALS"},
		{"minimum not whole tomans", map[string]string{"WITHDRAWAL_MIN_RIALS": "100005"}, nil, "", "WITHDRAWAL_MIN_RIALS"},
		{"daily maximum below the minimum", map[string]string{"WITHDRAWAL_DAILY_MAX_RIALS": "50000"}, nil, "", "WITHDRAWAL_DAILY_MAX_RIALS"},
		{"review amount not a number", map[string]string{"WITHDRAWAL_REVIEW_ABOVE_RIALS": "lots"}, nil, "", "WITHDRAWAL_REVIEW_ABOVE_RIALS"},
		{"cycles", map[string]string{"PAYA_CYCLES": "03:45,25:00"}, nil, "", "PAYA_CYCLES"},
		{"holiday cycles", map[string]string{"PAYA_HOLIDAY_CYCLES": ""}, drivers.SandboxNames(), "sandbox", ""},
		{"satna", map[string]string{"SATNA_CUTOFF": "2pm"}, nil, "", "SATNA_CUTOFF"},
		{"unknown review", map[string]string{"WITHDRAWAL_UNKNOWN_REVIEW_AFTER": "0"}, nil, "", "WITHDRAWAL_UNKNOWN_REVIEW_AFTER"},
		{"in-progress review", map[string]string{"WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER": "0"}, nil, "", "WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER"},
		{"in-progress review not a duration", map[string]string{"WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER": "4d"}, nil, "", "WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr+": ") {
					t.Fatalf("Load = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			w := c.Withdrawals
			if !slices.Equal(w.Providers, tt.want) || w.Payouts != tt.payouts || w.On() != (len(tt.want) > 0) {
				t.Fatalf("providers %v (%q), want %v (%q)", w.Providers, w.Payouts, tt.want, tt.payouts)
			}
		})
	}
}

// The defaults: the published Paya cycles, 100,000 rials at least, the
// sandbox providers' settings pointing at the built-in bank, and a real
// provider's settings read only when PAYOUTS names it.
func TestPayoutDefaults(t *testing.T) {
	c, err := config.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Withdrawals
	if rail.FormatCycles(w.Schedule.PayaCycles) != "03:45,09:45,12:45,18:45" || w.Schedule.SatnaCutoff.String() != "14:30" ||
		w.Schedule.PayoutDelay != time.Hour || w.MinRials != 100_000 || w.UnknownReviewAfter != 24*time.Hour || w.ReconcileInterval != 24*time.Hour ||
		w.InProgressReviewAfter != 96*time.Hour {
		t.Fatalf("%+v", w)
	}
	if set, err := config.Load(env(map[string]string{"WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER": "120h"})); err != nil ||
		set.Withdrawals.InProgressReviewAfter != 120*time.Hour {
		t.Fatalf("WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER=120h: %v", err)
	}
	if got := w.Settings["JIBIT_BASE_URL"]; got != c.BaseURL+routes.Sandbank+"/trf" {
		t.Fatalf("the sandbox's Jibit base: %q", got)
	}
	if got := w.Settings["ZIBAL_PAYOUT_BASE_URL"]; got != c.BaseURL+routes.Sandbank {
		t.Fatalf("the sandbox's Zibal base: %q", got)
	}
	c2, err := config.Load(env(map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be",
		"SESSION_SECRET": strongSecret, "JIBIT_API_KEY": "api-key-123456"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Withdrawals.Settings) != 0 || !strings.Contains(strings.Join(c2.Warnings, "\n"), "JIBIT_API_KEY set, but PAYOUTS does not name jibit") {
		t.Fatalf("settings %v, warnings %v", c2.Withdrawals.Settings, c2.Warnings)
	}
}
