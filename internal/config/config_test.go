package config_test

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/dburl"
	"github.com/kifpool/kifpool/internal/gateway/zarinpal"
	"github.com/kifpool/kifpool/internal/routes"
)

// env is a map-backed Getenv.
func env(kv map[string]string) config.Getenv {
	return func(k string) string { return kv[k] }
}

const strongSecret = "q7Zp2LmX9vKc4RtY8wNb3HsJ6dFg1AeU" // 32 chars, many distinct

func TestLoadDefaults(t *testing.T) {
	c, err := config.Load(env(nil))
	if err != nil {
		t.Fatalf("Load with empty environment: %v", err)
	}
	d, dsn, err := dburl.Parse(c.DatabaseURL)
	if err != nil || d != dburl.SQLite || dsn != dburl.DefaultSQLitePath {
		t.Errorf("database = %q → %q %q %v; want SQLite at %s", c.DatabaseURL, d, dsn, err, dburl.DefaultSQLitePath)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ListenAddr (sandbox: loopback)", c.ListenAddr, "127.0.0.1:8080"},
		{"BaseURL", c.BaseURL, "http://localhost:8080"},
		{"Warnings", len(c.Warnings), 0},
		{"Gateway", c.Gateway, config.GatewaySandbox},
		{"Driver", c.Driver, "zarinpal"},
		{"MerchantID", c.GatewaySettings[zarinpal.SettingMerchantID], zarinpal.SandboxMerchantID},
		{"GatewayURL", c.GatewayURL(), "http://localhost:8080" + routes.Sandbank},
		{"TopUpMinRials", c.TopUpMinRials, int64(10_000)},
		{"TopUpMaxRials", c.TopUpMaxRials, int64(1_000_000_000)},
		{"AttemptTimeout", c.AttemptTimeout, 3 * time.Second},
		{"Budget", c.Budget, 12 * time.Second},
		{"RequestTimeout", c.RequestTimeout, 10 * time.Second},
		{"HTTPReadTimeout", c.HTTPReadTimeout, 30 * time.Second},
		{"WorkerInterval", c.WorkerInterval, 2 * time.Second},
		{"WorkerConcurrency", c.WorkerConcurrency, 4},
		{"BreakerFailurePercent", c.BreakerFailurePercent, uint32(50)},
		{"ReconcileInterval", c.ReconcileInterval, 10 * time.Minute},
		{"IdempotencyKeyTTL", c.IdempotencyKeyTTL, 24 * time.Hour},
		{"APITopUpsPerMinute", c.APITopUpsPerMinute, 30},
		{"APIChargesPerMinute", c.APIChargesPerMinute, 60},
		{"ChargeHoldHours", c.ChargeHoldHours, 168},
		{"MetricsToken", c.MetricsToken, ""},
		{"DataDir", c.DataDir, "./data"},
		{"Dev", c.Dev, true},
		{"LogLevel", c.LogLevel, slog.LevelInfo},
		{"LogFormat (development)", c.LogFormat, "text"},
		{"SessionSecret", len(c.SessionSecret), 0},
		{"Secure", c.Secure(), false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestLoadValues(t *testing.T) {
	c, err := config.Load(env(map[string]string{
		"DATABASE_URL":            "postgres://u@db:5432/kifpool",
		"LISTEN_ADDR":             "127.0.0.1:9000",
		"BASE_URL":                "https://pay.example.com/",
		"TOPUP_MIN_RIALS":         "20_000",
		"TOPUP_MAX_RIALS":         " 500000 ",
		"GATEWAY_ATTEMPT_TIMEOUT": "1500ms",
		"GATEWAY_BUDGET":          "20s",
		"WORKER_INTERVAL":         "off",
		"RECONCILE_INTERVAL":      "0",
		"IDEMPOTENCY_KEY_TTL":     "72h",
		"RETENTION_SESSIONS":      "168h",
		"RETENTION_THROTTLES":     "off",
		"API_TOPUPS_PER_MINUTE":   "5",
		"HTTP_READ_TIMEOUT":       "5s",
		"DATA_DIR":                "/var/lib/kifpool",
		"SESSION_SECRET":          strongSecret,
		"ALLOW_SANDBOX":           "1",
		"LOG_LEVEL":               "debug",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"DatabaseURL", c.DatabaseURL, "postgres://u@db:5432/kifpool"},
		{"ListenAddr", c.ListenAddr, "127.0.0.1:9000"},
		{"BaseURL (trailing slash trimmed)", c.BaseURL, "https://pay.example.com"},
		{"GatewayURL", c.GatewayURL(), "https://pay.example.com" + routes.Sandbank},
		{"TopUpMinRials", c.TopUpMinRials, int64(20_000)},
		{"TopUpMaxRials", c.TopUpMaxRials, int64(500_000)},
		{"AttemptTimeout", c.AttemptTimeout, 1500 * time.Millisecond},
		{"Budget", c.Budget, 20 * time.Second},
		{"WorkerInterval (off)", c.WorkerInterval, time.Duration(0)},
		{"ReconcileInterval (off)", c.ReconcileInterval, time.Duration(0)},
		{"IdempotencyKeyTTL", c.IdempotencyKeyTTL, 72 * time.Hour},
		{"RetentionSessions", c.RetentionSessions, 168 * time.Hour},
		{"RetentionThrottles (off)", c.RetentionThrottles, time.Duration(0)},
		{"RetentionGatewayCalls (default)", c.RetentionGatewayCalls, 90 * 24 * time.Hour},
		{"APITopUpsPerMinute", c.APITopUpsPerMinute, 5},
		{"HTTPReadTimeout", c.HTTPReadTimeout, 5 * time.Second},
		{"DataDir", c.DataDir, "/var/lib/kifpool"},
		{"Dev", c.Dev, false},
		{"LogLevel", c.LogLevel, slog.LevelDebug},
		{"LogFormat (production)", c.LogFormat, "json"},
		{"SessionSecret", string(c.SessionSecret), strongSecret},
		{"Secure", c.Secure(), true},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestLoadZarinpal(t *testing.T) {
	c, err := config.Load(env(map[string]string{
		"GATEWAY":              "zarinpal",
		"ZARINPAL_MERCHANT_ID": "1344B5D4-0048-11E8-94DB-005056A205BE",
		"SESSION_SECRET":       strongSecret,
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Gateway != "zarinpal" || c.Driver != "zarinpal" || c.GatewaySettings[zarinpal.SettingMerchantID] != "1344b5d4-0048-11e8-94db-005056a205be" ||
		c.GatewayURL() != zarinpal.ProductionBaseURL {
		t.Errorf("got gateway %q driver %q settings %q url %q", c.Gateway, c.Driver, c.GatewaySettings, c.GatewayURL())
	}

	c, err = config.Load(env(map[string]string{
		"GATEWAY":              "zarinpal",
		"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be",
		"ZARINPAL_BASE_URL":    "https://sandbox.zarinpal.com/",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.GatewayURL() != "https://sandbox.zarinpal.com" {
		t.Errorf("GatewayURL() = %q", c.GatewayURL())
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"database scheme", map[string]string{"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL"},
		{"database sqlite without path", map[string]string{"DATABASE_URL": "sqlite:"}, "DATABASE_URL"},
		{"read database scheme", map[string]string{"DATABASE_URL": "postgres://u@h/db", "DATABASE_READ_URL": "mysql://u@h/db"}, "DATABASE_READ_URL"},
		{"read database on sqlite", map[string]string{"DATABASE_URL": "postgres://u@h/db", "DATABASE_READ_URL": "sqlite:./replica.db"}, "DATABASE_READ_URL"},
		{"read database beside sqlite", map[string]string{"DATABASE_URL": "sqlite:./kifpool.db", "DATABASE_READ_URL": "postgres://u@replica/db"}, "DATABASE_READ_URL"},
		{"read database beside the default sqlite", map[string]string{"DATABASE_READ_URL": "postgres://u@replica/db"}, "DATABASE_READ_URL"},
		{"listen addr without port", map[string]string{"LISTEN_ADDR": "nope"}, "LISTEN_ADDR"},
		{"listen addr bad port", map[string]string{"LISTEN_ADDR": "localhost:http"}, "LISTEN_ADDR"},
		{"listen addr empty port", map[string]string{"LISTEN_ADDR": "localhost:"}, "LISTEN_ADDR"},
		{"base url ftp", map[string]string{"BASE_URL": "ftp://x"}, "BASE_URL"},
		{"base url with path", map[string]string{"BASE_URL": "http://x/path"}, "BASE_URL"},
		{"base url with query", map[string]string{"BASE_URL": "http://x?a=1"}, "BASE_URL"},
		{"base url with empty query", map[string]string{"BASE_URL": "http://x?"}, "BASE_URL"},
		{"base url with fragment", map[string]string{"BASE_URL": "http://x#top"}, "BASE_URL"},
		{"base url with empty fragment", map[string]string{"BASE_URL": "http://x#"}, "BASE_URL"},
		{"base url relative", map[string]string{"BASE_URL": "localhost:8080"}, "BASE_URL"},
		{"base url without host", map[string]string{"BASE_URL": "http://"}, "BASE_URL"},
		{"min not a number", map[string]string{"TOPUP_MIN_RIALS": "abc"}, "TOPUP_MIN_RIALS"},
		{"min negative", map[string]string{"TOPUP_MIN_RIALS": "-10000"}, "TOPUP_MIN_RIALS"},
		{"min below gateway minimum", map[string]string{"TOPUP_MIN_RIALS": "5000"}, "TOPUP_MIN_RIALS"},
		{"min not whole tomans", map[string]string{"TOPUP_MIN_RIALS": "10005"}, "TOPUP_MIN_RIALS"},
		{"max not whole tomans", map[string]string{"TOPUP_MAX_RIALS": "100005"}, "TOPUP_MAX_RIALS"},
		{"max not a number", map[string]string{"TOPUP_MAX_RIALS": "1e9"}, "TOPUP_MAX_RIALS"},
		{"max below min", map[string]string{"TOPUP_MIN_RIALS": "50000", "TOPUP_MAX_RIALS": "20000"}, "TOPUP_MAX_RIALS"},
		{"transfer min not whole tomans", map[string]string{"TRANSFER_MIN_RIALS": "15005"}, "TRANSFER_MIN_RIALS"},
		{"transfer daily max not whole tomans", map[string]string{"TRANSFER_DAILY_MAX_RIALS": "2000005"}, "TRANSFER_DAILY_MAX_RIALS"},
		{"transfer daily max below the minimum", map[string]string{"TRANSFER_MIN_RIALS": "50000", "TRANSFER_DAILY_MAX_RIALS": "20000"}, "TRANSFER_DAILY_MAX_RIALS"},
		{"transfer daily max below the default minimum", map[string]string{"TRANSFER_DAILY_MAX_RIALS": "5000"}, "TRANSFER_DAILY_MAX_RIALS"},
		{"unknown gateway", map[string]string{"GATEWAY": "paypal"}, "GATEWAY"},
		{"zarinpal without merchant", map[string]string{"GATEWAY": "zarinpal"}, "ZARINPAL_MERCHANT_ID"},
		{"zarinpal malformed merchant", map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "not-a-uuid"}, "ZARINPAL_MERCHANT_ID"},
		{"zarinpal bad base url", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": "payment.zarinpal.com"}, "ZARINPAL_BASE_URL"},
		{"zarinpal ftp base url", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": "ftp://zarinpal.com"}, "ZARINPAL_BASE_URL"},
		{"zarinpal over plain http", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": "http://payment.zarinpal.com"}, "ZARINPAL_BASE_URL"},
		{"zarinpal over plain http to a LAN address", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": "http://10.0.0.7:9090"}, "ZARINPAL_BASE_URL"},
		// The card refund's two settings go together: one alone is
		// refused at start naming the other (the driver would refuse it
		// only when serve builds it, after migrating).
		{"zarinpal access token without terminal", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_ACCESS_TOKEN": "sandbox-access-token"}, "ZARINPAL_TERMINAL_ID: must be set with ZARINPAL_ACCESS_TOKEN"},
		{"zarinpal terminal without access token", map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_TERMINAL_ID": "42"}, "ZARINPAL_ACCESS_TOKEN: must be set with ZARINPAL_TERMINAL_ID"},
		{"short secret", map[string]string{"SESSION_SECRET": "short"}, "SESSION_SECRET"},
		{"secret of one letter", map[string]string{"SESSION_SECRET": strings.Repeat("a", 40)}, "SESSION_SECRET"},
		{"secret of few letters", map[string]string{"SESSION_SECRET": strings.Repeat("abc", 20)}, "SESSION_SECRET"},
		// The example file's placeholder passes the length and variety
		// checks: a copied file must not run on a publicly known key.
		{"the example's secret", map[string]string{"SESSION_SECRET": "CHANGE-ME-to-32-random-bytes-in-base64"}, "placeholder"},
		{"the example's token", map[string]string{"METRICS_TOKEN": "CHANGE-ME-another-random-token-long-enough"}, "placeholder"},
		{"budget not a duration", map[string]string{"GATEWAY_BUDGET": "soon"}, "GATEWAY_BUDGET"},
		{"budget without unit", map[string]string{"GATEWAY_BUDGET": "12"}, "GATEWAY_BUDGET"},
		{"budget negative", map[string]string{"GATEWAY_BUDGET": "-1s"}, "GATEWAY_BUDGET"},
		{"budget zero", map[string]string{"GATEWAY_BUDGET": "0s"}, "GATEWAY_BUDGET"},
		{"budget below attempt timeout", map[string]string{"GATEWAY_ATTEMPT_TIMEOUT": "5s", "GATEWAY_BUDGET": "4s"}, "GATEWAY_BUDGET"},
		{"attempt timeout bad", map[string]string{"GATEWAY_ATTEMPT_TIMEOUT": "fast"}, "GATEWAY_ATTEMPT_TIMEOUT"},
		{"request timeout bad", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "slow"}, "GATEWAY_REQUEST_TIMEOUT"},
		{"request timeout zero", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "0s"}, "GATEWAY_REQUEST_TIMEOUT"},
		{"request timeout negative", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "-10s"}, "GATEWAY_REQUEST_TIMEOUT"},
		{"request timeout beyond the budget", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "13s"}, "GATEWAY_REQUEST_TIMEOUT"},
		{"request timeout beyond a shorter budget", map[string]string{"GATEWAY_BUDGET": "5s", "GATEWAY_REQUEST_TIMEOUT": "6s"}, "GATEWAY_REQUEST_TIMEOUT"},
		{"breaker percent above 100", map[string]string{"BREAKER_FAILURE_PERCENT": "150"}, "BREAKER_FAILURE_PERCENT"},
		{"read timeout zero (no limit)", map[string]string{"HTTP_READ_TIMEOUT": "0s"}, "HTTP_READ_TIMEOUT"},
		{"read timeout not a duration", map[string]string{"HTTP_READ_TIMEOUT": "30"}, "HTTP_READ_TIMEOUT"},
		{"read timeout too long", map[string]string{"HTTP_READ_TIMEOUT": "1h"}, "HTTP_READ_TIMEOUT"},
		{"breaker percent negative", map[string]string{"BREAKER_FAILURE_PERCENT": "-5"}, "BREAKER_FAILURE_PERCENT"},
		{"breaker min requests zero", map[string]string{"BREAKER_MIN_REQUESTS": "0"}, "BREAKER_MIN_REQUESTS"},
		{"breaker min requests beyond 32 bits", map[string]string{"BREAKER_MIN_REQUESTS": "4294967306"}, "BREAKER_MIN_REQUESTS"},
		{"worker concurrency zero", map[string]string{"WORKER_CONCURRENCY": "0"}, "WORKER_CONCURRENCY"},
		{"idempotency ttl too short", map[string]string{"IDEMPOTENCY_KEY_TTL": "10s"}, "IDEMPOTENCY_KEY_TTL"},
		{"throttle retention below their memory", map[string]string{"RETENTION_THROTTLES": "1h"}, "RETENTION_THROTTLES"},
		{"gateway call retention too short", map[string]string{"RETENTION_GATEWAY_CALLS": "5m"}, "RETENTION_GATEWAY_CALLS"},
		{"mail retention too short", map[string]string{"RETENTION_MAIL": "1h"}, "RETENTION_MAIL"},
		{"idempotency ttl not a duration", map[string]string{"IDEMPOTENCY_KEY_TTL": "1 day"}, "IDEMPOTENCY_KEY_TTL"},
		{"api rate zero", map[string]string{"API_TOPUPS_PER_MINUTE": "0"}, "API_TOPUPS_PER_MINUTE"},
		{"worker interval bad", map[string]string{"WORKER_INTERVAL": "sometimes"}, "WORKER_INTERVAL"},
		{"worker abandoned after authority lifetime", map[string]string{"WORKER_ABANDONED_AFTER": "30m"}, "WORKER_ABANDONED_AFTER"},
		{"log level", map[string]string{"LOG_LEVEL": "verbose"}, "LOG_LEVEL"},
		{"log format", map[string]string{"LOG_FORMAT": "xml"}, "LOG_FORMAT"},
		{"worker stale-created within the budget", map[string]string{"WORKER_STALE_CREATED": "5s"}, "WORKER_STALE_CREATED"},
		{"card refund not-done within the budget", map[string]string{"CARD_REFUND_NOT_DONE_AFTER": "15s"}, "CARD_REFUND_NOT_DONE_AFTER"},
		{"smtp url scheme", map[string]string{"SMTP_URL": "http://mail.example.com"}, "SMTP_URL"},
		{"smtp url without host", map[string]string{"SMTP_URL": "smtp://"}, "SMTP_URL"},
		{"mail from", map[string]string{"MAIL_FROM": "not an address"}, "MAIL_FROM"},
		{"daily max negative", map[string]string{"TOPUP_DAILY_MAX_RIALS": "-1"}, "TOPUP_DAILY_MAX_RIALS"},
		{"daily count words", map[string]string{"TOPUP_DAILY_MAX_COUNT": "ten"}, "TOPUP_DAILY_MAX_COUNT"},
		{"balance max", map[string]string{"BALANCE_MAX_RIALS": "1.5"}, "BALANCE_MAX_RIALS"},
		{"signup rate", map[string]string{"RATE_LIMIT_SIGNUP": "-3"}, "RATE_LIMIT_SIGNUP"},
		{"forgot rate", map[string]string{"RATE_LIMIT_FORGOT": "-3"}, "RATE_LIMIT_FORGOT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(env(tt.env))
			if err == nil {
				t.Fatalf("Load(%v): no error, want one naming %s", tt.env, tt.wantVar)
			}
			if !strings.Contains(err.Error(), tt.wantVar) {
				t.Fatalf("Load(%v) error %q does not name %s", tt.env, err, tt.wantVar)
			}
		})
	}
}

func TestLoadReportsAllErrors(t *testing.T) {
	_, err := config.Load(env(map[string]string{
		"DATABASE_URL":   "mysql://x",
		"LISTEN_ADDR":    "nope",
		"BASE_URL":       "ftp://x",
		"GATEWAY":        "paypal",
		"SESSION_SECRET": "short",
		"GATEWAY_BUDGET": "soon",
	}))
	if err == nil {
		t.Fatal("Load: no error")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"DATABASE_URL", "LISTEN_ADDR", "BASE_URL", "GATEWAY:", "SESSION_SECRET", "GATEWAY_BUDGET"}
	if len(lines) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for _, v := range want {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s:\n%v", v, err)
		}
	}
}

func TestDevSessionSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "nested")
	s1, err := config.DevSessionSecret(dir)
	if err != nil {
		t.Fatalf("first DevSessionSecret: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "session_secret"))
	if err != nil {
		t.Fatalf("secret file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("secret file mode = %o, want 600", perm)
	}
	// The generated secret passes the same strength check as SESSION_SECRET.
	if _, err := config.Load(env(map[string]string{"SESSION_SECRET": string(s1), "GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be"})); err != nil {
		t.Errorf("generated secret %q refused by Load: %v", s1, err)
	}
	s2, err := config.DevSessionSecret(dir)
	if err != nil {
		t.Fatalf("second DevSessionSecret: %v", err)
	}
	if string(s1) != string(s2) {
		t.Errorf("second call returned another secret: %q then %q", s1, s2)
	}

	// A weak secret left in the file is replaced by a fresh strong one.
	if err := os.WriteFile(filepath.Join(dir, "session_secret"), []byte("weak\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := config.DevSessionSecret(dir)
	if err != nil {
		t.Fatalf("DevSessionSecret over a weak file: %v", err)
	}
	if string(s3) == "weak" || string(s3) == string(s1) || len(s3) < 32 {
		t.Errorf("weak file: got %q", s3)
	}

	// A weak secret in a file others could read is replaced, and the file
	// is narrowed to its owner.
	path := filepath.Join(dir, "session_secret")
	if err := os.WriteFile(path, []byte("weak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.DevSessionSecret(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten secret file mode = %v (%v), want 600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data folder mode = %v (%v), want 700", fi.Mode().Perm(), err)
	}
}

// The merchant id travels in every call to the bank: plain http is only
// accepted to a bank on this machine.
func TestZarinpalBaseURLTransport(t *testing.T) {
	for _, u := range []string{"https://payment.zarinpal.com", "http://127.0.0.1:9090", "http://localhost:9090", "http://[::1]:9090"} {
		_, err := config.Load(env(map[string]string{"GATEWAY": "zarinpal",
			"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": u}))
		if err != nil {
			t.Errorf("ZARINPAL_BASE_URL=%s refused: %v", u, err)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	c, err := config.Load(func(k string) string {
		switch k {
		case "TRUSTED_PROXIES":
			return "10.0.0.1, 192.168.0.0/16 ,::1"
		case "ALLOW_SANDBOX":
			return "1"
		}
		return ""
	})
	if err != nil || len(c.TrustedProxies) != 3 || c.TrustedProxies[1] != "192.168.0.0/16" {
		t.Fatalf("got %v, %v", c.TrustedProxies, err)
	}
	_, err = config.Load(func(k string) string {
		if k == "TRUSTED_PROXIES" {
			return "10.0.0.1,proxy.local"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
		t.Fatalf("bad proxy accepted: %v", err)
	}
}

func TestSandboxOnlyOnLoopbackUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		base, allow string
		ok          bool
	}{
		{"http://localhost:8080", "", true},
		{"http://127.0.0.1:9000", "", true},
		{"http://[::1]:8080", "", true},
		{"http://app.localhost", "", false}, // resolved through DNS (issue 20, finding 14)
		{"https://wallet.example.ir", "", false},
		{"http://10.0.0.5:8080", "", false},
		{"https://wallet.example.ir", "1", true},
		{"https://wallet.example.ir", "yes", false},
	} {
		_, err := config.Load(env(map[string]string{"BASE_URL": tc.base, "ALLOW_SANDBOX": tc.allow}))
		if (err == nil) != tc.ok {
			t.Errorf("BASE_URL=%s ALLOW_SANDBOX=%q: err %v, want ok=%v", tc.base, tc.allow, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "GATEWAY") && !strings.Contains(tc.base, ".localhost") {
			t.Errorf("error does not name GATEWAY: %v", err)
		}
	}
}

func TestRequestTimeout(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want time.Duration
	}{
		{"default", nil, 10 * time.Second},
		{"default cut to a shorter budget", map[string]string{"GATEWAY_BUDGET": "4s"}, 4 * time.Second},
		{"default with a longer budget", map[string]string{"GATEWAY_BUDGET": "30s"}, 10 * time.Second},
		{"set", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "7s"}, 7 * time.Second},
		{"set to the budget", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "12s"}, 12 * time.Second},
		{"set below the attempt time-out", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "1s"}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.RequestTimeout != tt.want {
				t.Errorf("RequestTimeout = %v, want %v", c.RequestTimeout, tt.want)
			}
		})
	}
}

// Without BASE_URL the app is where LISTEN_ADDR says (the built-in bank
// is called there); with both set, ports that disagree are warned about.
func TestBaseURLFromListenAddr(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		wantListen  string
		wantBase    string
		wantWarning bool
	}{
		{"nothing set", nil, "127.0.0.1:8080", "http://localhost:8080", false},
		{"listen on loopback", map[string]string{"LISTEN_ADDR": "127.0.0.1:18085"}, "127.0.0.1:18085", "http://127.0.0.1:18085", false},
		{"listen on localhost", map[string]string{"LISTEN_ADDR": "localhost:9001"}, "localhost:9001", "http://localhost:9001", false},
		{"listen on IPv6 loopback", map[string]string{"LISTEN_ADDR": "[::1]:9002"}, "[::1]:9002", "http://[::1]:9002", false},
		{"listen everywhere (demo)", map[string]string{"LISTEN_ADDR": ":9003", "ALLOW_SANDBOX": "1"}, ":9003", "http://localhost:9003", false},
		{"listen on 0.0.0.0 (demo)", map[string]string{"LISTEN_ADDR": "0.0.0.0:9004", "ALLOW_SANDBOX": "1"}, "0.0.0.0:9004", "http://localhost:9004", false},
		{"both agree", map[string]string{"LISTEN_ADDR": "127.0.0.1:18085", "BASE_URL": "http://localhost:18085"}, "127.0.0.1:18085", "http://localhost:18085", false},
		{"ports disagree", map[string]string{"LISTEN_ADDR": "127.0.0.1:18085", "BASE_URL": "http://localhost:8080"}, "127.0.0.1:18085", "http://localhost:8080", true},
		{"default port of https disagrees", map[string]string{"LISTEN_ADDR": ":8443", "BASE_URL": "https://wallet.example.ir",
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "SUPPORT_EMAIL": "help@example.ir"}, ":8443", "https://wallet.example.ir", true},
		{"real gateway listens everywhere by default", map[string]string{"BASE_URL": "https://wallet.example.ir",
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "SUPPORT_EMAIL": "help@example.ir"}, ":8080", "https://wallet.example.ir", false},
		{"only BASE_URL set", map[string]string{"BASE_URL": "http://localhost:9999"}, "127.0.0.1:8080", "http://localhost:9999", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.ListenAddr != tc.wantListen || c.BaseURL != tc.wantBase {
				t.Errorf("listen %q base %q, want %q %q", c.ListenAddr, c.BaseURL, tc.wantListen, tc.wantBase)
			}
			if c.GatewayURL() != c.BaseURL+routes.Sandbank && c.Gateway == config.GatewaySandbox {
				t.Errorf("sandbox bank at %q, want under %q", c.GatewayURL(), c.BaseURL)
			}
			if got := len(c.Warnings) > 0; got != tc.wantWarning {
				t.Errorf("warnings %q, want some=%v", c.Warnings, tc.wantWarning)
			}
			for _, w := range c.Warnings {
				if !strings.Contains(w, "LISTEN_ADDR") || !strings.Contains(w, "BASE_URL") {
					t.Errorf("warning does not name both variables: %s", w)
				}
			}
		})
	}
}

// The sandbox bank (free money) never listens on the network unless
// ALLOW_SANDBOX=1 (issue 9, gap 1).
func TestSandboxListensOnLoopbackUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		listen, allow string
		ok            bool
	}{
		{"", "", true},
		{"127.0.0.1:8080", "", true},
		{"127.0.0.2:8080", "", true},
		{"localhost:8080", "", true},
		{"[::1]:8080", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{"10.0.0.5:8080", "", false},
		{"wallet.example.ir:8080", "", false},
		{":8080", "1", true},
		{"0.0.0.0:8080", "1", true},
		{":8080", "true", false},
	} {
		e := map[string]string{"LISTEN_ADDR": tc.listen, "ALLOW_SANDBOX": tc.allow, "BASE_URL": "http://localhost:8080"}
		_, err := config.Load(env(e))
		if (err == nil) != tc.ok {
			t.Errorf("LISTEN_ADDR=%q ALLOW_SANDBOX=%q: err %v, want ok=%v", tc.listen, tc.allow, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "GATEWAY") || !strings.Contains(err.Error(), "ALLOW_SANDBOX")) {
			t.Errorf("error does not name GATEWAY and ALLOW_SANDBOX: %v", err)
		}
	}
	// A real gateway may listen anywhere.
	if _, err := config.Load(env(map[string]string{"LISTEN_ADDR": ":8080", "GATEWAY": "zarinpal",
		"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be"})); err != nil {
		t.Errorf("zarinpal on :8080: %v", err)
	}
}

func TestDatabaseDescription(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "SQLite " + dburl.DefaultSQLitePath},
		{"sqlite:/tmp/x.db", "SQLite /tmp/x.db"},
		{"postgres://u:secret@db:5432/kifpool?sslmode=disable", "PostgreSQL postgres://u:xxxxx@db:5432/kifpool?sslmode=disable"},
		// libpq takes the password in the query too: hidden there as well.
		{"postgres://u@db:5432/kifpool?password=secret&sslmode=require", "PostgreSQL postgres://u@db:5432/kifpool?password=xxxxx&sslmode=require"},
		{"postgres://u@db/kifpool?sslmode=verify-full&sslpassword=secret", "PostgreSQL postgres://u@db/kifpool?sslmode=verify-full&sslpassword=xxxxx"},
	} {
		c, err := config.Load(env(map[string]string{"DATABASE_URL": tc.url}))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.DatabaseDescription(); got != tc.want || strings.Contains(got, "secret") {
			t.Errorf("%q: %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestRateLimits(t *testing.T) {
	cases := []struct {
		name          string
		vars          map[string]string
		signIn, topUp int
		wantErr       string
	}{
		{name: "defaults", vars: map[string]string{}, signIn: 20, topUp: 30},
		{name: "off", vars: map[string]string{"RATE_LIMIT_SIGNIN": "0", "RATE_LIMIT_TOPUP": "0"}, signIn: 0, topUp: 0},
		{name: "set", vars: map[string]string{"RATE_LIMIT_SIGNIN": "5", "RATE_LIMIT_TOPUP": "600"}, signIn: 5, topUp: 600},
		{name: "negative", vars: map[string]string{"RATE_LIMIT_TOPUP": "-1"}, wantErr: "RATE_LIMIT_TOPUP"},
		{name: "words", vars: map[string]string{"RATE_LIMIT_SIGNIN": "lots"}, wantErr: "RATE_LIMIT_SIGNIN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.vars))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RateLimitSignIn != tc.signIn || c.RateLimitTopUp != tc.topUp {
				t.Fatalf("limits %d/%d, want %d/%d", c.RateLimitSignIn, c.RateLimitTopUp, tc.signIn, tc.topUp)
			}
		})
	}
}

// The profiler shows memory and stacks: it listens on loopback only.
func TestPprofAddr(t *testing.T) {
	cases := []struct {
		name, addr, want, wantErr string
	}{
		{name: "off by default", addr: "", want: ""},
		{name: "ipv4 loopback", addr: "127.0.0.1:6060", want: "127.0.0.1:6060"},
		{name: "localhost", addr: "localhost:6060", want: "localhost:6060"},
		{name: "ipv6 loopback", addr: "[::1]:6060", want: "[::1]:6060"},
		{name: "every interface", addr: ":6060", wantErr: "PPROF_ADDR"},
		{name: "all ipv4", addr: "0.0.0.0:6060", wantErr: "PPROF_ADDR"},
		{name: "public address", addr: "10.1.2.3:6060", wantErr: "PPROF_ADDR"},
		{name: "no port", addr: "127.0.0.1", wantErr: "PPROF_ADDR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{"PPROF_ADDR": tc.addr}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PprofAddr != tc.want {
				t.Fatalf("PprofAddr = %q, want %q", c.PprofAddr, tc.want)
			}
		})
	}
}

func TestDatabaseMaxConns(t *testing.T) {
	cases := []struct {
		name, v string
		want    int
		wantErr bool
	}{
		{"default (store's)", "", 0, false},
		{"set", "12", 12, false},
		{"negative", "-1", 0, true},
		{"words", "many", 0, true},
		{"absurd", "100000", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{"DATABASE_MAX_CONNS": tc.v}))
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "DATABASE_MAX_CONNS") {
					t.Fatalf("err = %v, want one naming DATABASE_MAX_CONNS", err)
				}
				return
			}
			if err != nil || c.DatabaseMaxConns != tc.want {
				t.Fatalf("DatabaseMaxConns = %d, %v; want %d", c.DatabaseMaxConns, err, tc.want)
			}
		})
	}
}

// A real gateway never serves on the development secret; the sandbox
// bank may.
func TestServeRefusal(t *testing.T) {
	zp := map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		refused bool
	}{
		{"sandbox, development secret", nil, false},
		{"sandbox, SESSION_SECRET (a demo)", map[string]string{"SESSION_SECRET": strongSecret, "ALLOW_SANDBOX": "1"}, false},
		{"zarinpal, no SESSION_SECRET", zp, true},
		{"zarinpal, SESSION_SECRET", map[string]string{"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": zp["ZARINPAL_MERCHANT_ID"], "SESSION_SECRET": strongSecret}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			err = c.ServeRefusal()
			if (err != nil) != tc.refused {
				t.Fatalf("ServeRefusal = %v, want refused=%v", err, tc.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "SESSION_SECRET") {
				t.Fatalf("the refusal does not name SESSION_SECRET: %v", err)
			}
		})
	}
}

