package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
)

// docs/configuration.md is generated from the table: a change to one
// without the other fails here.
func TestReferenceIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", filepath.FromSlash(config.ReferencePath))
	got, err := os.ReadFile(path) // #nosec G304 -- a fixed path in the repository
	if err != nil {
		t.Fatalf("%v (generate it with make docs)", err)
	}
	if want := config.Reference(); string(got) != want {
		t.Fatalf("%s differs from the table of options in internal/config/options.go: run make docs and commit the result", config.ReferencePath)
	}
}

// Every variable is in the reference once, with its default and its doc.
func TestReferenceNamesEveryOption(t *testing.T) {
	ref := config.Reference()
	seen := map[string]bool{}
	for _, o := range config.Options() {
		if seen[o.Name] {
			t.Errorf("%s is in the table twice", o.Name)
		}
		seen[o.Name] = true
		if o.Doc == "" || o.Group == "" || o.Accepts() == "" {
			t.Errorf("%s lacks a doc, a group or what it accepts", o.Name)
		}
		if n := strings.Count(ref, "| `"+o.Name+"` |"); n != 1 {
			t.Errorf("%s has %d rows in the reference, want 1", o.Name, n)
		}
		if o.Default != "" && o.DefaultDoc == "" && !strings.Contains(ref, "| `"+o.Name+"` | `"+o.Default+"` |") {
			t.Errorf("%s's row does not show its default %q", o.Name, o.Default)
		}
	}
}

// A default is a value its own parser accepts: an environment holding
// every default loads to the same configuration as an empty one.
func TestDefaultsAreValid(t *testing.T) {
	empty, err := config.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, o := range config.Options() {
		defaults[o.Name] = o.Default
	}
	explicit, err := config.Load(env(defaults))
	if err != nil {
		t.Fatalf("the table's defaults, written out, are refused: %v", err)
	}
	got, want := config.Effective(explicit, env(defaults)), config.Effective(empty, env(nil))
	for i := range want {
		if got[i].Value != want[i].Value {
			t.Errorf("%s: written-out default gives %q, unset gives %q", want[i].Name, got[i].Value, want[i].Value)
		}
	}
}

// kifpool config shows every value in effect and where it came from, and
// never a secret.
func TestEffectiveMasksSecrets(t *testing.T) {
	const merchant = "1344b5d4-0048-11e8-94db-005056a205be"
	vars := map[string]string{
		"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "SESSION_SECRET": strongSecret,
		"METRICS_TOKEN": "scrape-token-1234-abcdefghijklmnopqrs", "DATABASE_URL": "postgres://kifpool:db-password@db:5432/kifpool",
		"DATABASE_READ_URL": "postgres://reader:replica-password@replica:5432/kifpool",
		"WORKER_INTERVAL":   "off", "WORKER_MAX_UNKNOWN": "90m",
	}
	c, err := config.Load(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]config.Setting{}
	var all strings.Builder
	for _, s := range config.Effective(c, env(vars)) {
		got[s.Name] = s
		all.WriteString(s.Name + "=" + s.Value + "\n")
	}
	if len(got) != len(config.Options()) {
		t.Errorf("%d settings, want one per option (%d)", len(got), len(config.Options()))
	}
	for _, secret := range []string{merchant, strongSecret, "scrape-token-1234-abcdefghijklmnopqrs", "db-password", "replica-password"} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("a secret is printed: %q in\n%s", secret, all.String())
		}
	}
	for _, tc := range []struct{ name, value, source string }{
		{"GATEWAY", "zarinpal", "environment"},
		{"SESSION_SECRET", "******** (32 characters)", "environment"},
		{"METRICS_TOKEN", "******** (37 characters)", "environment"},
		{"DATABASE_URL", "postgres://kifpool:xxxxx@db:5432/kifpool", "environment"},
		{"DATABASE_READ_URL", "postgres://reader:xxxxx@replica:5432/kifpool", "environment"},
		{"WORKER_INTERVAL", "off", "environment"},
		{"WORKER_MAX_UNKNOWN", "1h30m", "environment"},
		{"WORKER_AUTHORITY_LIFETIME", "20m", "default"},
		{"IDEMPOTENCY_KEY_TTL", "24h", "default"},
		{"LISTEN_ADDR", ":8080", "default"},
		{"LOG_FORMAT", "json", "default"},
		{"ZARINPAL_BASE_URL", zarinpal.ProductionBaseURL, "default"},
		{"PPROF_ADDR", "", "unset"},
	} {
		if s := got[tc.name]; s.Value != tc.value || s.Source != tc.source {
			t.Errorf("%s = %q (%s), want %q (%s)", tc.name, s.Value, s.Source, tc.value, tc.source)
		}
	}
}
