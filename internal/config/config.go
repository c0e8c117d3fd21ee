// Package config reads Kifpool's settings from the environment, checks
// them, and hands them down as one typed value. Nothing reads the
// environment anywhere else.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/dburl"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
)

// GatewaySandbox is the GATEWAY value of the built-in sandbox bank (the
// default); every other value names a driver of the registry
// (internal/gateway/drivers).
const GatewaySandbox = drivers.Sandbox

// Config is the whole of Kifpool's configuration.
type Config struct {
	DatabaseURL string
	// DatabaseReadURL is the pages' read database (DATABASE_READ_URL;
	// "": every read on DatabaseURL).
	DatabaseReadURL string
	// DatabaseReadMaxLag: a read database further behind than this is
	// not read (DATABASE_READ_MAX_LAG; 0: off).
	DatabaseReadMaxLag time.Duration
	ListenAddr         string
	BaseURL            string
	SessionSecret      []byte
	// Gateway is GATEWAYS as set: "sandbox", or the drivers' names
	// joined by commas.
	Gateway string
	// Gateways are the drivers' names in the order they are offered
	// (with GATEWAYS=sandbox, every driver the sandbox bank may imitate).
	Gateways []string
	// Driver is the first of Gateways (offered first).
	Driver string
	// gatewayAlias is GATEWAY as set (GATEWAYS' older name).
	gatewayAlias string
	// GatewaySettings are the drivers' checked settings by variable (each
	// driver's own environment variables; against the sandbox bank, the
	// drivers' sandbox settings).
	GatewaySettings gateway.Settings
	TopUpMinRials   int64
	TopUpMaxRials   int64
	// Withdrawals are cash-out's settings (PAYOUTS, WITHDRAWAL_*, the
	// rails' schedule; payouts.go).
	Withdrawals Withdrawals
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
	// Background worker that resolves open top-ups (0 interval: off).
	WorkerInterval          time.Duration
	WorkerConcurrency       int
	WorkerAbandonedAfter    time.Duration
	WorkerAuthorityLifetime time.Duration
	WorkerMaxUnknown        time.Duration
	WorkerStaleCreated      time.Duration
	WorkerBackoffBase       time.Duration
	WorkerBackoffMax        time.Duration
	// CardRefundNotDoneAfter: a card refund the bank's record lacks is
	// believed not made only this long after its call was sent.
	CardRefundNotDoneAfter time.Duration
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
	// RateLimitSignUp is sign-ups per minute per client address, counted
	// apart from sign-ins.
	RateLimitSignUp int
	// RateLimitForgot is "forgot password" requests per minute per client
	// address, counted apart (each may send a mail).
	RateLimitForgot int
	RateLimitTopUp  int
	// RateLimitUnknownRecipients is transfers refused for an address with
	// no account, per user and hour, through the page and the API
	// together; past it every transfer of the user waits (0: no limit).
	RateLimitUnknownRecipients int
	// RateLimitTransfers is transfers made per sender and minute, through
	// the page and the API together (0: no limit).
	RateLimitTransfers int
	// RateLimitAPIAuthFailures is API requests refused for an unknown,
	// revoked or expired token (or none), per client address and minute;
	// past it the address's API requests are answered 429 before any
	// token is looked up (0: no limit).
	RateLimitAPIAuthFailures int
	// RateLimitRecipientPreviews is transfer confirmation pages that
	// name a recipient, per user and hour (0: no limit).
	RateLimitRecipientPreviews int
	// ReconcileInterval: how often serve reconciles with the gateway (0: off).
	ReconcileInterval time.Duration
	// IdempotencyKeyTTL: API idempotency keys are kept at least this long,
	// then deleted by a periodic cleanup.
	IdempotencyKeyTTL time.Duration
	// Retention (internal/retention): how long expired sessions, quiet
	// sign-in throttles and the bank calls of failed top-ups are kept;
	// 0 keeps them for ever (RETENTION_*=off).
	RetentionSessions, RetentionThrottles, RetentionGatewayCalls, RetentionMail, RetentionWebhooks time.Duration
	// APITopUpsPerMinute limits POST /api/v1/topups per API token.
	APITopUpsPerMinute int
	// APIChargesPerMinute limits POST /api/v1/charges per merchant's API
	// token.
	APIChargesPerMinute int
	// APITokenDefaultDays is a new API token's validity when its creator
	// gives none; APITokensPerUser caps a user's live tokens.
	APITokenDefaultDays int
	APITokensPerUser    int
	// SMTPURL is the mail server (smtp:// with STARTTLS when offered,
	// smtps:// with implicit TLS); empty: mail is written into
	// DataDir/mail (development).
	SMTPURL string
	// MailFrom is the sender of every mail ("Name <address>").
	MailFrom string
	// MailInterval is how often queued mail is looked at.
	MailInterval time.Duration
	// Operator is who runs the instance and how payers reach support
	// (footer, failure and error pages, mails).
	Operator Operator
	// Per-user limits (0: off): rials and top-ups started per Tehran day,
	// and the most a wallet may hold (open top-ups counted).
	TopUpDailyMaxRials int64
	TopUpDailyMaxCount int64
	BalanceMaxRials    int64
	// TopUpWaitingMaxCount: how many top-ups a user may have waiting for
	// payment at the bank at once (0: no cap).
	TopUpWaitingMaxCount int64
	// Transfers between people: the smallest transfer (never off) and
	// what one sender may send per Tehran day (0: no limit).
	TransferMinRials      int64
	TransferDailyMaxRials int64
	// ChargeHoldHours is how long a charge's authorization (manual
	// capture) holds the payer's money before it expires.
	ChargeHoldHours int
	// DatabaseMaxConns: the PostgreSQL pool of one instance (0: the
	// default, store.DefaultPoolSize).
	DatabaseMaxConns int
	// CreditedCacheSize: credited top-ups kept in memory per instance for
	// repeat callbacks and receipt reloads (0: none).
	CreditedCacheSize int
	// Webhooks to partners (internal/webhook): loopback targets allowed
	// (development and tests only), how long an event is retried, how
	// often each instance looks for due deliveries (0: off).
	WebhookAllowLoopback bool
	WebhookRetryFor      time.Duration
	WebhookInterval      time.Duration
	// WebhookBackoffBase and WebhookBackoffMax shape the retries' waits.
	WebhookBackoffBase, WebhookBackoffMax time.Duration
	// PprofAddr, when set, is a loopback address where serve exposes Go's
	// profiler (net/http/pprof) on a listener of its own; off by default.
	PprofAddr string
	DataDir   string
	Dev       bool // no SESSION_SECRET given: a generated one is kept under DataDir
	// AllowSandbox (ALLOW_SANDBOX=1) lets the sandbox bank serve a public
	// address (a demo).
	AllowSandbox bool
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
	var c Config
	l := newLoader(getenv)
	for _, o := range Options() {
		if o.Name == "LOG_LEVEL" || o.Name == "LOG_FORMAT" {
			l.read(&c, o)
		}
	}
	return c.LogLevel, c.LogFormat, errors.Join(l.errs...)
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
	return "PostgreSQL " + dburl.Redacted(c.DatabaseURL)
}

