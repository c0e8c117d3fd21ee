package server

import (
	"context"
	"maps"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// testConfig is the configuration of env over a test's own DATA_DIR and
// BASE_URL, as apptest sets them.
func testConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	e := map[string]string{
		"BASE_URL": "http://127.0.0.1:1", "SESSION_SECRET": "test-secret-0123456789-abcdefghijklmnopqrstuvwxyz",
		"ALLOW_SANDBOX": "1", "DATA_DIR": t.TempDir(),
	}
	maps.Copy(e, env)
	cfg, err := config.Load(func(k string) string { return e[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// testBase is what the constructors read, on the machine's clock.
func testBase(cfg config.Config, db *store.DB, o Options) base {
	o = o.withDefaults()
	return base{cfg: cfg, db: db, o: o, now: o.Now}
}

// New wires an instance whose app answers its probes: the database
// answers and is migrated.
func TestNewServesProbes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s, err := New(testConfig(t, nil), db, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{routes.Healthz, routes.Readyz} {
			resp, err := s.App.Test(httptest.NewRequestWithContext(context.Background(), "GET", path, nil), int(time.Minute/time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
			}
		}
		if s.Gateway != s.Gateways[0] || s.Resilient != s.Resilients[0] || s.Bank == nil {
			t.Errorf("the first gateway is not the first of the set, or no sandbox bank: %+v", s)
		}
	})
}

// A wiring mistake is an error from New, not a half-built instance.
func TestNewRefuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range []struct {
			name string
			edit func(*config.Config)
		}{
			{"a gateway no driver serves", func(c *config.Config) { c.Gateway, c.Gateways = "nope", []string{"nope"} }},
			{"a bad SMTP_URL", func(c *config.Config) { c.SMTPURL = "smtp://%zz" }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := testConfig(t, nil)
				tc.edit(&cfg)
				if s, err := New(cfg, db, Options{}); err == nil {
					t.Fatalf("New = %v, want an error", s)
				}
			})
		}
	})
}