// The sandbox bank never runs where a real payer could reach it, whatever
// combination of variables is set, unless ALLOW_SANDBOX=1 (issue 20,
// finding 1: a production secret behind a proxy on loopback, with GATEWAY
// and BASE_URL unset, credited 5,000,000 rials without paying). Every
// subset of the four signs of reach is tried: only the empty one runs.
func TestSandboxNeverReachableWithoutAllow(t *testing.T) {
	signs := []struct{ name, value string }{
		{"SESSION_SECRET", strongSecret},
		{"TRUSTED_PROXIES", "127.0.0.1"},
		{"BASE_URL", "https://wallet.example.ir"},
		{"LISTEN_ADDR", "0.0.0.0:8080"},
	}
	for mask := 0; mask < 1<<len(signs); mask++ {
		for _, allow := range []string{"", "1"} {
			e := map[string]string{"LISTEN_ADDR": "127.0.0.1:8080", "ALLOW_SANDBOX": allow}
			var set []string
			for i, s := range signs {
				if mask&(1<<i) != 0 {
					e[s.name] = s.value
					set = append(set, s.name)
				}
			}
			for _, gateway := range []string{"", "sandbox"} { // unset is the sandbox
				e["GATEWAY"] = gateway
				_, err := config.Load(env(e))
				want := mask == 0 || allow == "1"
				if (err == nil) != want {
					t.Errorf("set %v, GATEWAY=%q, ALLOW_SANDBOX=%q: err %v, want runs=%v", set, gateway, allow, err, want)
				}
				if err != nil && (!strings.Contains(err.Error(), "ALLOW_SANDBOX") || !strings.Contains(err.Error(), set[0])) {
					t.Errorf("set %v: the refusal does not say why: %v", set, err)
				}
			}
		}
	}
}