// TopUpLimits are the top-up amount rules (TOPUP_MIN_RIALS, TOPUP_MAX_RIALS).
func (c Config) TopUpLimits() money.Limits {
	return money.Limits{MinRials: c.TopUpMinRials, MaxRials: c.TopUpMaxRials}
}

// GatewayURL is the first gateway's API base (the driver's URLSetting),
// or "".
func (c Config) GatewayURL() string { return c.GatewayURLOf(c.Driver) }

// GatewayURLOf is a gateway's API base (the driver's URLSetting), or "".
func (c Config) GatewayURLOf(name string) string {
	if d, ok := drivers.Lookup(name); ok && d.URLSetting != "" {
		return c.GatewaySettings[d.URLSetting]
	}
	return ""
}

// parseGateways reads a GATEWAYS (or GATEWAY) value: `sandbox` alone, or
// registered drivers' names separated by commas, each once.
func parseGateways(v string) ([]string, error) {
	if v == GatewaySandbox {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == GatewaySandbox:
			return nil, fmt.Errorf("`sandbox` stands alone (it imitates every gateway), got %q", v)
		case n == "":
			return nil, fmt.Errorf("an empty name in %q", v)
		case slices.Contains(out, n):
			return nil, fmt.Errorf("%s named twice in %q", n, v)
		}
		if _, ok := drivers.Lookup(n); !ok {
			return nil, fmt.Errorf("want `sandbox` or names among %s, got %q", strings.Join(drivers.Names(), ", "), n)
		}
		out = append(out, n)
	}
	return out, nil
}

