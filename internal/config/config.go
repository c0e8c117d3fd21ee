// Package config reads Kifpool's settings from the environment, checks
// them, and hands them down as one typed value. Nothing reads the
// environment anywhere else.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/dburl"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/money"
)

// GatewaySandbox is the GATEWAY value of the built-in sandbox bank (the
// default); every other value names a driver of the registry
// (internal/gateway/drivers).
const GatewaySandbox = drivers.Sandbox

// DefaultRequestTimeout is GATEWAY_REQUEST_TIMEOUT's default (cut to
// GATEWAY_BUDGET when that is shorter).
const DefaultRequestTimeout = 10 * time.Second

// Config is the whole of Kifpool's configuration.
type Config struct {
	DatabaseURL   string
	ListenAddr    string
	BaseURL       string
	SessionSecret []byte
	// Gateway is GATEWAY as set: "sandbox" or a driver's name.
	Gateway string
	// Driver is the gateway driver's name (with GATEWAY=sandbox, the
	// driver the sandbox bank imitates).
	Driver string
	// GatewaySettings are the driver's checked settings (its own
	// environment variables; against the sandbox bank, the driver's
	// sandbox settings).
	GatewaySettings gateway.Settings
	TopUpMinRials   int64
	TopUpMaxRials   int64
	// Bank calls: each attempt and each whole operation (retries
	// included) are bounded.
	AttemptTimeout time.Duration
	Budget         time.Duration
	// RequestTimeout bounds the bank's request call (one attempt, never
	// retried), within Budget.
	RequestTimeout time.Duration
	// Circuit breaker, one per gateway and instance.
	BreakerMinRequests    uint32
	BreakerFailurePercent uint32
	BreakerWindow         time.Duration
	BreakerOpenTimeout    time.Duration
	// Background worker that resolves open payments (0 interval: off).
	WorkerInterval          time.Duration
	WorkerConcurrency       int
	WorkerAbandonedAfter    time.Duration
	WorkerAuthorityLifetime time.Duration
	WorkerMaxUnknown        time.Duration
	WorkerStaleCreated      time.Duration
	WorkerBackoffBase       time.Duration
	WorkerBackoffMax        time.Duration
	// PendingRecheckAfter: after an unknown verify outcome, the first new
	// check (a reload of the pending page, or the worker) waits this long.
	PendingRecheckAfter time.Duration
	// HTTPReadTimeout bounds the reading of one whole request (headers
	// and body) from the moment it starts: a client that sends slower
	// (a slowloris, a stalled upload) is answered 408 and cut off.
	HTTPReadTimeout time.Duration
	// TrustedProxies are the addresses (IPs or CIDRs) of reverse proxies
	// whose X-Forwarded-For and X-Forwarded-Proto are believed.
	TrustedProxies []string
	// MetricsToken, when set, opens GET /metrics to that bearer token.
	MetricsToken string
	// RateLimitSignIn and RateLimitTopUp are requests per minute (per
	// client address for sign-in and sign-up, per user for top-ups);
	// 0 turns the limit off (load runs).
	RateLimitSignIn int
	RateLimitTopUp  int
	// ReconcileInterval: how often serve reconciles with the gateway (0: off).
	ReconcileInterval time.Duration
	// IdempotencyKeyTTL: API idempotency keys are kept at least this long,
	// then deleted by a periodic cleanup.
	IdempotencyKeyTTL time.Duration
	// Retention (internal/retention): how long expired sessions, quiet
	// sign-in throttles and the bank calls of failed payments are kept;
	// 0 keeps them for ever (RETENTION_*=off).
	RetentionSessions, RetentionThrottles, RetentionGatewayCalls time.Duration
	// APITopUpsPerMinute limits POST /api/v1/topups per API token.
	APITopUpsPerMinute int
	// APITokenDefaultDays is a new API token's validity when its creator
	// gives none; APITokensPerUser caps a user's live tokens.
	APITokenDefaultDays int
	APITokensPerUser    int
	// DatabaseMaxConns: the PostgreSQL pool of one instance (0: the
	// default, store.DefaultPoolSize).
	DatabaseMaxConns int
	// CreditedCacheSize: credited payments kept in memory per instance for
	// repeat callbacks and receipt reloads (0: none).
	CreditedCacheSize int
	// PprofAddr, when set, is a loopback address where serve exposes Go's
	// profiler (net/http/pprof) on a listener of its own; off by default.
	PprofAddr string
	DataDir   string
	Dev       bool // no SESSION_SECRET given: a generated one is kept under DataDir
	// LogLevel and LogFormat (json or text) shape the log output.
	LogLevel  slog.Level
	LogFormat string
	// Warnings are settings that are valid but probably not what was
	// meant; serve reports them at start.
	Warnings []string
}

