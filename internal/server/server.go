// Package server assembles a running Kifpool from its configuration: the
// gateway driver, the sandbox bank (when it is the gateway), the domain
// services and the web app. `kifpool serve` and the integration tests
// build the app through this one function.
package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/payment/sqlstore"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/retention"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/web"
)

// Options are what New needs besides the configuration. Zero values take
// production defaults; tests override them.
type Options struct {
	Log *slog.Logger
	// Now is the instance's own clock (default time.Now), the base of the
	// database-synced Server.Clock. Tests pass a clock they move; they
	// never sync it, so the app runs on exactly their clock.
	Now        func() time.Time
	HTTPClient *http.Client
	// Bank replaces the built-in sandbox bank (GATEWAY=sandbox).
	Bank *sandbank.Bank
	// Gateway replaces the first gateway's driver, and Gateways any
	// gateway's by its name (each is still wrapped by its own resilient
	// caller).
	Gateway    gateway.Gateway
	Gateways   map[string]gateway.Gateway
	RateLimits bool
	// WrapTopUp, when set, wraps the top-up start use case (tests
	// observe what the form and the API ask of it).
	WrapTopUp func(topup.Starter) topup.Starter
	// Payment overrides time budgets of the payment service.
	Payment payment.Config
	// BcryptCost lowers password hashing cost in tests.
	BcryptCost int
	// MailRootCAs, when set, is trusted for the SMTP server's certificate
	// (tests with their own server); nil: the system's roots.
	MailRootCAs *x509.CertPool
	// MailInterval is how often queued mail is looked at (default 10s).
	MailInterval time.Duration
}

// Server is an assembled Kifpool.
type Server struct {
	App      *fiber.App
	Bank     *sandbank.Bank // nil unless GATEWAY=sandbox
	Payments *payment.Service
	// TopUp is the top-up start use case (web form and API).
	TopUp   topup.Starter
	Auth    *auth.Service
	Wallets *wallet.Service
	// Ledger is the instance's one ledger (it remembers account ids).
	Ledger *ledger.Ledger
	Tokens *apitoken.Service
	Keys   *idempotency.Store
	// Gateway is the first gateway's resilient caller, Gateways every
	// gateway's (each its own breaker), in the order they are offered.
	Gateway  gateway.Gateway
	Gateways gateway.Set
	// Resilient is the caller around the first driver (breaker state),
	// Resilients around each.
	Resilient  *resilient.Gateway
	Resilients []*resilient.Gateway
	Worker     *payment.Worker
	// WorkerConfig is the worker's tuning from the configuration (a test
	// starting a second worker starts from it).
	WorkerConfig payment.WorkerConfig
	// Metrics are the app's Prometheus metrics (GET /metrics).
	Metrics *metrics.Metrics
	// Clock is the app's clock: Options.Now corrected to the database's
	// time once synced (serve syncs it at start and keeps it synced), so
	// that leases and deadlines written by several instances compare on
	// one clock.
	Clock  *store.Clock
	Config config.Config
	db     *store.DB
	// Limits are the payers' daily and balance limits.
	Limits *limits.Policy
	// Outbox delivers queued mail; Notifier queues receipts and notices.
	Outbox       *mail.Outbox
	Notifier     *notify.Notifier
	mailInterval time.Duration
	// Webhooks are the partners' endpoints and return origins; Hooks
	// delivers the outbox.
	Webhooks *webhook.Service
	Hooks    *webhook.Sender
}

// NewHTTPClient is the client for bank calls: pooled connections, bounded
// dialing, and no overall Timeout: each call's context sets its deadline.
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}}
}