// Secure reports whether the public URL is HTTPS (cookies get Secure).
func (c Config) Secure() bool { return strings.HasPrefix(c.BaseURL, "https://") }

// Getenv is how the configuration reads the environment (os.Getenv in
// production, a map in tests).
type Getenv func(string) string

// loader reads options one by one and collects every bad value.
type loader struct {
	getenv Getenv
	errs   []error
	failed map[string]bool // options whose value was refused (their default applies)
	set    map[string]bool // options given in the environment
}

func newLoader(getenv Getenv) *loader {
	return &loader{getenv: getenv, failed: map[string]bool{}, set: map[string]bool{}}
}

func (l *loader) bad(name, format string, a ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s: "+format, append([]any{name}, a...)...))
}

// defaultOf is the value an option takes when it is not set.
func (l *loader) defaultOf(c *Config, o Option) string {
	if o.dynamic != nil {
		return o.dynamic(c, l.getenv)
	}
	return o.Default
}

// read parses one option into c; a bad value is reported with the
// option's name, and its default applies, so that checks that depend on
// it do not report it again.
func (l *loader) read(c *Config, o Option) {
	raw := strings.TrimSpace(l.getenv(o.Name))
	l.set[o.Name] = raw != ""
	if raw == "" {
		raw = l.defaultOf(c, o)
	}
	if err := o.p.set(c, raw); err != nil {
		l.bad(o.Name, "%v", err)
		l.failed[o.Name] = true
		_ = o.p.set(c, l.defaultOf(c, o)) // the defaults are valid (tested)
	}
}

// ok reports whether every named option was read without error.
func (l *loader) ok(names ...string) bool {
	for _, n := range names {
		if l.failed[n] {
			return false
		}
	}
	return true
}

// Load reads and validates the configuration. All problems are reported
// together, each with the name of its variable.
func Load(getenv Getenv) (Config, error) {
	var c Config
	l := newLoader(getenv)
	for _, o := range Options() {
		l.read(&c, o)
	}
	c.check(l)
	return c, errors.Join(l.errs...)
}