// Logging reads LOG_LEVEL and LOG_FORMAT alone (the logger exists before
// the rest of the configuration is read). LOG_FORMAT defaults to text in
// development (no SESSION_SECRET) and to json otherwise.
func Logging(getenv Getenv) (slog.Level, string, error) {
	var errs []error
	level, err := logging.ParseLevel(getenv("LOG_LEVEL"))
	if err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %w", err))
	}
	def := logging.FormatJSON
	if getenv("SESSION_SECRET") == "" {
		def = logging.FormatText
	}
	format, err := logging.ParseFormat(getenv("LOG_FORMAT"), def)
	if err != nil {
		errs = append(errs, fmt.Errorf("LOG_FORMAT: %w", err))
		format = def
	}
	return level, format, errors.Join(errs...)
}

// DefaultHTTPReadTimeout is HTTP_READ_TIMEOUT when unset.
const DefaultHTTPReadTimeout = 30 * time.Second

// DefaultListenAddr is where serve listens without LISTEN_ADDR: this
// machine only with the sandbox bank (it credits wallets for free), every
// interface with a real gateway.
func DefaultListenAddr(gateway string) string {
	if gateway == GatewaySandbox {
		return "127.0.0.1:8080"
	}
	return ":8080"
}

// DatabaseDescription names the database for people (banner, logs):
// the SQLite file, or the PostgreSQL URL without its password.
func (c Config) DatabaseDescription() string {
	d, dsn, err := dburl.Parse(c.DatabaseURL)
	if err != nil {
		return "?"
	}
	if d == dburl.SQLite {
		return "SQLite " + dsn
	}
	if u, err := url.Parse(c.DatabaseURL); err == nil {
		return "PostgreSQL " + u.Redacted()
	}
	return "PostgreSQL"
}

// TopUpLimits are the top-up amount rules (TOPUP_MIN_RIALS, TOPUP_MAX_RIALS).
func (c Config) TopUpLimits() money.Limits {
	return money.Limits{MinRials: c.TopUpMinRials, MaxRials: c.TopUpMaxRials}
}

// GatewayURL is the gateway's API base (the driver's URLSetting), or "".
func (c Config) GatewayURL() string {
	if d, ok := drivers.Lookup(c.Driver); ok && d.URLSetting != "" {
		return c.GatewaySettings[d.URLSetting]
	}
	return ""
}

// Secure reports whether the public URL is HTTPS (cookies get Secure).
func (c Config) Secure() bool { return strings.HasPrefix(c.BaseURL, "https://") }

// Getenv is how the configuration reads the environment (os.Getenv in
// production, a map in tests).
type Getenv func(string) string

