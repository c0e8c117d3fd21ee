package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/cardrefund"
	crstore "github.com/kifpool/kifpool/internal/cardrefund/sqlstore"
	"github.com/kifpool/kifpool/internal/charge"
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
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/internal/withdrawal"
	wsqlstore "github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
)

// Options are what New needs besides the configuration: dependencies a
// test replaces. A nil one is production's (withDefaults).
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
	// WrapTopUpStore, when set, wraps the store the top-up service
	// resolves payments through (tests: a database that fails at a
	// chosen moment); the worker and the pages share that service.
	WrapTopUpStore func(topup.Store) topup.Store
	// BcryptCost lowers password hashing cost in tests.
	BcryptCost int
	// MailRootCAs, when set, is trusted for the SMTP server's certificate
	// (tests with their own server); nil: the system's roots.
	MailRootCAs *x509.CertPool
	// Ticks makes the background loops' tickers (nil: real ones); tests
	// send the ticks themselves.
	Ticks lifecycle.Ticks
}

// withDefaults fills the dependencies a caller left out: a silent log, the
// machine's clock, the pooled bank client. Settings are not among them:
// their defaults are the configuration table's (internal/config).
func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = NewHTTPClient()
	}
	return o
}

// Server is an assembled Kifpool.
type Server struct {
	App    *fiber.App
	Bank   *sandbank.Bank // nil unless GATEWAY=sandbox
	TopUps *topup.Service
	// TopUp is the top-up start use case (web form and API).
	TopUp   topup.Starter
	Auth    *auth.Service
	Wallets *wallet.Service
	// Transfers sends money between people (the page's and the API's).
	Transfers *transfer.Service
	// Charges is merchants' "Pay with Kifpool" (the API's, the checkout's,
	// the merchant's page's, the admin's and the worker's one use case).
	Charges *charge.Service
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
	Worker     *topup.Worker
	// WorkerConfig is the worker's tuning from the configuration (a test
	// starting a second worker starts from it).
	WorkerConfig topup.WorkerConfig
	// Metrics are the app's Prometheus metrics (GET /metrics).
	Metrics *metrics.Metrics
	// Clock is the app's clock: Options.Now corrected to the database's
	// time once synced (serve syncs it at start and keeps it synced), so
	// that leases and deadlines written by several instances compare on
	// one clock.
	Clock  *store.Clock
	Config config.Config
	db     *store.DB
	// topUpStore is the payment store (its switches' keeper runs in
	// RunBackground).
	topUpStore *sqlstore.Store
	ticks      lifecycle.Ticks // the background loops' (Options.Ticks)
	// Limits are the payers' daily and balance limits.
	Limits *limits.Policy
	// Outbox delivers queued mail; Notifier queues receipts and notices.
	Outbox   *mail.Outbox
	Notifier *notify.Notifier
	// Webhooks are the partners' endpoints and return origins; Hooks
	// delivers the outbox.
	Webhooks *webhook.Service
	Hooks    *webhook.Sender
	// Withdrawals are cash-out (off with PAYOUTS=none), BankAccounts the
	// accounts people cash out to, PayoutWorker the withdrawals' worker,
	// PayoutStore their store (reconciliation's reads).
	Withdrawals  *withdrawal.Service
	BankAccounts *bankaccount.Service
	PayoutWorker *withdrawal.Worker
	PayoutStore  *wsqlstore.Store
	payouts      payouts
	// CardRefunds give credited top-ups back to the card (an admin's
	// action; its worker asks the bank what is unknown).
	CardRefunds *cardrefund.Service
	// Reads is where the pages read: the read database of
	// DATABASE_READ_URL while it answers, else the primary (Close closes
	// it).
	Reads *store.ReadPool
	// loopRuns is when each background loop last ran to its end (the
	// metrics').
	loopRuns *loopRuns
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

// New wires every part of the app over an open, migrated database, from
// the parts' own constructors (gateways, observability, mail, use cases,
// web), in the order they need each other.
func New(cfg config.Config, db *store.DB, o Options) (*Server, error) {
	o = o.withDefaults()
	clock := store.NewClock(db, o.Now, 0, o.Log.With("component", "clock"))
	b := base{cfg: cfg, db: db, o: o, now: clock.Now}
	hooks, err := webhook.New(db, b.now, webhook.Options{SessionSecret: cfg.SessionSecret, AllowLoopback: cfg.WebhookAllowLoopback})
	if err != nil {
		return nil, err
	}
	led := ledger.New(db)
	// The instance's one payment store: the service's, the call log's.
	// The gateway switches are kept in memory for a second at most, while
	// their changes are heard (RunBackground's KeepSwitches).
	st := sqlstore.New(db).WithLedger(led).CacheSwitches(b.now, switchesTTL)
	reads := topupread.New(db)
	pool, err := newReadPool(b)
	if err != nil {
		return nil, err
	}
	built := false
	defer func() {
		if !built {
			_ = pool.Close() // the error being returned is the one to report
		}
	}()
	// The metrics read the breakers at scrape time, once gws is built.
	var gws gateways
	// The payout providers are built after the metrics: their reports
	// are read through po, set below, at scrape time.
	var po payouts
	payoutReports := func(ctx context.Context) ([]withdrawal.Report, error) {
		if po.Withdrawals == nil || !po.Withdrawals.On() {
			return nil, nil
		}
		return po.Withdrawals.NewestReports(ctx)
	}
	// What waits for an admin, read at scrape time through po and crs
	// (set below).
	var crs *crstore.Store
	awaiting := func(ctx context.Context) ([]metrics.Awaiting, error) {
		sources := make([]func(context.Context) (int64, time.Time, error), len(metrics.AwaitingKinds))
		if po.Withdrawals != nil && po.Withdrawals.On() {
			sources[0] = po.Withdrawals.AwaitingAdmin
		}
		if po.Accounts != nil {
			sources[1] = po.Accounts.AwaitingAdmin
		}
		if crs != nil {
			sources[2] = crs.AwaitingAdmin
		}
		return awaitingAdmin(ctx, sources)
	}
	runs := &loopRuns{}
	obs := newObservability(b, reads, pool, hooks, func() []resilient.BreakerState { return gws.breakers() }, payoutReports, awaiting, runs.all)
	gws, err = newGateways(b, led, obs.Metrics.Recorder(topup.NewCallRecorder(st, b.log("gateway_calls"))))
	if err != nil {
		return nil, err
	}
	ml, err := newMail(b)
	if err != nil {
		return nil, err
	}
	crs, err = crstore.New(context.Background(), db, led)
	if err != nil {
		return nil, err
	}
	uc := newUseCases(b, useCaseParts{store: st, ledger: led, reads: reads, gateways: gws, metrics: obs.Metrics,
		webhooks: hooks, resets: ml.Notifier.ResetMailer(), verifies: ml.Notifier.VerifyMailer(), cardRefunds: crs})
	po, err = newPayouts(b, led, uc.Wallets)
	if err != nil {
		return nil, err
	}
	// A withdrawal's move that queued webhook deliveries wakes the sender.
	po.Store.OnWebhookQueued(uc.Hooks.Kick)
	// The withdrawals' lists read the pages' read pool.
	if po.Withdrawals != nil {
		po.Withdrawals.ListFrom(po.Store.WithReadPool(pool))
	}
	s := &Server{
		Withdrawals: po.Withdrawals, BankAccounts: po.Accounts, PayoutWorker: po.Worker, PayoutStore: po.Store, payouts: po,
		Bank: gws.Bank, TopUps: uc.TopUps, TopUp: uc.TopUp, Auth: uc.Auth, Wallets: uc.Wallets, Ledger: led,
		Tokens: uc.Tokens, Keys: uc.Keys, Gateway: gws.Set[0], Gateways: gws.Set,
		Resilient: gws.Resilients[0], Resilients: gws.Resilients, Worker: uc.Worker, WorkerConfig: uc.WorkerConfig,
		Metrics: obs.Metrics, Clock: clock, Config: cfg, db: db, Limits: uc.Limits,
		Outbox: ml.Outbox, Notifier: ml.Notifier, ticks: o.Ticks, Webhooks: hooks, Hooks: uc.Hooks, Transfers: uc.Transfers,
		CardRefunds: uc.CardRefunds, Charges: uc.Charges, Reads: pool, topUpStore: st, loopRuns: runs,
	}
	s.App = newWeb(b, s, gws, reads)
	built = true
	return s, nil
}

// base is what every part's constructor reads: the configuration, the
// database, the options (defaults filled) and the instance's clock.
type base struct {
	cfg config.Config
	db  *store.DB
	o   Options
	now func() time.Time
}

// log is the options' logger for one component.
func (b base) log(component string) *slog.Logger { return b.o.Log.With("component", component) }

// ParseCallback reads a callback with the named gateway's own parser
// (false for a gateway the registry does not know).
func ParseCallback(name string, query, form func(string) string, isPost bool) (callback.Params, bool) {
	parse, ok := callbackParsers()[name]
	if !ok {
		return callback.Params{}, false
	}
	return parse(query, form, isPost)
}

// callbackParsers are the drivers' callback parsers by gateway name, read
// from the registry once (it is fixed at build time): every return from
// the bank, replays included, looks one up.
var callbackParsers = sync.OnceValue(func() map[string]func(query, form func(string) string, isPost bool) (callback.Params, bool) {
	out := map[string]func(query, form func(string) string, isPost bool) (callback.Params, bool){}
	for _, d := range drivers.All() {
		out[d.Name] = d.ParseCallback
	}
	return out
})

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

// originOf is scheme://host[:port] of an absolute URL ("" if it has none).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// switchesTTL bounds how long the gateway switches are served from memory
// after a read (internal/topup/sqlstore, switches.go): the bound of a
// change nothing announced (on SQLite, a write by another process).
const switchesTTL = time.Second

// SandbankStateFile is the built-in sandbox bank's state, in DATA_DIR.
const SandbankStateFile = "sandbank.json"