// check applies the rules that tie several options together, and derives
// the settings that follow from others.
func (c *Config) check(l *loader) {
	if l.ok("LISTEN_ADDR", "BASE_URL") && l.set["LISTEN_ADDR"] && l.set["BASE_URL"] {
		_, listenPort, _ := splitHostPort(c.ListenAddr)
		baseU, _ := url.Parse(c.BaseURL)
		if listenPort != "0" && urlPort(baseU) != listenPort {
			w := fmt.Sprintf("LISTEN_ADDR %s listens on port %s but BASE_URL %s is on port %s: right only behind a reverse proxy that forwards %s to this address; otherwise leave BASE_URL unset (it is derived from LISTEN_ADDR) or make the ports agree",
				c.ListenAddr, listenPort, c.BaseURL, urlPort(baseU), c.BaseURL)
			if c.Gateway == GatewaySandbox {
				w += " (the built-in sandbox bank is called at BASE_URL/sandbank: top-ups fail when nothing answers there)"
			}
			c.Warnings = append(c.Warnings, w)
		}
	}
	if c.DatabaseReadURL != "" && l.ok("DATABASE_URL", "DATABASE_READ_URL") {
		if d, _, _ := dburl.Parse(c.DatabaseURL); d != dburl.Postgres {
			l.bad("DATABASE_READ_URL", "needs DATABASE_URL on PostgreSQL: SQLite is one process with no replicas (unset DATABASE_READ_URL)")
		}
	}
	if g := strings.TrimSpace(l.getenv("GATEWAY")); g != "" && l.set["GATEWAYS"] && l.ok("GATEWAY", "GATEWAYS") {
		if old, _ := parseGateways(g); strings.Join(old, ",") != c.Gateway && !(g == GatewaySandbox && c.Gateway == GatewaySandbox) {
			l.bad("GATEWAYS", "GATEWAY=%s (its older name) says otherwise: unset GATEWAY", g)
		}
	}
	// The amount rules, with the gateways' own minimums as the floor (a
	// top-up may go to any of them).
	floor := int64(10_000)
	for i, name := range c.Gateways {
		if drv, ok := drivers.Lookup(name); ok && (i == 0 || drv.Capabilities.MinAmountRials > floor) {
			floor = drv.Capabilities.MinAmountRials
		}
	}
	if l.ok("TOPUP_MIN_RIALS", "TOPUP_MAX_RIALS") {
		for _, e := range c.TopUpLimits().Validate(floor) {
			if e.Max {
				l.bad("TOPUP_MAX_RIALS", "%s", e.Msg)
			} else {
				l.bad("TOPUP_MIN_RIALS", "%s", e.Msg)
			}
		}
	}
	// Transfers are shown and typed in tomans: a limit of a fraction of a
	// toman could be neither shown nor typed (a minimum of 1,500.5
	// tomans refuses 1,500), and a daily maximum below the minimum refuses
	// every transfer.
	if l.ok("TRANSFER_MIN_RIALS") && c.TransferMinRials%money.RialsPerToman != 0 {
		l.bad("TRANSFER_MIN_RIALS", "must be whole tomans (a multiple of %d rials), got %d", money.RialsPerToman, c.TransferMinRials)
	}
	if l.ok("TRANSFER_DAILY_MAX_RIALS") && c.TransferDailyMaxRials%money.RialsPerToman != 0 {
		l.bad("TRANSFER_DAILY_MAX_RIALS", "must be whole tomans (a multiple of %d rials), or 0, got %d", money.RialsPerToman, c.TransferDailyMaxRials)
	}
	if l.ok("TRANSFER_MIN_RIALS", "TRANSFER_DAILY_MAX_RIALS") && c.TransferDailyMaxRials > 0 && c.TransferDailyMaxRials < c.TransferMinRials {
		l.bad("TRANSFER_DAILY_MAX_RIALS", "must not be below TRANSFER_MIN_RIALS (%d), or 0 for no limit, got %d", c.TransferMinRials, c.TransferDailyMaxRials)
	}
	if l.ok("GATEWAY_BUDGET", "GATEWAY_ATTEMPT_TIMEOUT") && c.Budget < c.AttemptTimeout {
		l.bad("GATEWAY_BUDGET", "must not be shorter than GATEWAY_ATTEMPT_TIMEOUT")
	}
	if l.ok("GATEWAY_BUDGET", "GATEWAY_REQUEST_TIMEOUT") && c.RequestTimeout > c.Budget {
		l.bad("GATEWAY_REQUEST_TIMEOUT", "must not be longer than GATEWAY_BUDGET (%v), got %v", c.Budget, c.RequestTimeout)
	}
	if l.ok("WORKER_BACKOFF_BASE", "WORKER_BACKOFF_MAX") && c.WorkerBackoffMax < c.WorkerBackoffBase {
		l.bad("WORKER_BACKOFF_MAX", "must not be shorter than WORKER_BACKOFF_BASE")
	}
	if l.ok("WEBHOOK_BACKOFF_BASE", "WEBHOOK_BACKOFF_MAX") && c.WebhookBackoffMax < c.WebhookBackoffBase {
		l.bad("WEBHOOK_BACKOFF_MAX", "must not be shorter than WEBHOOK_BACKOFF_BASE")
	}
	if l.ok("WORKER_STALE_CREATED", "GATEWAY_BUDGET") && c.WorkerStaleCreated <= c.Budget {
		l.bad("WORKER_STALE_CREATED", "must be longer than GATEWAY_BUDGET (a submit may still be talking to the bank)")
	}
	if l.ok("CARD_REFUND_NOT_DONE_AFTER", "GATEWAY_BUDGET") && c.CardRefundNotDoneAfter <= 2*c.Budget {
		l.bad("CARD_REFUND_NOT_DONE_AFTER", "must be longer than twice GATEWAY_BUDGET (a lost refund call may still be landing at the bank)")
	}
	if l.ok("WORKER_ABANDONED_AFTER", "WORKER_AUTHORITY_LIFETIME") && c.WorkerAbandonedAfter >= c.WorkerAuthorityLifetime {
		l.bad("WORKER_ABANDONED_AFTER", "must be shorter than WORKER_AUTHORITY_LIFETIME")
	}
	if c.RetentionThrottles > 0 && c.RetentionThrottles < 24*time.Hour {
		l.bad("RETENTION_THROTTLES", "must be at least 24h (a throttle remembers a key that long; deleting it sooner would lift a lock-out), or off")
	}
	if c.RetentionGatewayCalls > 0 && c.RetentionGatewayCalls < 24*time.Hour {
		l.bad("RETENTION_GATEWAY_CALLS", "must be at least 24h, or off")
	}
	if c.RetentionMail > 0 && c.RetentionMail < 24*time.Hour {
		l.bad("RETENTION_MAIL", "must be at least 24h, or off")
	}
	if c.SMTPURL == "" && !c.Dev {
		c.Warnings = append(c.Warnings, "SMTP_URL is not set: mail (password reset links, receipts) is only written into "+
			filepath.Join(c.DataDir, "mail")+" and nobody receives it")
	}
	c.checkSettingPairs(l)
	c.Warnings = append(c.Warnings, unusedGatewaySettings(c, l)...)
	c.Warnings = append(c.Warnings, unreachableReturn(c)...)
	c.Warnings = append(c.Warnings, loopbackHooksLive(c)...)
	c.checkPayouts(l)
	if c.Gateway != GatewaySandbox && !c.Operator.HasSupport() {
		c.Warnings = append(c.Warnings, "no support contact is set (SUPPORT_EMAIL, SUPPORT_PHONE or SUPPORT_URL): payers told to \"contact support\" on failure pages and in mails have no way to")
	}
	if l.ok("IDEMPOTENCY_KEY_TTL") && c.IdempotencyKeyTTL < time.Minute {
		l.bad("IDEMPOTENCY_KEY_TTL", "must be at least 1m (clients retry with the same key within it; 24h or more is usual)")
	}

	if c.Gateway == GatewaySandbox {
		c.GatewaySettings = gateway.Settings{}
		for _, name := range c.Gateways {
			if drv, ok := drivers.Lookup(name); ok && drv.Sandbox.Settings != nil {
				maps.Copy(c.GatewaySettings, drv.Sandbox.Settings(c.BaseURL+routes.Sandbank))
			}
		}
		// The sandbox bank moves no money and lets anyone press "Pay": it
		// never runs where a real payer could reach it. That is decided
		// from everything serve knows, whatever else is set: a public
		// BASE_URL, a listener on the network, a reverse proxy in front
		// (TRUSTED_PROXIES: even on loopback, the proxy brings the
		// network), or a production secret (SESSION_SECRET: a deployment,
		// not a developer's `make run`). Any one of them refuses it.
		if !c.AllowSandbox && l.ok("GATEWAYS", "GATEWAY") {
			for _, why := range sandboxReachable(c, l) {
				l.bad("GATEWAYS", "the sandbox bank credits wallets without real money and never runs where a real payer could reach it: %s; set GATEWAYS to real gateways (%s), or ALLOW_SANDBOX=1 for a demo", why, strings.Join(drivers.Names(), ", "))
			}
		}
	}
}