// Names under .localhost are resolved through DNS: refused for every
// address serve listens on or is reached at (issue 20, finding 14).
func TestDotLocalhostNamesAreRefused(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"PPROF_ADDR", "evil.localhost:6060"},
		{"PPROF_ADDR", "a.b.localhost.:6060"},
		{"LISTEN_ADDR", "app.localhost:8080"},
		{"BASE_URL", "http://app.localhost:8080"},
		{"BASE_URL", "https://WALLET.LOCALHOST"},
	} {
		e := map[string]string{tc.name: tc.value, "ALLOW_SANDBOX": "1"}
		_, err := config.Load(env(e))
		if err == nil || !strings.Contains(err.Error(), tc.name+": ") || !strings.Contains(err.Error(), "DNS") {
			t.Errorf("%s=%s: %v, want refused for DNS", tc.name, tc.value, err)
		}
	}
	for _, tc := range []struct{ name, value string }{
		{"PPROF_ADDR", "localhost:6060"}, {"PPROF_ADDR", "127.0.0.1:6060"}, {"LISTEN_ADDR", "localhost:8080"}, {"BASE_URL", "http://localhost:8080"},
	} {
		if _, err := config.Load(env(map[string]string{tc.name: tc.value})); err != nil {
			t.Errorf("%s=%s refused: %v", tc.name, tc.value, err)
		}
	}
}