// New wires every part of the app over an open, migrated database.
func New(cfg config.Config, db *store.DB, o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = NewHTTPClient()
	}
	s := &Server{Clock: store.NewClock(db, o.Now, 0, o.Log.With("component", "clock"))}
	now := s.Clock.Now
	hooks, err := webhook.New(db, now, webhook.Options{SessionSecret: cfg.SessionSecret, AllowLoopback: cfg.WebhookAllowLoopback})
	if err != nil {
		return nil, err
	}
	s.Webhooks = hooks
	// The gateway drivers come from the registry, in the configuration's
	// order; so do their callback parsers and the console's labels.
	var drvs []gateway.Driver
	sandbox := cfg.Gateway == config.GatewaySandbox
	for _, name := range cfg.Gateways {
		drv, ok := drivers.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("gateway: no driver %q (want one of %v)", name, drivers.Names())
		}
		if sandbox && (!sandbank.Speaks(drv.Sandbox.Protocol) || drivers.Supported(drv) != nil) {
			// GATEWAYS=sandbox offers what the built-in bank imitates and
			// the flow serves.
			o.Log.Debug("sandbox: gateway not offered yet", "gateway", name)
			continue
		}
		if err := drivers.Supported(drv); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		drvs = append(drvs, drv)
	}
	if len(drvs) == 0 {
		return nil, fmt.Errorf("gateway: none of %v can be offered", cfg.Gateways)
	}
	var bankHandler http.Handler
	if sandbox {
		s.Bank = o.Bank
		if s.Bank == nil {
			// Payments of this bank may call back only to this app: its
			// "pay" button must not become a redirect to anywhere. Its
			// payments are kept under DATA_DIR, so that a restart of serve
			// orphans none of those still open.
			bank, err := sandbank.Open(sandbank.Options{Logger: o.Log.With("component", "sandbank"), NoControlAPI: true,
				CallbackOrigin: originOf(cfg.BaseURL), StateFile: filepath.Join(cfg.DataDir, SandbankStateFile)})
			if err != nil {
				return nil, err
			}
			s.Bank = bank
		}
		bankHandler = s.Bank.Handler()
	}
	inners := make([]gateway.Gateway, len(drvs))
	for i, drv := range drvs {
		inner := o.Gateways[drv.Name]
		if i == 0 && o.Gateway != nil {
			inner = o.Gateway
		}
		if inner == nil {
			gw, err := drv.New(cfg.GatewaySettings, gateway.Deps{HTTPClient: o.HTTPClient, Logger: o.Log.With("component", drv.Name), Now: now})
			if err != nil {
				return nil, fmt.Errorf("gateway %s: %w", drv.Name, err)
			}
			inner = gw
		}
		inners[i] = inner
	}
	// The metrics read their gauges at scrape time through these closures
	// (s.Payments and s.Resilient exist by then).
	reads := paymentread.New(db)
	// The gateways' breakers in this instance, for the metrics and the
	// admin's pages.
	breakers := func() []resilient.BreakerState {
		out := make([]resilient.BreakerState, len(s.Resilients))
		for i, r := range s.Resilients {
			out[i] = r.BreakerState()
		}
		return out
	}
	m := metrics.New(metrics.Sources{
		// As the dashboard's totals: exact up to TotalCap per status (the
		// open ones, which alerts watch), estimated above, so that a scrape
		// costs a few index reads, not a count of every payment.
		StatusCounts: func(ctx context.Context) (map[string]int64, error) {
			tots, err := reads.Totals(ctx)
			out := make(map[string]int64, len(tots))
			for _, t := range tots {
				out[t.Status] = t.N
			}
			return out, err
		},
		Breakers: breakers,
		Backlog: func(ctx context.Context) (int64, time.Duration, error) {
			b, err := reads.WorkerBacklog(ctx, now(), cfg.WorkerAbandonedAfter)
			return b.Due, b.Lag, err
		},
		LastReconcile: func(ctx context.Context) (time.Time, bool, error) {
			reps, err := reads.Reconciles(ctx, 1)
			if err != nil || len(reps) == 0 {
				return time.Time{}, false, err
			}
			return reps[0].FinishedAt, reps[0].Error != "", nil
		},
		Webhooks: func(ctx context.Context) (int64, time.Duration, int64, int64, error) {
			st, err := hooks.Stats(ctx)
			return st.Pending, st.OldestAge, st.Failed, st.FailingEndpoints, err
		},
		Log: o.Log.With("component", "metrics"),
	})
	s.Metrics = m
	// Each gateway its own resilient caller: its own breaker, so that one
	// bank down leaves the others taking top-ups.
	recorder := m.Recorder(payment.NewCallRecorder(sqlstore.New(db), o.Log.With("component", "gateway_calls")))
	for _, inner := range inners {
		r := resilient.New(inner, resilient.Options{
			AttemptTimeout: cfg.AttemptTimeout, Budget: cfg.Budget, RequestTimeout: cfg.RequestTimeout,
			Breaker: resilient.BreakerOptions{
				Window: cfg.BreakerWindow, MinRequests: cfg.BreakerMinRequests,
				FailureRatio: float64(cfg.BreakerFailurePercent) / 100, OpenTimeout: cfg.BreakerOpenTimeout,
			},
			Recorder: recorder,
			Logger:   o.Log.With("component", "resilient", "gateway", inner.Name()),
			Now:      now, // gateway_calls of every instance on one clock
		})
		s.Resilients = append(s.Resilients, r)
		s.Gateways = append(s.Gateways, r)
	}
	s.Resilient, s.Gateway = s.Resilients[0], s.Gateways[0]
	s.Hooks = webhook.NewSender(hooks, webhook.SenderOptions{RetryFor: cfg.WebhookRetryFor, Observer: m,
		BaseBackoff: cfg.WebhookBackoffBase, MaxBackoff: cfg.WebhookBackoffMax,
		Log: o.Log.With("component", "webhook")})
	pc := o.Payment
	if pc.Observer == nil {
		pc.Observer = m
	}
	pc.BaseURL, pc.MinRials, pc.MaxRials = cfg.BaseURL, cfg.TopUpMinRials, cfg.TopUpMaxRials
	// The resilient caller bounds each bank operation; the service bounds
	// a whole check (verify, then perhaps inquiry) and every wait to the
	// same budget, so no page waits longer.
	if pc.RequestTimeout == 0 {
		pc.RequestTimeout = cfg.RequestTimeout
	}
	if pc.VerifyTimeout == 0 {
		pc.VerifyTimeout = cfg.Budget
	}
	if pc.RecheckDelay == 0 {
		pc.RecheckDelay = cfg.PendingRecheckAfter
	}
	if pc.CreditedCacheSize == 0 {
		pc.CreditedCacheSize = cfg.CreditedCacheSize // 0: keep none
	}
	if pc.Disabled == nil {
		pc.Disabled = sqlstore.New(db).DisabledGateways
	}
	if pc.Gateways == nil {
		pc.Gateways = map[string]payment.GatewayRules{}
		for _, drv := range drvs {
			pc.Gateways[drv.Name] = payment.RulesOf(drv.Capabilities)
		}
	}
	// A move that queued webhook deliveries wakes this instance's sender
	// once it has committed; a move that queued none (a payer without
	// endpoints, most credits) wakes nothing.
	s.Ledger = ledger.New(db)
	names := make([]string, len(drvs))
	for i, drv := range drvs {
		names[i] = drv.Name
	}
	if err := s.Ledger.EnsureClearing(context.Background(), names...); err != nil {
		return nil, fmt.Errorf("clearing accounts: %w", err)
	}
	s.Payments = payment.NewService(sqlstore.New(db).WithLedger(s.Ledger).OnWebhookQueued(s.Hooks.Kick), s.Gateways, now, o.Log.With("component", "payment"), pc)
	s.WorkerConfig = payment.WorkerConfig{
		Interval: cfg.WorkerInterval, Concurrency: cfg.WorkerConcurrency,
		AbandonedAfter: cfg.WorkerAbandonedAfter, AuthorityLifetime: cfg.WorkerAuthorityLifetime,
		MaxUnknown: cfg.WorkerMaxUnknown, StaleCreated: cfg.WorkerStaleCreated,
		BaseBackoff: cfg.WorkerBackoffBase, MaxBackoff: cfg.WorkerBackoffMax,
	}
	if s.WorkerConfig.Interval == 0 {
		// WORKER_INTERVAL=off: RunBackground starts no worker; one built
		// here still needs an interval.
		s.WorkerConfig.Interval = time.Second
	}
	s.Worker = s.Payments.NewWorker(s.WorkerConfig)
	s.Config = cfg
	s.db = db
	var sender mail.Sender
	if cfg.SMTPURL != "" {
		smtp, err := mail.ParseSMTPURL(cfg.SMTPURL)
		if err != nil {
			return nil, fmt.Errorf("SMTP_URL: %w", err)
		}
		smtp.RootCAs = o.MailRootCAs
		sender = smtp
	} else {
		sender = &mail.Dir{Path: filepath.Join(cfg.DataDir, "mail"), Log: o.Log.With("component", "mail"), PrintText: cfg.Dev}
	}
	s.Outbox = mail.NewOutbox(db, sender, cfg.MailFrom, now, o.Log.With("component", "mail"))
	s.Notifier = notify.New(db, cfg.BaseURL, cfg.Operator, now, o.Log.With("component", "notify"))
	s.mailInterval = o.MailInterval
	if s.mailInterval <= 0 {
		s.mailInterval = 10 * time.Second
	}
	s.Auth = auth.NewService(db, auth.Options{Now: now, BcryptCost: o.BcryptCost, ResetMailer: s.Notifier.ResetMailer()})
	s.Wallets = wallet.NewService(db, s.Ledger)
	s.Tokens = apitoken.New(db, now, apitoken.Options{DefaultDays: cfg.APITokenDefaultDays, MaxLive: cfg.APITokensPerUser})
	s.Limits = limits.NewPolicy(limits.Rules{DailyMaxRials: cfg.TopUpDailyMaxRials, DailyMaxCount: cfg.TopUpDailyMaxCount,
		BalanceMaxRials: cfg.BalanceMaxRials}, reads, s.Wallets, now)
	s.TopUp = topup.New(s.Payments, s.Wallets, cfg.TopUpLimits()).WithPolicy(s.Limits)
	if o.WrapTopUp != nil {
		s.TopUp = o.WrapTopUp(s.TopUp)
	}
	// A key is leased to its request for longer than the slowest top-up
	// (the gateway budget, and a repeat's wait for the first submit).
	s.Keys = idempotency.NewStore(db, idempotency.Options{
		TTL: cfg.IdempotencyKeyTTL, Lease: 2*pc.RequestTimeout + 10*time.Second, Secret: cfg.SessionSecret, Now: now,
	})
	var userTopUps *ratelimit.Window
	if o.RateLimits && cfg.RateLimitTopUp > 0 {
		userTopUps = ratelimit.New(cfg.RateLimitTopUp, time.Minute, now)
	}
	s.App = web.New(web.Deps{
		Config: cfg, Auth: s.Auth, Wallets: s.Wallets, Payments: s.Payments, Tokens: s.Tokens,
		TopUp:  s.TopUp,
		People: people.New(db), Reads: reads, Audit: audit.NewLog(db), GatewayNames: s.Gateways.Names(), Metrics: m,
		GatewayLabel: drivers.Labeler(sandbox), ParseCallback: ParseCallback,
		Keys: s.Keys, Limits: s.Limits,
		Bank: bankHandler, Log: o.Log.With("component", "web"), Now: now, RateLimits: o.RateLimits,
		UserTopUps: userTopUps, Outbox: s.Outbox, Webhooks: s.Webhooks, Hooks: s.Hooks,
		Breakers: breakers,
		Health:   func(ctx context.Context) error { return db.SQL().PingContext(ctx) },
		Ready:    func(ctx context.Context) error { return ready(ctx, db) },
	})
	return s, nil
}

