package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
)

// TestGateways: GATEWAYS is an ordered list of drivers (or `sandbox`
// alone, every driver the sandbox bank imitates); GATEWAY is its older
// name, used when GATEWAYS is unset; every bad value is reported with
// its variable's name.
func TestGateways(t *testing.T) {
	merchant := map[string]string{"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "SESSION_SECRET": strongSecret}
	with := func(kv map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range merchant {
			out[k] = v
		}
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr string // the variable the error names ("" = no error)
	}{
		{"default", nil, drivers.SandboxNames(), ""},
		{"sandbox", map[string]string{"GATEWAYS": "sandbox"}, drivers.SandboxNames(), ""},
		{"one", with(map[string]string{"GATEWAYS": "zarinpal"}), []string{"zarinpal"}, ""},
		{"spaces and case", with(map[string]string{"GATEWAYS": " Zarinpal "}), []string{"zarinpal"}, ""},
		{"the older name", with(map[string]string{"GATEWAY": "zarinpal"}), []string{"zarinpal"}, ""},
		{"both agreeing", with(map[string]string{"GATEWAY": "zarinpal", "GATEWAYS": "zarinpal"}), []string{"zarinpal"}, ""},
		{"both disagreeing", with(map[string]string{"GATEWAY": "sandbox", "GATEWAYS": "zarinpal"}), nil, "GATEWAYS"},
		{"twice", with(map[string]string{"GATEWAYS": "zarinpal,zarinpal"}), nil, "GATEWAYS"},
		{"empty name", with(map[string]string{"GATEWAYS": "zarinpal,"}), nil, "GATEWAYS"},
		{"sandbox in a list", with(map[string]string{"GATEWAYS": "sandbox,zarinpal"}), nil, "GATEWAYS"},
		{"unknown", with(map[string]string{"GATEWAYS": "zarinpal,paypal"}), nil, "GATEWAYS"},
		{"unknown older name", with(map[string]string{"GATEWAY": "paypal"}), nil, "GATEWAY"},
		{"a driver's required setting", map[string]string{"GATEWAYS": "zarinpal", "SESSION_SECRET": strongSecret}, nil, "ZARINPAL_MERCHANT_ID"},
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
			if !slices.Equal(c.Gateways, tt.want) || c.Driver != tt.want[0] {
				t.Errorf("Gateways = %v (first %q), want %v", c.Gateways, c.Driver, tt.want)
			}
		})
	}
}