// unreachableReturn warns of a BASE_URL that a real bank's payers cannot
// come back to: a gateway whose API is not on this machine (a bank, not
// a standalone sandbox) sends each payer's browser to BASE_URL's
// callback after paying. On this machine's address, the payer lands on
// their own computer, and the credit waits for the worker or
// reconciliation; over plain http, the cookies lose their Secure flag.
func unreachableReturn(c *Config) []string {
	var real []string
	for _, name := range c.Gateways {
		if u := c.GatewayURLOf(name); u != "" && !loopbackURL(u) {
			real = append(real, name)
		}
	}
	if len(real) == 0 || c.BaseURL == "" {
		return nil
	}
	switch {
	case loopbackURL(c.BaseURL):
		return []string{fmt.Sprintf("BASE_URL %s is this machine, but %s sends payers back to it from the bank: set BASE_URL to the site's public https address",
			c.BaseURL, strings.Join(real, ", "))}
	case strings.HasPrefix(strings.ToLower(c.BaseURL), "http://"):
		return []string{fmt.Sprintf("BASE_URL %s is plain http with %s: payers come back from the bank without TLS, and cookies lose their Secure flag; use https",
			c.BaseURL, strings.Join(real, ", "))}
	}
	return nil
}

// loopbackHooksLive warns of WEBHOOK_ALLOW_LOOPBACK with a real bank:
// any partner may then point its webhooks at this machine's own
// services (another instance, a profiler, a database's HTTP port).
func loopbackHooksLive(c *Config) []string {
	if !c.WebhookAllowLoopback || c.Gateway == GatewaySandbox {
		return nil
	}
	return []string{"WEBHOOK_ALLOW_LOOPBACK=1 with a real gateway: partners may point webhooks and return addresses at this machine's own services; it is for development and tests only"}
}