// Load reads and validates the configuration. All problems are reported
// together.
func Load(getenv Getenv) (Config, error) {
	var errs []error
	bad := func(name, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, a...)...))
	}
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		DatabaseURL: get("DATABASE_URL", ""),
		Gateway:     get("GATEWAY", GatewaySandbox),
		DataDir:     get("DATA_DIR", "./data"),
	}
	c.ListenAddr = get("LISTEN_ADDR", DefaultListenAddr(c.Gateway))
	if _, _, err := dburl.Parse(c.DatabaseURL); err != nil {
		bad("DATABASE_URL", "%v", err)
	}
	listenHost, listenPort, err := splitHostPort(c.ListenAddr)
	listenOK := err == nil && listenPort != "" && validPort(listenPort)
	if !listenOK {
		bad("LISTEN_ADDR", "want HOST:PORT or :PORT, got %q", c.ListenAddr)
	}
	// Without BASE_URL the app is where it listens (the built-in bank is
	// called there, and callbacks come back there).
	baseSet := get("BASE_URL", "") != ""
	switch {
	case baseSet:
		c.BaseURL = strings.TrimRight(get("BASE_URL", ""), "/")
	case listenOK && getenv("LISTEN_ADDR") != "":
		c.BaseURL = baseURLFor(listenHost, listenPort)
	default:
		c.BaseURL = "http://localhost:8080"
	}
	baseU, err := url.Parse(c.BaseURL)
	baseOK := err == nil && (baseU.Scheme == "http" || baseU.Scheme == "https") && baseU.Host != "" && (baseU.Path == "" || baseU.Path == "/") && !strings.ContainsAny(c.BaseURL, "?#")
	if !baseOK {
		bad("BASE_URL", "want an absolute http(s) URL without a path, got %q", c.BaseURL)
	}
	if baseSet && baseOK && listenOK && strings.TrimSpace(getenv("LISTEN_ADDR")) != "" && listenPort != "0" && urlPort(baseU) != listenPort {
		w := fmt.Sprintf("LISTEN_ADDR %s listens on port %s but BASE_URL %s is on port %s: right only behind a reverse proxy that forwards %s to this address; otherwise leave BASE_URL unset (it is derived from LISTEN_ADDR) or make the ports agree",
			c.ListenAddr, listenPort, c.BaseURL, urlPort(baseU), c.BaseURL)
		if c.Gateway == GatewaySandbox {
			w += " (the built-in sandbox bank is called at BASE_URL/sandbank: top-ups fail when nothing answers there)"
		}
		c.Warnings = append(c.Warnings, w)
	}
	c.TopUpMinRials = int64Var(getenv, "TOPUP_MIN_RIALS", 10_000, bad)
	c.TopUpMaxRials = int64Var(getenv, "TOPUP_MAX_RIALS", 1_000_000_000, bad)
	c.AttemptTimeout = durationVar(getenv, "GATEWAY_ATTEMPT_TIMEOUT", 3*time.Second, bad)
	c.Budget = durationVar(getenv, "GATEWAY_BUDGET", 12*time.Second, bad)
	if c.Budget < c.AttemptTimeout {
		bad("GATEWAY_BUDGET", "must not be shorter than GATEWAY_ATTEMPT_TIMEOUT")
	}
	// Unset, it is 10s cut to the budget; set, it must fit in the budget.
	c.RequestTimeout = durationVar(getenv, "GATEWAY_REQUEST_TIMEOUT", min(DefaultRequestTimeout, c.Budget), bad)
	if c.RequestTimeout > c.Budget {
		bad("GATEWAY_REQUEST_TIMEOUT", "must not be longer than GATEWAY_BUDGET (%v), got %v", c.Budget, c.RequestTimeout)
	}
	c.BreakerMinRequests = uint32Range(getenv, "BREAKER_MIN_REQUESTS", 10, 1, 1_000_000, bad)
	c.BreakerFailurePercent = uint32Range(getenv, "BREAKER_FAILURE_PERCENT", 50, 1, 100, bad)
	c.BreakerWindow = durationVar(getenv, "BREAKER_WINDOW", 30*time.Second, bad)
	c.BreakerOpenTimeout = durationVar(getenv, "BREAKER_OPEN_TIMEOUT", 20*time.Second, bad)
	c.WorkerInterval = durationOrOff(getenv, "WORKER_INTERVAL", 2*time.Second, bad)
	c.WorkerConcurrency = int(int64Range(getenv, "WORKER_CONCURRENCY", 4, 1, 256, bad))
	c.WorkerAbandonedAfter = durationVar(getenv, "WORKER_ABANDONED_AFTER", 2*time.Minute, bad)
	c.WorkerAuthorityLifetime = durationVar(getenv, "WORKER_AUTHORITY_LIFETIME", 20*time.Minute, bad)
	c.WorkerMaxUnknown = durationVar(getenv, "WORKER_MAX_UNKNOWN", 2*time.Hour, bad)
	c.WorkerBackoffBase = durationVar(getenv, "WORKER_BACKOFF_BASE", 10*time.Second, bad)
	c.WorkerBackoffMax = durationVar(getenv, "WORKER_BACKOFF_MAX", 2*time.Minute, bad)
	if c.WorkerBackoffMax < c.WorkerBackoffBase {
		bad("WORKER_BACKOFF_MAX", "must not be shorter than WORKER_BACKOFF_BASE")
	}
	c.PendingRecheckAfter = durationVar(getenv, "PENDING_RECHECK_AFTER", 20*time.Second, bad)
	c.HTTPReadTimeout = durationVar(getenv, "HTTP_READ_TIMEOUT", DefaultHTTPReadTimeout, bad)
	if c.HTTPReadTimeout > 10*time.Minute {
		bad("HTTP_READ_TIMEOUT", "must not be longer than 10m (slow clients would hold connections), got %v", c.HTTPReadTimeout)
	}
	c.WorkerStaleCreated = durationVar(getenv, "WORKER_STALE_CREATED", time.Minute, bad)
	if c.WorkerStaleCreated <= c.Budget {
		bad("WORKER_STALE_CREATED", "must be longer than GATEWAY_BUDGET (a submit may still be talking to the bank)")
	}
	if c.WorkerAbandonedAfter >= c.WorkerAuthorityLifetime {
		bad("WORKER_ABANDONED_AFTER", "must be shorter than WORKER_AUTHORITY_LIFETIME")
	}
	c.MetricsToken = get("METRICS_TOKEN", "")
	c.RateLimitSignIn = perMinuteVar(getenv, "RATE_LIMIT_SIGNIN", 20, bad)
	c.RateLimitTopUp = perMinuteVar(getenv, "RATE_LIMIT_TOPUP", 30, bad)
	for _, p := range strings.Split(get("TRUSTED_PROXIES", ""), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				bad("TRUSTED_PROXIES", "want IP addresses or CIDR ranges separated by commas, got %q", p)
				continue
			}
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
	c.ReconcileInterval = durationOrOff(getenv, "RECONCILE_INTERVAL", 10*time.Minute, bad)
	var logErr error
	c.LogLevel, c.LogFormat, logErr = Logging(getenv)
	if logErr != nil {
		errs = append(errs, logErr)
	}
	c.IdempotencyKeyTTL = durationVar(getenv, "IDEMPOTENCY_KEY_TTL", 24*time.Hour, bad)
	c.RetentionSessions = durationOrOff(getenv, "RETENTION_SESSIONS", 24*time.Hour, bad)
	c.RetentionThrottles = durationOrOff(getenv, "RETENTION_THROTTLES", 24*time.Hour, bad)
	if c.RetentionThrottles > 0 && c.RetentionThrottles < 24*time.Hour {
		bad("RETENTION_THROTTLES", "must be at least 24h (a throttle remembers a key that long; deleting it sooner would lift a lock-out), or off")
	}
	c.RetentionGatewayCalls = durationOrOff(getenv, "RETENTION_GATEWAY_CALLS", 90*24*time.Hour, bad)
	if c.RetentionGatewayCalls > 0 && c.RetentionGatewayCalls < 24*time.Hour {
		bad("RETENTION_GATEWAY_CALLS", "must be at least 24h, or off")
	}
	if c.IdempotencyKeyTTL < time.Minute {
		bad("IDEMPOTENCY_KEY_TTL", "must be at least 1m (clients retry with the same key within it; 24h or more is usual)")
	}
	c.APITopUpsPerMinute = int(int64Range(getenv, "API_TOPUPS_PER_MINUTE", 30, 1, 1_000_000, bad))
	c.APITokenDefaultDays = int(int64Range(getenv, "API_TOKEN_DEFAULT_DAYS", 90, 1, 365, bad))
	c.APITokensPerUser = int(int64Range(getenv, "API_TOKENS_PER_USER", 10, 1, 1000, bad))
	c.DatabaseMaxConns = int(int64Range(getenv, "DATABASE_MAX_CONNS", 0, 0, 1000, bad))
	c.CreditedCacheSize = int(int64Range(getenv, "CREDITED_CACHE_SIZE", 10_000, 0, 10_000_000, bad))
	if c.PprofAddr = strings.TrimSpace(getenv("PPROF_ADDR")); c.PprofAddr != "" {
		// The profiler shows memory and goroutine stacks: never to the network.
		if h, _, err := splitHostPort(c.PprofAddr); err != nil || !loopbackHost(h) {
			bad("PPROF_ADDR", "want a loopback HOST:PORT (127.0.0.1:6060, localhost:6060 or [::1]:6060): the profiler is never exposed to the network, got %q", c.PprofAddr)
		}
	}

	// The gateway: the built-in sandbox bank, or a driver of the
	// registry, which declares and checks its own settings.
	drv, known := drivers.Lookup(c.Gateway)
	switch {
	case c.Gateway == GatewaySandbox:
		drv, known = drivers.Lookup(drivers.SandboxDriver)
		c.Driver = drv.Name
		c.GatewaySettings = drv.Sandbox.Settings(c.BaseURL + "/sandbank")
		// The sandbox bank moves no money and lets anyone press "Pay": it
		// must never be what a public deployment runs by accident, nor be
		// reachable from the network.
		if get("ALLOW_SANDBOX", "") != "1" {
			if !loopbackURL(c.BaseURL) {
				bad("GATEWAY", "the sandbox bank credits wallets without real money; with a public BASE_URL set GATEWAY to a real gateway (%s), or ALLOW_SANDBOX=1 for a demo", strings.Join(drivers.Names(), ", "))
			}
			if listenOK && !loopbackHost(listenHost) {
				bad("GATEWAY", "the sandbox bank credits wallets without real money; it listens only on this machine (LISTEN_ADDR=127.0.0.1:PORT, localhost:PORT or [::1]:PORT), not on %q (or set ALLOW_SANDBOX=1 for a demo)", c.ListenAddr)
			}
		}
	case known:
		c.Driver = drv.Name
		var problems []error
		c.GatewaySettings, problems = drv.Read(getenv)
		errs = append(errs, problems...)
	default:
		bad("GATEWAY", "want one of %s, got %q", strings.Join(drivers.GatewayValues(), ", "), c.Gateway)
	}
	// The amount rules, with the gateway's own minimum as the floor.
	floor := int64(10_000)
	if known {
		floor = drv.Capabilities.MinAmountRials
	}
	for _, e := range c.TopUpLimits().Validate(floor) {
		if e.Max {
			bad("TOPUP_MAX_RIALS", "%s", e.Msg)
		} else {
			bad("TOPUP_MIN_RIALS", "%s", e.Msg)
		}
	}

	if s := getenv("SESSION_SECRET"); s != "" {
		if err := checkSecret(s); err != nil {
			bad("SESSION_SECRET", "%v", err)
		}
		c.SessionSecret = []byte(s)
	} else {
		c.Dev = true
	}
	return c, errors.Join(errs...)
}