// ParseCallback reads a callback with the named gateway's own parser
// (false for a gateway the registry does not know).
func ParseCallback(name string, query, form func(string) string, isPost bool) (callback.Params, bool) {
	d, ok := drivers.Lookup(name)
	if !ok {
		return callback.Params{}, false
	}
	return d.ParseCallback(query, form, isPost)
}

// ready checks that the database answers and its schema is at this
// build's latest migration.
func ready(ctx context.Context, db *store.DB) error {
	if err := db.SQL().PingContext(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	st, err := db.Migrations(ctx)
	if err != nil {
		return err
	}
	if st.Pending {
		return fmt.Errorf("migrations pending: database at version %d, this build at %d", st.Current, st.Latest)
	}
	return nil
}

// RunBackground starts the payment worker and the periodic reconciliation
// (each when configured), the hourly retention purge (expired sessions,
// quiet throttles, old calls of failed payments) and the cleanup of
// expired idempotency keys, until ctx ends. The returned function waits for
// them to stop; in-flight work finishes first.
func (s *Server) RunBackground(ctx context.Context, log *slog.Logger) (wait func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var wg sync.WaitGroup
	if s.Config.WorkerInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Worker.Run(ctx)
		}()
	}
	if s.Config.ReconcileInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(s.Config.ReconcileInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if _, err := s.Payments.Reconcile(ctx); err != nil && ctx.Err() == nil {
						log.Error("periodic reconciliation", "err", err)
					}
				}
			}
		}()
	}
	// Mail: receipts and notices queued from payment events, then every
	// due mail delivered (and retried), never on a request's path.
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Outbox.Run(ctx, s.mailInterval, func(ctx context.Context) {
			if _, err := s.Notifier.Scan(ctx); err != nil && ctx.Err() == nil {
				log.Error("queue receipts and notices", "err", err)
			}
		})
	}()
	// Webhooks: the outbox, delivered by every instance (claims skip what
	// another holds).
	if s.Config.WebhookInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Hooks.Run(ctx, s.Config.WebhookInterval)
		}()
	}
	// Expired idempotency keys: its own small loop (the payment worker
	// knows nothing of the API).
	wg.Add(1)
	go func() {
		defer wg.Done()
		lifecycle.Every(ctx, min(s.Keys.TTL()/4, 10*time.Minute), func(ctx context.Context) {
			if n, err := s.Keys.Cleanup(ctx); err != nil && ctx.Err() == nil {
				log.Error("delete expired idempotency keys", "err", err)
			} else if n > 0 {
				log.Info("deleted expired idempotency keys", "count", n)
			}
		})
	}()
	// Holds whose time has passed are released (expired) by every
	// instance; each ends once, whoever gets there first.
	wg.Add(1)
	go func() {
		defer wg.Done()
		lifecycle.Every(ctx, time.Minute, func(ctx context.Context) {
			if n, err := s.Ledger.ExpireDue(ctx, s.Clock.Now(), 100); err != nil && ctx.Err() == nil {
				log.Error("expire holds", "err", err)
			} else if n > 0 {
				log.Info("expired holds", "count", n)
			}
		})
	}()
	// Retention (RETENTION_*): hourly, in every instance (the deletes are
	// idempotent and batched; instances racing delete each row once).
	wg.Add(1)
	go func() {
		defer wg.Done()
		policy := retention.Policy{ExpiredSessions: s.Config.RetentionSessions, Throttles: s.Config.RetentionThrottles,
			GatewayCalls: s.Config.RetentionGatewayCalls, Mail: s.Config.RetentionMail, Webhooks: s.Config.RetentionWebhooks}
		lifecycle.Every(ctx, time.Hour, func(ctx context.Context) {
			res, err := retention.Purge(ctx, s.db, s.Clock.Now(), policy)
			if err != nil && ctx.Err() == nil {
				log.Error("retention", "err", err)
			}
			if res != (retention.Result{}) {
				log.Info("retention: deleted", "sessions", res.Sessions, "throttles", res.Throttles, "gateway_calls", res.GatewayCalls, "mails", res.Mails, "webhook_deliveries", res.Webhooks)
			}
			if _, err := s.Auth.PurgeResets(ctx); err != nil && ctx.Err() == nil {
				log.Error("purge password reset links", "err", err)
			}
		})
	}()
	return wg.Wait
}

// originOf is scheme://host[:port] of an absolute URL ("" if it has none).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SandbankStateFile is the built-in sandbox bank's state, in DATA_DIR.
const SandbankStateFile = "sandbank.json"
