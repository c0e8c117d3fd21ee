package config

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/dburl"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/logging"
)

// Option is one environment variable: its name, default, parser, doc and
// whether it is a secret. Loading, the messages about bad values, the
// configuration reference (docs/configuration.md) and `kifpool config`
// all come from the table of options (Options).
type Option struct {
	Name  string
	Group string
	// Default is the value used when the variable is unset or blank, as
	// it would be written in the environment ("" when there is none).
	Default string
	// DefaultDoc describes a default that depends on other variables
	// (then Default is what applies when they are unset too).
	DefaultDoc string
	Doc        string
	// Secret values are never printed (`kifpool config` masks them).
	Secret bool
	p      parser
	// dynamic computes the default from the options read before this one.
	dynamic func(c *Config, getenv Getenv) string
	// driver names the gateway driver that declared the option ("" for
	// Kifpool's own).
	driver string
}

// Accepts says what values the option takes, for people.
func (o Option) Accepts() string { return o.p.accepts }

// parser turns a variable's text into a field of Config, and the field
// back into text (for `kifpool config`).
type parser struct {
	accepts string
	// set parses raw (trimmed, the default applied) into c; an error is
	// reported with the variable's name.
	set  func(c *Config, raw string) error
	show func(c Config) string
}

// Groups of the reference, in order.
const (
	groupServer    = "Server and database"
	groupGateway   = "Gateway"
	groupBank      = "Bank calls and the circuit breaker"
	groupWorker    = "Worker and reconciliation"
	groupLimits    = "Amounts and limits"
	groupRetention = "Retention"
	groupSecurity  = "Security and observability"
	groupOperator  = "Operator and support"
)

// Options is the table of every variable Kifpool reads, in the order
// they are read (a default may depend on variables above it): Kifpool's
// own, with each gateway driver's settings (declared by the driver,
// internal/gateway/drivers) after GATEWAYS.
func Options() []Option {
	own := ownOptions()
	for i, o := range own {
		if o.Name == "GATEWAYS" {
			return slices.Concat(own[:i+1], driverOptions(), own[i+1:], payoutOptions())
		}
	}
	panic("config: no GATEWAYS option")
}

// driverGroup is the reference's section of a driver's settings.
func driverGroup(d gateway.Driver) string {
	return fmt.Sprintf("Gateway: %s (`%s` in `GATEWAYS`)", d.Label, d.Name)
}

// enabled reports whether GATEWAYS names the driver (a real gateway, not
// the sandbox bank).
func (c *Config) enabled(name string) bool {
	return c.Gateway != GatewaySandbox && slices.Contains(c.Gateways, name)
}

// driverOptions are the registered drivers' settings as options: read
// only when GATEWAYS names their driver (with GATEWAYS=sandbox the driver
// gets the sandbox bank's settings instead).
func driverOptions() []Option {
	var out []Option
	for _, d := range drivers.All() {
		for _, st := range d.Settings {
			o := Option{Name: st.Env, Group: driverGroup(d), Default: st.Default, Secret: st.Secret, driver: d.Name,
				Doc: st.Doc + "; read only when `GATEWAYS` names `" + d.Name + "`"}
			if st.Required {
				o.DefaultDoc = "*(unset)*: required when `GATEWAYS` names `" + d.Name + "`"
			}
			o.p = parser{accepts: "see its meaning",
				set: func(c *Config, v string) error {
					if !c.enabled(d.Name) {
						return nil
					}
					if c.GatewaySettings == nil {
						c.GatewaySettings = gateway.Settings{}
					}
					delete(c.GatewaySettings, st.Env)
					if v == "" {
						if st.Required {
							return fmt.Errorf("required when GATEWAYS names %s: %s", d.Name, st.Doc)
						}
						return nil
					}
					norm, err := st.Check(v)
					if err != nil {
						return err
					}
					c.GatewaySettings[st.Env] = norm
					return nil
				},
				show: func(c Config) string {
					if !slices.Contains(c.Gateways, d.Name) {
						return ""
					}
					return c.GatewaySettings[st.Env]
				}}
			out = append(out, o)
		}
	}
	return out
}