// checkSecret refuses secrets that are short or have little variety.
func checkSecret(s string) error {
	if len(s) < 32 {
		return fmt.Errorf("too weak: use at least 32 random characters (e.g. openssl rand -base64 32)")
	}
	distinct := map[rune]bool{}
	for _, r := range s {
		distinct[r] = true
	}
	if len(distinct) < 10 {
		return fmt.Errorf("too weak: too few distinct characters")
	}
	return nil
}

// DevSessionSecret returns the development secret kept in DataDir,
// generating it on first use.
func DevSessionSecret(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, "session_secret") // Join cleans the path
	if b, err := os.ReadFile(path); err == nil {     // #nosec G304 -- the path is DATA_DIR from the operator's configuration
		s := strings.TrimSpace(string(b))
		if checkSecret(s) == nil {
			return []byte(s), nil
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dataDir, err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	s := base64.RawURLEncoding.EncodeToString(raw[:])
	// Readable by the owner only; a file that existed with wider
	// permissions (a weak secret being replaced) is narrowed first.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // #nosec G304 -- the path is DATA_DIR from the operator's configuration
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return []byte(s), nil
}

func int64Var(getenv Getenv, name string, def int64, bad func(string, string, ...any)) int64 {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n <= 0 {
		bad(name, "want a positive whole number of rials, got %q", v)
		return def
	}
	return n
}

// perMinuteVar reads a rate limit in requests per minute; 0 turns it off.
func perMinuteVar(getenv Getenv, name string, def int, bad func(string, string, ...any)) int {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1_000_000 {
		bad(name, "want requests per minute (0 turns the limit off), got %q", v)
		return def
	}
	return n
}

func durationVar(getenv Getenv, name string, def time.Duration, bad func(string, string, ...any)) time.Duration {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		bad(name, "want a positive duration such as 3s or 500ms, got %q", v)
		return def
	}
	return d
}