// METRICS_TOKEN opens /metrics: it must be as strong as a secret
// (issue 20, finding 16).
func TestMetricsTokenStrength(t *testing.T) {
	for _, weak := range []string{"metrics", "metrics-secret", strings.Repeat("ab", 20), "bench-metrics-token"} {
		if _, err := config.Load(env(map[string]string{"METRICS_TOKEN": weak})); err == nil || !strings.Contains(err.Error(), "METRICS_TOKEN") {
			t.Errorf("METRICS_TOKEN=%q: %v, want refused", weak, err)
		}
	}
	if c, err := config.Load(env(map[string]string{"METRICS_TOKEN": strongSecret})); err != nil || c.MetricsToken != strongSecret {
		t.Errorf("a strong METRICS_TOKEN: %v", err)
	}
}

// DATA_DIR moves the zero-setup SQLite file (issue 20, finding 15);
// DATABASE_URL, when set, wins.
func TestDataDirHoldsTheDefaultDatabase(t *testing.T) {
	for _, tc := range []struct{ dataDir, dbURL, want string }{
		{"", "", "sqlite:./data/kifpool.db"},
		{"/srv/kifpool", "", "sqlite:/srv/kifpool/kifpool.db"},
		{"state", "", "sqlite:state/kifpool.db"},
		{"/srv/kifpool", "sqlite:/elsewhere.db", "sqlite:/elsewhere.db"},
	} {
		c, err := config.Load(env(map[string]string{"DATA_DIR": tc.dataDir, "DATABASE_URL": tc.dbURL}))
		if err != nil {
			t.Fatal(err)
		}
		if c.DatabaseURL != tc.want {
			t.Errorf("DATA_DIR=%q DATABASE_URL=%q: database %q, want %q", tc.dataDir, tc.dbURL, c.DatabaseURL, tc.want)
		}
	}
	c, err := config.Load(env(map[string]string{"DATA_DIR": "/srv/kifpool"}))
	if err != nil || c.DatabaseDescription() != "SQLite /srv/kifpool/kifpool.db" {
		t.Errorf("description %q (%v)", c.DatabaseDescription(), err)
	}
}