// ownOptions are Kifpool's own variables.
func ownOptions() []Option {
	return []Option{
		{Name: "DATABASE_URL", Group: groupServer, Default: "sqlite:" + dburl.DefaultSQLitePath,
			DefaultDoc: "`sqlite:DATA_DIR/kifpool.db` when `DATA_DIR` is set, else `sqlite:" + dburl.DefaultSQLitePath + "`",
			dynamic: func(_ *Config, getenv Getenv) string {
				if dir := strings.TrimSpace(getenv("DATA_DIR")); dir != "" {
					return "sqlite:" + filepath.Join(dir, DefaultSQLiteFile)
				}
				return "sqlite:" + dburl.DefaultSQLitePath
			},
			Doc: "`sqlite:PATH` for an SQLite file, `postgres://user@host:5432/db?sslmode=…` for PostgreSQL (production, several instances); a new SQLite file is created mode 0600; `kifpool config` shows it without its password",
			p: parser{accepts: "`sqlite:PATH` or `postgres://…`",
				set: func(c *Config, v string) error {
					if _, _, err := dburl.Parse(v); err != nil {
						return err
					}
					c.DatabaseURL = v
					return nil
				},
				show: func(c Config) string { return dburl.Redacted(c.DatabaseURL) }}},
		{Name: "DATABASE_READ_URL", Group: groupServer,
			DefaultDoc: "unset: every read on `DATABASE_URL`",
			Doc:        "a second PostgreSQL (`postgres://…`, usually a streaming replica of `DATABASE_URL`) that the pages' reads go to: the admin console's lists, searches, dashboard and CSV, people, the payer's top-up list, CSV and wallet history, the API's lists of top-ups and of the wallet's history; what must be fresh (a use case's reads before it writes, a receipt right after its move, one top-up, sessions, idempotency records, balances and limits) stays on `DATABASE_URL`; checked every 5 s, and while it does not answer its reads go to `DATABASE_URL`; the dashboard shows its lag; refused with SQLite (one process, no replicas); opens up to `DATABASE_MAX_CONNS` connections of its own; `kifpool config` shows it without its password",
			p: parser{accepts: "`postgres://…` or unset",
				set: func(c *Config, v string) error {
					if v == "" {
						c.DatabaseReadURL = ""
						return nil
					}
					d, _, err := dburl.Parse(v)
					if err != nil {
						return err
					}
					if d != dburl.Postgres {
						return fmt.Errorf("SQLite has no read replicas: a read URL is postgres://… (or leave it unset)")
					}
					c.DatabaseReadURL = v
					return nil
				},
				show: func(c Config) string { return dburl.Redacted(c.DatabaseReadURL) }}},
		{Name: "DATABASE_READ_MAX_LAG", Group: groupServer, Default: "30s",
			Doc: "a read database (`DATABASE_READ_URL`) found more than this far behind the primary at its check (how long ago the primary had written WAL that the replica has still not replayed, as this instance's checks saw the primary's position) sends the pages' reads to `DATABASE_URL` until a check finds it within it again; the dashboard says so; `off`: the reads stay on it however far behind",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.DatabaseReadMaxLag })},
		{Name: "DATABASE_MAX_CONNS", Group: groupServer, Default: "0",
			DefaultDoc: "`0`: 4 per CPU, at least 8, at most 20",
			Doc:        "PostgreSQL connections one instance opens at most (and keeps idle); N instances open up to N × this, which must stay under the server's `max_connections` (100 by default); idle ones are closed after 5 minutes",
			p:          intField(0, 1000, func(c *Config) *int { return &c.DatabaseMaxConns })},
		{Name: "DATA_DIR", Group: groupServer, Default: "./data",
			Doc: "where the development session secret (`DATA_DIR/session_secret`, only without `SESSION_SECRET`) and the default SQLite file (`DATA_DIR/kifpool.db`, when `DATABASE_URL` is unset) and the built-in sandbox bank's payments (`DATA_DIR/sandbank.json`, so that a restart keeps those still open) live; the folder is created mode 0700, the secret and a new SQLite file 0600; an existing folder that other users can read is narrowed to 0700 at start (a warning says so, or that it could not be)",
			p:   stringField("a folder", func(c *Config) *string { return &c.DataDir })},
		{Name: "GATEWAY", Group: groupGateway,
			Doc: "the older name of `GATEWAYS`, for one gateway: still read, and used when `GATEWAYS` is unset; both set to different values is refused",
			p: parser{accepts: "`" + strings.Join(drivers.GatewayValues(), "`, `") + "`",
				set: func(c *Config, v string) error {
					c.gatewayAlias = v
					if v == "" {
						return nil
					}
					_, err := parseGateways(v)
					return err
				},
				show: func(c Config) string { return c.gatewayAlias }}},
		{Name: "GATEWAYS", Group: groupGateway, Default: GatewaySandbox,
			DefaultDoc: "`GATEWAY` when that is set, else `sandbox`",
			dynamic: func(_ *Config, getenv Getenv) string {
				if v := strings.TrimSpace(getenv("GATEWAY")); v != "" {
					if _, err := parseGateways(v); err == nil {
						return v
					}
				}
				return GatewaySandbox
			},
			Doc: "the gateways payers may pay through, in the order they are offered (the first healthy one is preselected, and a top-up whose gateway is down goes to the next healthy one): driver names separated by commas (`zarinpal,zibal`), each with its own variables below; `sandbox`: every gateway the built-in sandbox bank under `BASE_URL/sandbank` imitates (no real money)",
			p: parser{accepts: "`sandbox`, or a comma-separated list of `" + strings.Join(drivers.Names(), "`, `") + "`",
				set: func(c *Config, v string) error {
					names, err := parseGateways(v)
					if err != nil {
						return err
					}
					c.Gateway, c.Gateways = strings.Join(names, ","), names
					if v == GatewaySandbox {
						c.Gateway, c.Gateways = GatewaySandbox, drivers.SandboxNames()
					}
					c.Driver = ""
					if len(c.Gateways) > 0 {
						c.Driver = c.Gateways[0]
					}
					return nil
				},
				show: func(c Config) string { return c.Gateway }}},
		{Name: "LISTEN_ADDR", Group: groupServer, Default: "127.0.0.1:8080",
			DefaultDoc: "`127.0.0.1:8080` with the sandbox bank (this machine only), `:8080` with a real gateway",
			Doc:        "where the HTTP server listens",
			dynamic: func(c *Config, _ Getenv) string {
				if c.Gateway == GatewaySandbox {
					return "127.0.0.1:8080"
				}
				return ":8080"
			},
			p: parser{accepts: "`HOST:PORT` or `:PORT`",
				set: func(c *Config, v string) error {
					c.ListenAddr = v
					host, port, err := splitHostPort(v)
					if err != nil || port == "" || !validPort(port) {
						return fmt.Errorf("want HOST:PORT or :PORT, got %q", v)
					}
					if dnsLocalhost(host) {
						return dnsLocalhostError(host)
					}
					return nil
				},
				show: func(c Config) string { return c.ListenAddr }}},
		{Name: "BASE_URL", Group: groupServer, Default: "http://localhost:8080",
			DefaultDoc: "derived from `LISTEN_ADDR` when that is set (`http://127.0.0.1:18085` for `127.0.0.1:18085`; every interface is `localhost`), else `http://localhost:8080`",
			Doc:        "public URL of the app: callback URLs, the built-in bank's address; `https://` turns on Secure cookies and HSTS. Requests for another host are redirected to it (see docs/operations.md). When both this and `LISTEN_ADDR` are set and their ports differ, `serve` warns at start (right only behind a reverse proxy)",
			dynamic: func(c *Config, getenv Getenv) string {
				if strings.TrimSpace(getenv("LISTEN_ADDR")) != "" {
					if host, port, err := splitHostPort(c.ListenAddr); err == nil && port != "" && validPort(port) {
						return baseURLFor(host, port)
					}
				}
				return "http://localhost:8080"
			},
			p: parser{accepts: "an absolute `http(s)://` URL without a path",
				set: func(c *Config, v string) error {
					v = strings.TrimRight(v, "/")
					c.BaseURL = v
					u, err := url.Parse(v)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || strings.ContainsAny(v, "?#") {
						return fmt.Errorf("want an absolute http(s) URL without a path, got %q", v)
					}
					if dnsLocalhost(u.Hostname()) {
						return dnsLocalhostError(u.Hostname())
					}
					return nil
				},
				show: func(c Config) string { return c.BaseURL }}},
		{Name: "SESSION_SECRET", Group: groupSecurity, Secret: true,
			DefaultDoc: "unset: a development secret, generated once into `DATA_DIR/session_secret`, and `serve` says so at start; with a real gateway `serve` refuses to start without it (a file in `DATA_DIR` does not count: see SECURITY.md)",
			Doc:        "key of the CSRF tokens, of the idempotency keys' fingerprints and of the encryption of webhook signing secrets (changing it makes stored signing secrets unreadable), the same on every instance; at least 32 random characters (`openssl rand -base64 32`); weak values are refused",
			p: parser{accepts: "at least 32 random characters",
				set: func(c *Config, v string) error {
					if v == "" {
						c.Dev, c.SessionSecret = true, nil
						return nil
					}
					c.Dev, c.SessionSecret = false, []byte(v)
					return checkSecret(v)
				},
				show: func(c Config) string { return string(c.SessionSecret) }}},
		{Name: "ALLOW_SANDBOX", Group: groupGateway,
			Doc: "the sandbox bank credits wallets without real money, so it never runs where a real payer could reach it: it is refused when any of these holds — `BASE_URL` is not a loopback address (`localhost`, `127.0.0.1`, `[::1]`), `LISTEN_ADDR` listens beyond this machine (`:8080`, `0.0.0.0:8080`), `TRUSTED_PROXIES` is set (a reverse proxy brings the network), `SESSION_SECRET` is set (a deployment, not a developer's machine); the standalone `kifpool sandbank` likewise refuses an `--addr` that is not loopback; `1` allows either anyway, for a public demo",
			p: parser{accepts: "`1` or unset",
				set: func(c *Config, v string) error {
					c.AllowSandbox = v == "1"
					return nil
				},
				show: func(c Config) string {
					if c.AllowSandbox {
						return "1"
					}
					return ""
				}}},
		{Name: "TOPUP_MIN_RIALS", Group: groupLimits, Default: "10000",
			Doc: "smallest top-up (Zarinpal's minimum is 10,000 rials); whole tomans",
			p:   rialsField(func(c *Config) *int64 { return &c.TopUpMinRials })},
		{Name: "TOPUP_MAX_RIALS", Group: groupLimits, Default: "1000000000",
			Doc: "largest top-up; whole tomans",
			p:   rialsField(func(c *Config) *int64 { return &c.TopUpMaxRials })},
		{Name: "GATEWAY_ATTEMPT_TIMEOUT", Group: groupBank, Default: "3s",
			Doc: "time-out of one attempt of a retried call to the bank (verify, inquiry, unverified list)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.AttemptTimeout })},
		{Name: "GATEWAY_BUDGET", Group: groupBank, Default: "12s",
			Doc: "total time of one bank operation, retries included: no page waits longer; not shorter than `GATEWAY_ATTEMPT_TIMEOUT`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.Budget })},
		{Name: "GATEWAY_REQUEST_TIMEOUT", Group: groupBank, Default: "10s",
			DefaultDoc: "`10s`, cut to `GATEWAY_BUDGET` when that is shorter",
			Doc:        "time-out of the call that starts a top-up at the bank (one attempt, never retried); must not exceed `GATEWAY_BUDGET`",
			dynamic: func(c *Config, _ Getenv) string {
				return formatDuration(min(10*time.Second, c.Budget))
			},
			p: durationField(0, func(c *Config) *time.Duration { return &c.RequestTimeout })},
		{Name: "BREAKER_MIN_REQUESTS", Group: groupBank, Default: "10",
			Doc: "calls in the window before the circuit breaker may open",
			p:   uint32Field(1, 1_000_000, func(c *Config) *uint32 { return &c.BreakerMinRequests })},
		{Name: "BREAKER_FAILURE_PERCENT", Group: groupBank, Default: "50",
			Doc: "share of failed calls (time-outs, network errors, 408/429/5xx) that opens it",
			p:   uint32Field(1, 100, func(c *Config) *uint32 { return &c.BreakerFailurePercent })},
		{Name: "BREAKER_WINDOW", Group: groupBank, Default: "30s",
			Doc: "rolling window the breaker counts over",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.BreakerWindow })},
		{Name: "BREAKER_OPEN_TIMEOUT", Group: groupBank, Default: "20s",
			Doc: "how long it stays open before one probe call is let through",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.BreakerOpenTimeout })},
		{Name: "WORKER_INTERVAL", Group: groupWorker, Default: "2s",
			Doc: "how often the worker looks for top-ups to resolve; the withdrawals' worker (sending approved withdrawals to their provider and asking about them) and the card refunds' worker run at the same pace, so `off` stops all three: only for an instance that must not talk to banks, never on every instance",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.WorkerInterval })},
		{Name: "WORKER_CONCURRENCY", Group: groupWorker, Default: "4",
			Doc: "top-ups a worker resolves at once",
			p:   intField(1, 256, func(c *Config) *int { return &c.WorkerConcurrency })},
		{Name: "WORKER_ABANDONED_AFTER", Group: groupWorker, Default: "2m",
			Doc: "an unreturned top-up (window closed, callback lost) is checked after this; shorter than `WORKER_AUTHORITY_LIFETIME`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerAbandonedAfter })},
		{Name: "WORKER_AUTHORITY_LIFETIME", Group: groupWorker, Default: "20m",
			Doc: "a top-up the bank still calls unpaid after this is `failed`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerAuthorityLifetime })},
		{Name: "WORKER_MAX_UNKNOWN", Group: groupWorker, Default: "2h",
			Doc: "a top-up whose outcome is still unknown after this goes to `needs_review`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerMaxUnknown })},
		{Name: "WORKER_BACKOFF_BASE", Group: groupWorker, Default: "10s",
			Doc: "first delay between two checks of the same top-up (doubles, with jitter)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerBackoffBase })},
		{Name: "WORKER_BACKOFF_MAX", Group: groupWorker, Default: "2m",
			Doc: "longest delay between two checks of the same top-up; not shorter than `WORKER_BACKOFF_BASE`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerBackoffMax })},
		{Name: "PENDING_RECHECK_AFTER", Group: groupWorker, Default: "20s",
			Doc: "after an unknown outcome, the bank is asked again no sooner than this (page reloads included)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.PendingRecheckAfter })},
		{Name: "HTTP_READ_TIMEOUT", Group: groupServer, Default: "30s",
			Doc: "longest time to read one request, headers and body, counted from its start: a slower client (a slowloris, a stalled upload) is answered `408` and disconnected. Request bodies are limited to 64 KiB (`413`, refused from the declared length before the body is read); writing an answer is bounded to 60 s and an idle keep-alive connection to 90 s",
			p:   durationField(10*time.Minute, func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
		{Name: "WORKER_STALE_CREATED", Group: groupWorker, Default: "1m",
			Doc: "a top-up whose submit died before the bank answered (no authority) is `failed`; longer than `GATEWAY_BUDGET`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WorkerStaleCreated })},
		{Name: "CARD_REFUND_NOT_DONE_AFTER", Group: groupWorker, Default: "24h",
			Doc: "a card refund whose answer never came (a time-out, a crash mid-call) is believed not made when the bank's record still lacks it this long after the call was sent, and its money goes back to the wallet; Zarinpal's refund takes no idempotency key, and whether its record counts a refund it has accepted but not yet paid is not documented, so it must exceed the longest a lost call may still land at the bank and a refund may stay queued there (a day: the money of such a refund stays held meanwhile)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.CardRefundNotDoneAfter })},
		{Name: "METRICS_TOKEN", Group: groupSecurity, Secret: true,
			DefaultDoc: "unset: `/metrics` is off",
			Doc:        "bearer token for `GET /metrics` (Prometheus), accepted only as `Authorization: Bearer <token>` (the scheme in any case); as strong as `SESSION_SECRET`: at least 32 characters, 10 distinct",
			p: parser{accepts: "at least 32 random characters",
				set: func(c *Config, v string) error {
					c.MetricsToken = v
					if v == "" {
						return nil
					}
					// It opens /metrics to whoever holds it: as strong as a secret.
					if err := checkSecret(v); err != nil {
						c.MetricsToken = ""
						return err
					}
					return nil
				},
				show: func(c Config) string { return c.MetricsToken }}},
		{Name: "RATE_LIMIT_SIGNIN", Group: groupLimits, Default: "20",
			Doc: "sign-in attempts (and password reset submits) per minute per client address (an IPv6 client is its /64); above it the page says how many seconds to wait, with `Retry-After`; `0` turns the limit off (load runs only)",
			p:   perMinuteField(func(c *Config) *int { return &c.RateLimitSignIn })},
		{Name: "RATE_LIMIT_TOPUP", Group: groupLimits, Default: "30",
			Doc: "top-ups per minute per user, through the form and the API together (every token of the user shares it); replays of one form (a double click: the same form token) do not count; past it the form answers 429 with the form again as typed and the seconds to wait (its token unspent), the API 429 `rate_limited`; `0` turns the limit off (load runs only)",
			p:   perMinuteField(func(c *Config) *int { return &c.RateLimitTopUp })},
		{Name: "RATE_LIMIT_UNKNOWN_RECIPIENTS", Group: groupLimits, Default: "20",
			Doc: "transfers refused because the recipient's address has no account, per user and hour, through the page and the API together; past it the user's transfers are answered `429` with `Retry-After` (the page says how long to wait) before any address is looked up, so that whether an address has an account cannot be asked again and again; `0` turns the limit off",
			p:   intField(0, 1_000_000, func(c *Config) *int { return &c.RateLimitUnknownRecipients })},
		{Name: "RATE_LIMIT_TRANSFERS", Group: groupLimits, Default: "30",
			Doc: "transfers made per sender and minute, through the page and the API together; past it a new transfer is answered `429` with `Retry-After` (the page says how long to wait) and nothing is written, while a repeat of one made (the same form or `Idempotency-Key`) is still answered with it; it keeps one account from flooding receipts and partners' webhooks with transfers bounced back and forth; `0` turns the limit off",
			p:   intField(0, 1_000_000, func(c *Config) *int { return &c.RateLimitTransfers })},
		{Name: "RATE_LIMIT_API_AUTH_FAILURES", Group: groupLimits, Default: "60",
			Doc: "API requests refused `401` for an unknown, revoked or expired token (or none), per client address and minute (an IPv6 client is its /64; behind a proxy, `TRUSTED_PROXIES`); past it that address's API requests are answered `429` `rate_limited` with `Retry-After` before any token is looked up, so that guessing tokens costs the database nothing more; a valid token's requests do not count; `0` turns the limit off",
			p:   intField(0, 1_000_000, func(c *Config) *int { return &c.RateLimitAPIAuthFailures })},
		{Name: "RATE_LIMIT_RECIPIENT_PREVIEWS", Group: groupLimits, Default: "60",
			Doc: "transfer confirmation pages that name a recipient (their masked address and name), per user and hour; past it the transfer form answers `429` with how long to wait before any address is looked up, so that the names behind a list of addresses cannot be read off one after another; a form whose transfer was made still answers with its receipt; `0` turns the limit off",
			p:   intField(0, 1_000_000, func(c *Config) *int { return &c.RateLimitRecipientPreviews })},
		{Name: "RATE_LIMIT_SIGNUP", Group: groupLimits, Default: "10",
			Doc: "sign-ups per minute per client address (an IPv6 client is its /64), counted apart from sign-ins; above it the page says how many seconds to wait, with `Retry-After`; `0` turns it off",
			p:   perMinuteField(func(c *Config) *int { return &c.RateLimitSignUp })},
		{Name: "RATE_LIMIT_FORGOT", Group: groupLimits, Default: "10",
			Doc: "\"forgot password\" requests per minute per client address (an IPv6 client is its /64), counted apart from sign-ins and sign-ups, before the database's own throttle per client and per address; above it the form says how many seconds to wait, with `Retry-After`; `0` turns it off",
			p:   perMinuteField(func(c *Config) *int { return &c.RateLimitForgot })},
		{Name: "TOPUP_DAILY_MAX_RIALS", Group: groupLimits, Default: "0",
			Doc: "rials a user may top up per Tehran calendar day (top-ups started that did not fail); the form shows what is left, the API answers `422` `daily_limit_exceeded`; `0` turns it off",
			p:   limitField(func(c *Config) *int64 { return &c.TopUpDailyMaxRials })},
		{Name: "TOPUP_DAILY_MAX_COUNT", Group: groupLimits, Default: "0",
			Doc: "top-ups a user may start per Tehran day (failed ones do not count); `daily_limit_exceeded`; `0` turns it off",
			p:   limitField(func(c *Config) *int64 { return &c.TopUpDailyMaxCount })},
		{Name: "TOPUP_WAITING_MAX_COUNT", Group: groupLimits, Default: "10",
			Doc: "top-ups one user may have waiting for payment at once (started, the payer not yet back from the bank's page; each start asks the bank for a page); past it a new one is refused before the bank is called, on the form with one sentence and in the API with `422` `waiting_limit_exceeded`, until one is paid, canceled at the bank or ends (`WORKER_AUTHORITY_LIFETIME`); a repeat of a submitted form is never refused; `0` turns it off",
			p:   limitField(func(c *Config) *int64 { return &c.TopUpWaitingMaxCount })},
		{Name: "BALANCE_MAX_RIALS", Group: groupLimits, Default: "0",
			Doc: "the most a wallet may hold, top-ups still open included; `balance_limit_exceeded`; `0` turns it off. Limits are checked before a top-up writes anything and never refuse a credit: a top-up the bank already took is credited, and the admin's payment page flags a credit that took the balance over the cap",
			p:   limitField(func(c *Config) *int64 { return &c.BalanceMaxRials })},
		{Name: "TRANSFER_MIN_RIALS", Group: groupLimits, Default: "10000",
			Doc: "smallest transfer between people; whole tomans; always on. The page refuses a smaller one with one sentence, the API answers `422` `amount_too_small`",
			p:   rialsField(func(c *Config) *int64 { return &c.TransferMinRials })},
		{Name: "TRANSFER_DAILY_MAX_RIALS", Group: groupLimits, Default: "0",
			Doc: "rials one person may send to others per Tehran calendar day, enforced in the transfer's write (racing transfers never pass it); the API answers `422` `daily_limit_exceeded`; whole tomans, not below `TRANSFER_MIN_RIALS`; `0` turns it off (nothing is counted while it is off: turned on during a day, it counts that day's transfers from then on)",
			p:   limitField(func(c *Config) *int64 { return &c.TransferDailyMaxRials })},
		{Name: "CHARGE_HOLD_HOURS", Group: groupLimits, Default: "168",
			Doc: "hours a merchant's charge with manual capture holds the payer's money once authorized; not captured by then, the charge expires and the hold is released",
			p:   intField(1, 24*366, func(c *Config) *int { return &c.ChargeHoldHours })},
		{Name: "TRUSTED_PROXIES", Group: groupSecurity,
			Doc: "reverse proxies whose `X-Forwarded-For`/`-Proto`/`-Host` are believed (rate limits, the Origin check); from anyone else they are ignored",
			p: parser{accepts: "IPs or CIDRs, comma-separated",
				set: func(c *Config, v string) error {
					c.TrustedProxies = nil
					var bad []string
					for _, p := range strings.Split(v, ",") {
						if p = strings.TrimSpace(p); p == "" {
							continue
						}
						if net.ParseIP(p) == nil {
							if _, _, err := net.ParseCIDR(p); err != nil {
								bad = append(bad, p)
								continue
							}
						}
						c.TrustedProxies = append(c.TrustedProxies, p)
					}
					if len(bad) > 0 {
						return fmt.Errorf("want IP addresses or CIDR ranges separated by commas, got %q", strings.Join(bad, ","))
					}
					return nil
				},
				show: func(c Config) string { return strings.Join(c.TrustedProxies, ",") }}},
		{Name: "RECONCILE_INTERVAL", Group: groupWorker, Default: "10m",
			Doc: "periodic reconciliation with each gateway's own source (Zarinpal's unverified list, Zibal's inquiry, SEP's receipt within its hour, Mellat's inquiry of a sale). One schedule for all instances: each asks every minute whether a gateway's newest stored report is this old, so several instances do not multiply the banks' load and restarts do not put it off",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.ReconcileInterval })},
		{Name: "LOG_LEVEL", Group: groupSecurity, Default: "info",
			Doc: "the least important lines logged",
			p: parser{accepts: "`debug`, `info`, `warn` or `error`",
				set: func(c *Config, v string) error {
					l, err := logging.ParseLevel(v)
					if err == nil {
						c.LogLevel = l
					}
					return err
				},
				show: func(c Config) string { return strings.ToLower(c.LogLevel.String()) }}},
		{Name: "LOG_FORMAT", Group: groupSecurity, Default: logging.FormatText,
			DefaultDoc: "`text` in development (no `SESSION_SECRET`), `json` otherwise",
			Doc:        "every line logged for a request carries its `request_id` (also sent as the `X-Request-Id` response header; a proxy's `X-Request-Id` is kept), and lines about a top-up its public id (`payment`)",
			dynamic: func(_ *Config, getenv Getenv) string {
				if getenv("SESSION_SECRET") == "" {
					return logging.FormatText
				}
				return logging.FormatJSON
			},
			p: parser{accepts: "`json` or `text`",
				set: func(c *Config, v string) error {
					f, err := logging.ParseFormat(v, "")
					if err == nil {
						c.LogFormat = f
					}
					return err
				},
				show: func(c Config) string { return c.LogFormat }}},
		{Name: "IDEMPOTENCY_KEY_TTL", Group: groupLimits, Default: "24h",
			Doc: "API idempotency keys are kept at least this long, then deleted by a periodic cleanup inside `serve`; at least `1m`",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.IdempotencyKeyTTL })},
		{Name: "API_TOPUPS_PER_MINUTE", Group: groupLimits, Default: "30",
			Doc: "`POST /api/v1/topups` per API token and minute (then `429` with `Retry-After`)",
			p:   intField(1, 1_000_000, func(c *Config) *int { return &c.APITopUpsPerMinute })},
		{Name: "API_CHARGES_PER_MINUTE", Group: groupLimits, Default: "60",
			Doc: "`POST /api/v1/charges` per merchant API token and minute, replays of a key included (then `429` `rate_limited` with `Retry-After`)",
			p:   intField(1, 1_000_000, func(c *Config) *int { return &c.APIChargesPerMinute })},
		{Name: "API_TOKEN_DEFAULT_DAYS", Group: groupLimits, Default: "90",
			Doc: "validity of a new API token when its creator types none; every token expires",
			p:   intField(1, 365, func(c *Config) *int { return &c.APITokenDefaultDays })},
		{Name: "API_TOKENS_PER_USER", Group: groupLimits, Default: "10",
			Doc: "live (unrevoked, unexpired) API tokens a user may hold",
			p:   intField(1, 1000, func(c *Config) *int { return &c.APITokensPerUser })},
		{Name: "SMTP_URL", Group: groupServer, Secret: true,
			DefaultDoc: "unset: each mail is written as an `.eml` file into `DATA_DIR/mail` and logged; outside development `serve` warns that nobody receives mail",
			Doc:        "mail server: `smtp://user:pass@host:port` (port 587 by default; STARTTLS when the server offers it; the password is sent only over TLS or to this machine) or `smtps://…` (implicit TLS, port 465)",
			p: parser{accepts: "`smtp://[user:pass@]host[:port]` or `smtps://…`",
				set: func(c *Config, v string) error {
					if v == "" {
						return nil
					}
					u, err := url.Parse(v)
					if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
						return fmt.Errorf("want smtp://[user:pass@]host[:port] (STARTTLS when offered) or smtps://… (implicit TLS)")
					}
					c.SMTPURL = v
					return nil
				},
				show: func(c Config) string { return c.SMTPURL }}},
		{Name: "MAIL_FROM", Group: groupServer, Default: "Kifpool <noreply@localhost>",
			DefaultDoc: "`Kifpool <noreply@HOST>`, HOST being `BASE_URL`'s host name (`localhost` for an IP address)",
			Doc:        "sender of every mail",
			dynamic:    func(c *Config, _ Getenv) string { return "Kifpool <noreply@" + mailDomain(c.BaseURL) + ">" },
			p: parser{accepts: "an address, optionally with a name: `Kifpool <noreply@example.com>`",
				set: func(c *Config, v string) error {
					a, err := mail.ParseAddress(v)
					if err != nil || !strings.Contains(a.Address, "@") {
						return fmt.Errorf("want an address such as \"Kifpool <noreply@example.com>\", got %q", v)
					}
					c.MailFrom = v
					return nil
				},
				show: func(c Config) string { return c.MailFrom }}},
		{Name: "MAIL_INTERVAL", Group: groupServer, Default: "10s",
			Doc: "how often each `serve` queues receipts and notices and sends the mail that is due (a password reset link wakes it at once)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.MailInterval })},
		{Name: "OPERATOR_NAME", Group: groupOperator,
			DefaultDoc: "unset: the footer and mails name no company",
			Doc:        "the company that runs this instance, named in every page's footer and at the end of every mail",
			p:          operatorField("one line of text", checkText(120), func(c *Config) *string { return &c.Operator.Name })},
		{Name: "SUPPORT_EMAIL", Group: groupOperator,
			DefaultDoc: "unset",
			Doc:        "support's e-mail address, shown in the footer, on the failure, review and error pages and in every mail that says \"contact support\"; of `SUPPORT_EMAIL`, `SUPPORT_PHONE` and `SUPPORT_URL` the first one set is the primary contact; with a real gateway and none of them set, `kifpool config` and `serve` warn",
			p:          operatorField("an e-mail address", checkSupportEmail, func(c *Config) *string { return &c.Operator.SupportEmail })},
		{Name: "SUPPORT_PHONE", Group: groupOperator,
			DefaultDoc: "unset",
			Doc:        "support's phone number, shown where `SUPPORT_EMAIL` is (in the page's digits)",
			p:          operatorField("Latin digits, spaces and dashes, optionally starting with `+`", checkPhone, func(c *Config) *string { return &c.Operator.SupportPhone })},
		{Name: "SUPPORT_URL", Group: groupOperator,
			DefaultDoc: "unset",
			Doc:        "support's web page (a contact form, a ticket desk), shown where `SUPPORT_EMAIL` is",
			p:          operatorField("an absolute `http(s)://` URL", checkPublicURL, func(c *Config) *string { return &c.Operator.SupportURL })},
		{Name: "TERMS_URL", Group: groupOperator,
			DefaultDoc: "unset: no link",
			Doc:        "the operator's terms of service, linked from every page's footer",
			p:          operatorField("an absolute `http(s)://` URL", checkPublicURL, func(c *Config) *string { return &c.Operator.TermsURL })},
		{Name: "PRIVACY_URL", Group: groupOperator,
			DefaultDoc: "unset: no link",
			Doc:        "the operator's privacy policy, linked from every page's footer",
			p:          operatorField("an absolute `http(s)://` URL", checkPublicURL, func(c *Config) *string { return &c.Operator.PrivacyURL })},
		{Name: "ENAMAD_HTML", Group: groupOperator,
			DefaultDoc: "unset: no seal",
			Doc:        "the eNamad trust seal's snippet as eNamad gives it (a link around an image), shown in every page's footer; only `<a>` and `<img>` with `https://` links are kept (inline styles, scripts and event handlers are dropped, anything else is refused), each with `referrerpolicy=origin` whatever the snippet says (eNamad learns the site, never a page's address, which on a reset page holds its token), and the CSP allows the images' origins",
			p:          sealParser},
		{Name: "RETENTION_SESSIONS", Group: groupRetention, Default: "24h",
			Doc: "expired sessions are deleted this long after they expired (`off` keeps them); see docs/operations.md",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.RetentionSessions })},
		{Name: "RETENTION_THROTTLES", Group: groupRetention, Default: "24h",
			Doc: "sign-in throttles quiet this long (and holding no lock-out) are deleted, and the bank accounts' counted ownership inquiries this old; at least `24h`, or `off`",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.RetentionThrottles })},
		{Name: "RETENTION_GATEWAY_CALLS", Group: groupRetention, Default: "2160h",
			DefaultDoc: "`2160h` (90 days)",
			Doc:        "the bank calls of top-ups failed this long ago, and calls of no top-up this old, are deleted; calls of credited and open top-ups never; at least `24h`, or `off`",
			p:          durationOrOffField(func(c *Config) *time.Duration { return &c.RetentionGatewayCalls })},
		{Name: "RETENTION_MAIL", Group: groupRetention, Default: "720h",
			DefaultDoc: "`720h` (30 days)",
			Doc:        "e-mails sent, failed or expired this long ago are deleted (a mail still queued never); at least `24h`, or `off`",
			p:          durationOrOffField(func(c *Config) *time.Duration { return &c.RetentionMail })},
		{Name: "RETENTION_WEBHOOKS", Group: groupRetention, Default: "720h",
			DefaultDoc: "`720h` (30 days)",
			Doc:        "webhook deliveries delivered or given up this long ago are deleted with their log line (a delivery still pending never); `off` keeps them",
			p:          durationOrOffField(func(c *Config) *time.Duration { return &c.RetentionWebhooks })},
		{Name: "CREDITED_CACHE_SIZE", Group: groupServer, Default: "10000",
			Doc: "credited top-ups each instance keeps in memory, so that repeat callbacks and receipt reloads of them need no database read (a credited top-up never changes again); oldest out first; `0` keeps none",
			p:   intField(0, 10_000_000, func(c *Config) *int { return &c.CreditedCacheSize })},
		{Name: "WEBHOOK_ALLOW_LOOPBACK", Group: groupSecurity,
			Doc: "webhook endpoints and `return_url` origins may be `http://` on a loopback address (`localhost`, `127.0.0.1`, `[::1]`), and deliveries may reach loopback addresses: for development and tests only; unset, every webhook URL must be `https://` and resolve to a public address (private, loopback, link-local and reserved networks are refused when registered and again when dialled)",
			p: parser{accepts: "`1` or unset",
				set: func(c *Config, v string) error {
					c.WebhookAllowLoopback = v == "1"
					return nil
				},
				show: func(c Config) string {
					if c.WebhookAllowLoopback {
						return "1"
					}
					return ""
				}}},
		{Name: "WEBHOOK_RETRY_FOR", Group: groupServer, Default: "72h",
			DefaultDoc: "`72h` (3 days)",
			Doc:        "a webhook event not acknowledged (2xx within 10 s) is retried with exponential backoff and jitter for this long from its event; then it gives up, its endpoint is marked failing and admins see it (they may send it again)",
			p:          durationField(0, func(c *Config) *time.Duration { return &c.WebhookRetryFor })},
		{Name: "WEBHOOK_BACKOFF_BASE", Group: groupServer, Default: "15s",
			Doc: "the wait after a webhook delivery's first failed attempt; it doubles after each further failure up to `WEBHOOK_BACKOFF_MAX`, and a random part of up to half is taken off (jitter)",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WebhookBackoffBase })},
		{Name: "WEBHOOK_BACKOFF_MAX", Group: groupServer, Default: "6h",
			Doc: "the longest wait between two attempts at a webhook delivery",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.WebhookBackoffMax })},
		{Name: "WEBHOOK_INTERVAL", Group: groupServer, Default: "2s",
			Doc: "how often each `serve` looks for due webhook deliveries (a status change on the instance that queued deliveries also wakes it at once); `off` sends none from this instance",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.WebhookInterval })},
		{Name: "PPROF_ADDR", Group: groupSecurity,
			DefaultDoc: "unset: off",
			Doc:        "a loopback `HOST:PORT` (e.g. `127.0.0.1:6060`) where `serve` exposes Go's profiler (`/debug/pprof/`) on a listener of its own; any other address is refused (profiles show memory and stacks); here, in `LISTEN_ADDR` and in `BASE_URL`, names under `.localhost` (`app.localhost`) are refused: they are resolved through DNS, which may answer any address",
			p: parser{accepts: "a loopback `HOST:PORT`",
				set: func(c *Config, v string) error {
					c.PprofAddr = v
					if v == "" {
						return nil
					}
					// The profiler shows memory and goroutine stacks: never to the network.
					if h, _, err := splitHostPort(v); err == nil && dnsLocalhost(h) {
						c.PprofAddr = ""
						return dnsLocalhostError(h)
					} else if err != nil || !loopbackHost(h) {
						c.PprofAddr = ""
						return fmt.Errorf("want a loopback HOST:PORT (127.0.0.1:6060, localhost:6060 or [::1]:6060): the profiler is never exposed to the network, got %q", v)
					}
					return nil
				},
				show: func(c Config) string { return c.PprofAddr }}},
	}
}