// checkSettingPairs refuses a gateway's setting set without the one it
// goes with (gateway.Setting.With), naming both: the driver would refuse
// them only when serve builds it, after migrating, with neither name.
func (c *Config) checkSettingPairs(l *loader) {
	for _, name := range c.Gateways {
		d, ok := drivers.Lookup(name)
		if !ok {
			continue
		}
		for _, st := range d.Settings {
			if st.With == "" || !l.ok(st.Env, st.With) {
				continue
			}
			if c.GatewaySettings[st.Env] != "" && c.GatewaySettings[st.With] == "" {
				l.bad(st.With, "must be set with %s (set both, or neither)", st.Env)
			}
		}
	}
}

// unusedGatewaySettings warns of a gateway's variables set while GATEWAYS
// does not name that gateway (or is the sandbox bank): they are not read,
// which is a typo in GATEWAYS or a leftover. Names only, never values
// (some are secrets).
func unusedGatewaySettings(c *Config, l *loader) []string {
	var out []string
	for _, d := range drivers.All() {
		if c.enabled(d.Name) {
			continue
		}
		var set []string
		for _, st := range d.Settings {
			if l.set[st.Env] {
				set = append(set, st.Env)
			}
		}
		if len(set) == 0 {
			continue
		}
		why := "GATEWAYS does not name " + d.Name
		if c.Gateway == GatewaySandbox {
			why = "GATEWAYS=" + GatewaySandbox + " uses the built-in sandbox bank"
		}
		out = append(out, fmt.Sprintf("%s set, but %s: not used", strings.Join(set, ", "), why))
	}
	return out
}