// int64Range reads a whole number within [lo, hi].
func int64Range(getenv Getenv, name string, def, lo, hi int64, bad func(string, string, ...any)) int64 {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		bad(name, "want a whole number from %d to %d, got %q", lo, hi, v)
		return def
	}
	return n
}

// uint32Range is int64Range for a uint32 setting: parsed as 32 bits, so
// the conversion below cannot wrap.
func uint32Range(getenv Getenv, name string, def, lo, hi uint32, bad func(string, string, ...any)) uint32 {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < uint64(lo) || n > uint64(hi) {
		bad(name, "want a whole number from %d to %d, got %q", lo, hi, v)
		return def
	}
	return uint32(n)
}

// durationOrOff reads a duration where "0" or "off" turns the thing off.
func durationOrOff(getenv Getenv, name string, def time.Duration, bad func(string, string, ...any)) time.Duration {
	v := strings.TrimSpace(getenv(name))
	if v == "0" || strings.EqualFold(v, "off") {
		return 0
	}
	return durationVar(getenv, name, def, bad)
}

// loopbackURL reports whether the URL's host is this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return loopbackHost(u.Hostname())
}

// loopbackHost reports whether a host name or address (IPv6 with or
// without brackets) is this machine only. "" (every interface) is not.
func loopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// baseURLFor is the URL of an app listening on host:port: every interface
// ("", 0.0.0.0, ::) is reached as localhost from this machine.
func baseURLFor(host, port string) string {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "localhost"
	} else if ip != nil && ip.To4() == nil {
		h = "[" + h + "]"
	}
	return "http://" + h + ":" + port
}

// urlPort is the port of an http(s) URL, explicit or implied by its scheme.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

func splitHostPort(addr string) (string, string, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", "", errors.New("no port")
	}
	port := addr[i+1:]
	if _, err := strconv.Atoi(port); err != nil {
		return "", "", err
	}
	return addr[:i], port, nil
}