// The parsers. Each reports a bad value in words that say what is wanted.

func stringField(accepts string, field func(*Config) *string) parser {
	return parser{accepts: accepts,
		set:  func(c *Config, v string) error { *field(c) = v; return nil },
		show: func(c Config) string { return *field(&c) }}
}

func durationField(max time.Duration, field func(*Config) *time.Duration) parser {
	accepts := "a duration (`500ms`, `3s`, `2m`, `1h`)"
	if max > 0 {
		accepts = "a duration up to `" + formatDuration(max) + "`"
	}
	return parser{accepts: accepts,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 3s or 500ms, got %q", v)
			}
			if max > 0 && d > max {
				return fmt.Errorf("must not be longer than %s (slow clients would hold connections), got %v", formatDuration(max), d)
			}
			*field(c) = d
			return nil
		},
		show: func(c Config) string { return formatDuration(*field(&c)) }}
}

// durationOrOffField is a duration where `0` or `off` turns the thing off.
func durationOrOffField(field func(*Config) *time.Duration) parser {
	p := durationField(0, field)
	set := p.set
	p.accepts = "a duration, or `off` (`0`)"
	p.set = func(c *Config, v string) error {
		if v == "0" || strings.EqualFold(v, "off") {
			*field(c) = 0
			return nil
		}
		return set(c, v)
	}
	show := p.show
	p.show = func(c Config) string {
		if *field(&c) == 0 {
			return "off"
		}
		return show(c)
	}
	return p
}