// ServeRefusal says why serve must not start with this configuration: a
// real gateway without SESSION_SECRET. The development secret that
// Kifpool keeps in DATA_DIR/session_secret does not count, even one an
// operator wrote there: any development start creates that file by
// itself, so it cannot be told from one made on purpose, and each host
// would keep its own, while every instance behind a load balancer needs
// the same secret (CSRF tokens, idempotency fingerprints). With the
// sandbox bank (no real money) the development secret is allowed.
func (c Config) ServeRefusal() error {
	if c.Dev && c.Gateway != GatewaySandbox {
		return fmt.Errorf("SESSION_SECRET: required to serve with GATEWAYS=%s (real money): set at least 32 random characters, the same on every instance (openssl rand -base64 32); the development secret in DATA_DIR/session_secret is used only with GATEWAYS=%s", c.Gateway, GatewaySandbox)
	}
	return nil
}

// checkSecret refuses secrets that are short, have little variety, or
// are still the example's placeholder (deploy/kifpool.env.example).
func checkSecret(s string) error {
	if k := strings.ToLower(s); strings.Contains(k, "change-me") || strings.Contains(k, "changeme") {
		return fmt.Errorf("still the example's placeholder: set a random value (e.g. openssl rand -base64 32)")
	}
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

// sandboxReachable lists why a payer could reach the built-in sandbox
// bank (none: only this machine's developer can).
func sandboxReachable(c *Config, l *loader) []string {
	var why []string
	if l.ok("BASE_URL") && !loopbackURL(c.BaseURL) {
		why = append(why, fmt.Sprintf("BASE_URL %s is not this machine", c.BaseURL))
	}
	if listenHost, _, err := splitHostPort(c.ListenAddr); l.ok("LISTEN_ADDR") && err == nil && !loopbackHost(listenHost) {
		why = append(why, fmt.Sprintf("LISTEN_ADDR %q listens beyond this machine (use 127.0.0.1:PORT, localhost:PORT or [::1]:PORT)", c.ListenAddr))
	}
	if l.set["TRUSTED_PROXIES"] {
		why = append(why, "TRUSTED_PROXIES is set: a reverse proxy brings the network to it")
	}
	if l.set["SESSION_SECRET"] {
		why = append(why, "SESSION_SECRET is set: this is a deployment, not a developer's machine")
	}
	return why
}

// dnsLocalhost reports a name under .localhost other than localhost
// itself (app.localhost): RFC 6761 asks resolvers to answer loopback for
// them, but Go's resolver and many systems send them to DNS, which may
// answer with any address.
func dnsLocalhost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
	return strings.HasSuffix(h, ".localhost")
}

func dnsLocalhostError(h string) error {
	return fmt.Errorf("%q is resolved through DNS here and may be any address: use localhost, 127.0.0.1 or [::1] for this machine, or the real host name", h)
}

// DefaultSQLiteFile is the zero-setup database's file name in DATA_DIR.
const DefaultSQLiteFile = "kifpool.db"

// PrepareDataDir narrows an existing DATA_DIR that other users may read or
// enter (it holds the development secret and the SQLite file) to 0700, and
// says so; when it cannot (another owner, a read-only mount), it returns a
// warning instead. A missing folder is left for its first user to create
// (mode 0700).
func PrepareDataDir(dir string) (warning string, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("DATA_DIR %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("DATA_DIR %s is not a folder", dir)
	}
	mode := fi.Mode().Perm()
	if mode&0o077 == 0 {
		return "", nil
	}
	if err := os.Chmod(dir, 0o700); err != nil { // #nosec G302 -- a folder: 0700 is owner-only
		return fmt.Sprintf("DATA_DIR %s can be read by other users (mode %04o) and could not be narrowed to 0700 (%v): the development secret and the SQLite file in it are exposed; chmod 700 it", dir, mode, err), nil
	}
	return fmt.Sprintf("DATA_DIR %s could be read by other users (mode %04o): narrowed to 0700", dir, mode), nil
}

// loopbackURL reports whether the URL's host is this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return loopbackHost(u.Hostname())
}

// LoopbackListen reports whether a listen address (HOST:PORT) reaches
// this machine only (loopbackHost): the rule the sandbox bank is held to,
// built in or standalone, unless ALLOW_SANDBOX=1.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

// loopbackHost reports whether a host name or address (IPv6 with or
// without brackets) is this machine only. "" (every interface) is not.
func loopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
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