// An existing DATA_DIR that other users can read is narrowed to 0700, and
// serve says so (issue 20, finding 15).
func TestPrepareDataDirNarrowsAWideFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if w, err := config.PrepareDataDir(dir); w != "" || err != nil {
		t.Fatalf("missing folder: %q %v", w, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o755, 0o750, 0o701, 0o777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		w, err := config.PrepareDataDir(dir)
		if err != nil || !strings.Contains(w, "narrowed to 0700") {
			t.Errorf("mode %o: %q %v, want a warning that it was narrowed", mode, w, err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("mode %o: now %v, want 0700", mode, fi.Mode().Perm())
		}
	}
	if w, err := config.PrepareDataDir(dir); w != "" || err != nil {
		t.Errorf("a private folder: %q %v, want nothing to say", w, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.PrepareDataDir(file); err == nil {
		t.Errorf("a file as DATA_DIR accepted")
	}
}

// Mail settings: the default sender is on BASE_URL's host; without
// SMTP_URL outside development, serve warns that nobody receives mail.
func TestMailSettings(t *testing.T) {
	c, err := config.Load(env(map[string]string{"BASE_URL": "https://wallet.example.com", "GATEWAY": "zarinpal",
		"ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555", "SESSION_SECRET": strongSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MailFrom != "Kifpool <noreply@wallet.example.com>" || c.SMTPURL != "" {
		t.Fatalf("mail: from %q, smtp %q", c.MailFrom, c.SMTPURL)
	}
	warned := false
	for _, w := range c.Warnings {
		warned = warned || strings.Contains(w, "SMTP_URL is not set")
	}
	if !warned {
		t.Fatalf("no warning about mail going nowhere: %q", c.Warnings)
	}
	c, err = config.Load(env(map[string]string{"SMTP_URL": "smtps://u:p@mail.example.com", "MAIL_FROM": "Wallet <w@example.com>",
		"TOPUP_DAILY_MAX_RIALS": "5_000_000", "BALANCE_MAX_RIALS": "20000000"}))
	if err != nil || c.SMTPURL != "smtps://u:p@mail.example.com" || c.MailFrom != "Wallet <w@example.com>" ||
		c.TopUpDailyMaxRials != 5_000_000 || c.BalanceMaxRials != 20_000_000 || c.TopUpDailyMaxCount != 0 {
		t.Fatalf("%v %+v", err, c)
	}
}

// A real bank sends each payer back to BASE_URL: on this machine's
// address they land on their own computer, over plain http without TLS.
// Start warns; a gateway on this machine (a standalone sandbox bank) and
// the built-in sandbox say nothing.
func TestUnreachableReturnWarns(t *testing.T) {
	zp := map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555", "SESSION_SECRET": strongSecret}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for no such warning
	}{
		{"Zarinpal, BASE_URL left to the listen address", withVars(zp, "LISTEN_ADDR", "127.0.0.1:8080"), "BASE_URL http://127.0.0.1:8080 is this machine, but zarinpal sends payers back to it"},
		{"Zarinpal, BASE_URL on localhost", withVars(zp, "BASE_URL", "https://localhost"), "is this machine"},
		{"Zarinpal, BASE_URL plain http", withVars(zp, "BASE_URL", "http://pay.example.com"), "is plain http with zarinpal"},
		{"Zarinpal, BASE_URL https", withVars(zp, "BASE_URL", "https://pay.example.com"), ""},
		{"a standalone sandbox bank on this machine", withVars(withVars(zp, "ZARINPAL_BASE_URL", "http://127.0.0.1:9090"), "BASE_URL", "http://127.0.0.1:8080"), ""},
		{"the built-in sandbox", map[string]string{"BASE_URL": "http://127.0.0.1:8080"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := warningsOf(t, tc.env, func(w string) bool { return strings.HasPrefix(w, "BASE_URL ") })
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("warnings %q, want one saying %q", got, tc.want)
			}
		})
	}
}

// WEBHOOK_ALLOW_LOOPBACK with a real gateway is a deployment opening its
// own machine to partners' webhooks: start warns; with the sandbox, not.
func TestLoopbackHooksLiveWarns(t *testing.T) {
	zp := map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555", "SESSION_SECRET": strongSecret,
		"BASE_URL": "https://pay.example.com", "WEBHOOK_ALLOW_LOOPBACK": "1"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"a real gateway", zp, true},
		{"a real gateway, unset", withVars(zp, "WEBHOOK_ALLOW_LOOPBACK", ""), false},
		{"the sandbox", map[string]string{"WEBHOOK_ALLOW_LOOPBACK": "1"}, false},
	} {
		got := warningsOf(t, tc.env, func(w string) bool { return strings.HasPrefix(w, "WEBHOOK_ALLOW_LOOPBACK=1 with a real gateway") })
		if (len(got) > 0) != tc.want {
			t.Errorf("%s: warned %q, want a warning %v", tc.name, got, tc.want)
		}
	}
}

// warningsOf are the start warnings of the configuration of env that
// keep holds.
func warningsOf(t *testing.T, vars map[string]string, keep func(string) bool) []string {
	t.Helper()
	c, err := config.Load(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range c.Warnings {
		if keep(w) {
			out = append(out, w)
		}
	}
	return out
}

// withVars is env with k set to v (a copy).
func withVars(env map[string]string, k, v string) map[string]string {
	out := maps.Clone(env)
	out[k] = v
	return out
}

// A gateway's variables set while GATEWAYS does not name it are not read:
// start warns, by name and never with the value (a password).
func TestUnusedGatewaySettingsWarn(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for no such warning
	}{
		{"Mellat's variables with GATEWAYS=zarinpal", map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555",
			"MELLAT_TERMINAL_ID": "123", "MELLAT_PASSWORD": "hunter2-secret"}, "MELLAT_TERMINAL_ID, MELLAT_PASSWORD set, but GATEWAYS does not name mellat: not used"},
		{"a real gateway's variable with the sandbox bank", map[string]string{"ZIBAL_MERCHANT": "abc"}, "ZIBAL_MERCHANT set, but GATEWAYS=sandbox uses the built-in sandbox bank: not used"},
		{"the named gateway's own variables", map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env["GATEWAYS"] != "" {
				tc.env["SESSION_SECRET"] = strongSecret
			}
			if shown := warningsOf(t, tc.env, func(w string) bool { return strings.Contains(w, "hunter2") }); len(shown) > 0 {
				t.Errorf("a warning shows a secret: %q", shown)
			}
			got := warningsOf(t, tc.env, func(w string) bool { return strings.Contains(w, "not used") })
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}

// The operator's details: support contacts (the first set one primary),
// the company, terms and privacy, the eNamad seal cut down to links and
// images; a real gateway without any support contact warns.
func TestOperatorSettings(t *testing.T) {
	real := map[string]string{"GATEWAYS": "zarinpal", "ZARINPAL_MERCHANT_ID": "11111111-2222-3333-4444-555555555555", "SESSION_SECRET": strongSecret}
	supportWarning := func(c config.Config) bool {
		for _, w := range c.Warnings {
			if strings.Contains(w, "no support contact") {
				return true
			}
		}
		return false
	}
	c, err := config.Load(env(real))
	if err != nil {
		t.Fatal(err)
	}
	if !supportWarning(c) || c.Operator.HasSupport() {
		t.Errorf("real gateway without a support contact: warnings %q", c.Warnings)
	}
	if c, err := config.Load(env(nil)); err != nil || supportWarning(c) {
		t.Errorf("the sandbox bank warns of support: %v %q", err, c.Warnings)
	}

	with := map[string]string{"SUPPORT_PHONE": "+98 21 1234-5678", "SUPPORT_URL": "https://help.example.com/ticket",
		"OPERATOR_NAME": "Example Pay Co.", "TERMS_URL": "https://example.com/terms", "PRIVACY_URL": "https://example.com/privacy",
		"ENAMAD_HTML": `<a referrerpolicy='unsafe-url' target='_blank' href='https://trustseal.enamad.ir/?id=1&Code=x'><img referrerpolicy='no-referrer-when-downgrade' src='https://trustseal.enamad.ir/logo.aspx?id=1&Code=x' alt='' style='cursor:pointer' onclick='alert(1)' code='x'></a>`}
	for k, v := range real {
		with[k] = v
	}
	c, err = config.Load(env(with))
	if err != nil {
		t.Fatal(err)
	}
	if supportWarning(c) {
		t.Errorf("warned with a support phone: %q", c.Warnings)
	}
	o := c.Operator
	if got := o.Contacts(); len(got) != 2 || got[0].Kind != "phone" || got[0].Href != "tel:+982112345678" || got[1].Href != "https://help.example.com/ticket" {
		t.Errorf("contacts %+v: want the phone first (the first set), then the page", got)
	}
	if o.Name != "Example Pay Co." || o.TermsURL != "https://example.com/terms" || o.PrivacyURL != "https://example.com/privacy" {
		t.Errorf("operator %+v", o)
	}
	if strings.Contains(o.SealHTML, "style") || strings.Contains(o.SealHTML, "onclick") || !strings.Contains(o.SealHTML, `src="https://trustseal.enamad.ir/logo.aspx?id=1&amp;Code=x"`) ||
		!strings.Contains(o.SealHTML, `rel="noopener"`) || len(o.SealOrigins) != 1 || o.SealOrigins[0] != "https://trustseal.enamad.ir" ||
		strings.Count(o.SealHTML, `referrerpolicy="origin"`) != 2 || strings.Contains(o.SealHTML, "unsafe-url") || strings.Contains(o.SealHTML, "downgrade") {
		t.Errorf("seal %q, origins %q", o.SealHTML, o.SealOrigins)
	}
	with["SUPPORT_EMAIL"] = "help@example.com"
	if c, err := config.Load(env(with)); err != nil || c.Operator.Contacts()[0].Href != "mailto:help@example.com" {
		t.Errorf("the e-mail address is the primary contact when set: %v %+v", err, c.Operator.Contacts())
	}

	for name, bad := range map[string]string{
		"SUPPORT_EMAIL": "Help <help@example.com>",
		"SUPPORT_PHONE": "۰۲۱۱۲۳۴",
		"SUPPORT_URL":   "javascript:alert(1)",
		"TERMS_URL":     "/terms",
		"OPERATOR_NAME": "<b>Co</b>",
		"ENAMAD_HTML":   `<script src="https://trustseal.enamad.ir/x.js"></script>`,
	} {
		_, err := config.Load(env(map[string]string{name: bad}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want refused", name, bad, err)
		}
	}
	if _, err := config.Load(env(map[string]string{"ENAMAD_HTML": `<img src="http://trustseal.enamad.ir/logo.aspx">`})); err == nil {
		t.Errorf("a seal image over http accepted")
	}
}

// DATABASE_READ_URL: unset, every read on the primary; set beside a
// PostgreSQL primary, kept as given (and shown without its password).
func TestDatabaseReadURL(t *testing.T) {
	tests := []struct {
		name, primary, read, want string
	}{
		{"unset", "postgres://u@db/kifpool", "", ""},
		{"blank", "postgres://u@db/kifpool", "  ", ""},
		{"replica", "postgres://u@db/kifpool", "postgres://reader@replica:5432/kifpool?sslmode=require", "postgres://reader@replica:5432/kifpool?sslmode=require"},
		{"postgresql scheme", "postgres://u@db/kifpool", "postgresql://reader@replica/kifpool", "postgresql://reader@replica/kifpool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{"DATABASE_URL": tc.primary, "DATABASE_READ_URL": tc.read}))
			if err != nil {
				t.Fatal(err)
			}
			if c.DatabaseReadURL != tc.want {
				t.Errorf("DatabaseReadURL = %q, want %q", c.DatabaseReadURL, tc.want)
			}
		})
	}
}