func rialsField(field func(*Config) *int64) parser {
	return parser{accepts: "rials, a positive whole number (`_` separators allowed)",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("want a positive whole number of rials, got %q", v)
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.FormatInt(*field(&c), 10) }}
}

func intField(lo, hi int, field func(*Config) *int) parser {
	return parser{accepts: fmt.Sprintf("a whole number from %d to %d", lo, hi),
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("want a whole number from %d to %d, got %q", lo, hi, v)
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) }}
}

// uint32Field is parsed as 32 bits, so the conversion cannot wrap.
func uint32Field(lo, hi uint32, field func(*Config) *uint32) parser {
	return parser{accepts: fmt.Sprintf("a whole number from %d to %d", lo, hi),
		set: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n < uint64(lo) || n > uint64(hi) {
				return fmt.Errorf("want a whole number from %d to %d, got %q", lo, hi, v)
			}
			*field(c) = uint32(n)
			return nil
		},
		show: func(c Config) string { return strconv.FormatUint(uint64(*field(&c)), 10) }}
}

// perMinuteField is a rate limit in requests per minute; 0 turns it off.
func perMinuteField(field func(*Config) *int) parser {
	return parser{accepts: "requests per minute, `0` for no limit",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1_000_000 {
				return fmt.Errorf("want requests per minute (0 turns the limit off), got %q", v)
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) }}
}

// limitField is a whole number where `0` turns the limit off.
func limitField(field func(*Config) *int64) parser {
	return parser{accepts: "a whole number, `0` for no limit (`_` separators allowed)",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
			if err != nil || n < 0 || n > 1_000_000_000_000_000 {
				return fmt.Errorf("want a whole number (0 turns the limit off), got %q", v)
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.FormatInt(*field(&c), 10) }}
}

// mailDomain is the host of BASE_URL for the default sender ("localhost"
// for an IP address, which is no mail domain).
func mailDomain(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return "localhost"
	}
	return u.Hostname()
}

// formatDuration writes a duration as people write it: 2m, not 2m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
