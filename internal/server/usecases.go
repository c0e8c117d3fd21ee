package server

import (
	"context"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/cardrefund"
	crstore "github.com/kifpool/kifpool/internal/cardrefund/sqlstore"
	"github.com/kifpool/kifpool/internal/charge"
	chargestore "github.com/kifpool/kifpool/internal/charge/sqlstore"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/metrics"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

// useCases are the services the web app and the background loops call.
type useCases struct {
	TopUps       *topup.Service
	Worker       *topup.Worker
	WorkerConfig topup.WorkerConfig
	TopUp        topup.Starter
	Auth         *auth.Service
	Wallets      *wallet.Service
	Tokens       *apitoken.Service
	Limits       *limits.Policy
	Keys         *idempotency.Store
	Hooks        *webhook.Sender
	Transfers    *transfer.Service
	CardRefunds  *cardrefund.Service
	Charges      *charge.Service
}

// useCaseParts are the parts built before the use cases that they share.
type useCaseParts struct {
	store    *sqlstore.Store // the instance's one payment store
	ledger   *ledger.Ledger
	reads    *topupread.Reader
	gateways gateways
	metrics  *metrics.Metrics
	webhooks *webhook.Service
	resets   auth.ResetMailer
	verifies auth.VerifyMailer
	// cardRefunds is the instance's one card refund store.
	cardRefunds *crstore.Store
}

// newUseCases builds the services over the shared parts, each tuned by
// the configuration.
func newUseCases(b base, p useCaseParts) useCases {
	cfg := b.cfg
	var u useCases
	u.Hooks = webhook.NewSender(p.webhooks, webhook.SenderOptions{RetryFor: cfg.WebhookRetryFor, Observer: p.metrics,
		BaseBackoff: cfg.WebhookBackoffBase, MaxBackoff: cfg.WebhookBackoffMax, Interval: cfg.WebhookInterval, Ticks: b.o.Ticks, Log: b.log("webhook")})
	// A move that queued webhook deliveries wakes this instance's sender
	// once it has committed; a move that queued none (a payer without
	// endpoints, most credits) wakes nothing.
	p.store.OnWebhookQueued(u.Hooks.Kick)
	pc := topUpConfig(cfg, p.gateways.Drivers)
	pc.Observer, pc.Disabled = p.metrics, p.store.DisabledGateways
	var ts topup.Store = p.store
	if b.o.WrapTopUpStore != nil {
		ts = b.o.WrapTopUpStore(ts)
	}
	u.TopUps = topup.NewService(ts, p.gateways.Set, b.now, b.log("payment"), pc)
	u.WorkerConfig = workerConfig(cfg)
	u.Worker = u.TopUps.NewWorker(u.WorkerConfig)
	u.Auth = auth.NewService(b.db, auth.Options{Now: b.now, BcryptCost: b.o.BcryptCost, ResetMailer: p.resets, VerifyMailer: p.verifies,
		ResetAnswerAfter: auth.DefaultResetAnswerAfter})
	u.Wallets = wallet.NewService(b.db, p.ledger)
	u.Tokens = apitoken.New(b.db, b.now, apitoken.Options{DefaultDays: cfg.APITokenDefaultDays, MaxLive: cfg.APITokensPerUser})
	u.Limits = limits.NewPolicy(limits.Rules{DailyMaxRials: cfg.TopUpDailyMaxRials, DailyMaxCount: cfg.TopUpDailyMaxCount,
		BalanceMaxRials: cfg.BalanceMaxRials, WaitingMaxCount: cfg.TopUpWaitingMaxCount}, p.reads, u.Wallets, b.now)
	u.TopUp = topup.NewStartService(u.TopUps, u.Wallets, cfg.TopUpLimits()).WithPolicy(u.Limits)
	if b.o.WrapTopUp != nil {
		u.TopUp = b.o.WrapTopUp(u.TopUp)
	}
	p.cardRefunds.OnWebhookQueued(u.Hooks.Kick)
	u.CardRefunds = cardrefund.New(cardrefund.Deps{Store: p.cardRefunds, Gateways: p.gateways.Set, Now: b.now, Log: b.log("cardrefund"),
		Config: cardRefundConfig(cfg),
		Capabilities: func(name string) (gateway.Capabilities, bool) {
			d, ok := drivers.Lookup(name)
			return d.Capabilities, ok
		},
		// The webhook's "topup" is the API's view of the top-up.
		TopUpView: func(ctx context.Context, t cardrefund.TopUp) (any, error) {
			it, err := p.reads.TopUp(ctx, t.UserID, t.PublicID)
			if err != nil {
				return nil, err
			}
			return topup.ViewOf(it.TopUp, it.CreditedAt, nil), nil
		}})
	// A key is leased to its request for longer than the slowest top-up
	// (the gateway budget, and a repeat's wait for the first submit).
	u.Keys = idempotency.NewStore(b.db, idempotency.Options{
		TTL: cfg.IdempotencyKeyTTL, Lease: 2*cfg.RequestTimeout + 10*time.Second, Secret: cfg.SessionSecret, Now: b.now,
	})
	u.Transfers = transfer.New(transfer.NewStore(b.db, p.ledger),
		transfer.Config{MinRials: cfg.TransferMinRials, DailyMaxRials: cfg.TransferDailyMaxRials}, b.now, b.log("transfer")).
		WithHooks(transfer.Hooks{WebhookQueued: u.Hooks.Kick}).WithKeys(u.Keys)
	if b.o.RateLimits && cfg.RateLimitTransfers > 0 {
		// Open places count as transfers made: a burst at once passes no
		// more than the pace allows.
		u.Transfers.WithPace(ratelimit.New(cfg.RateLimitTransfers, time.Minute, b.now).LimitPending(cfg.RateLimitTransfers).CountPending())
	}
	u.Charges = charge.New(chargestore.New(b.db, p.ledger), charge.Config{BaseURL: cfg.BaseURL,
		HoldTTL: time.Duration(cfg.ChargeHoldHours) * time.Hour}, b.now, b.log("charge")).
		WithHooks(charge.Hooks{WebhookQueued: u.Hooks.Kick, Observer: p.metrics})
	return u
}

// cardRefundConfig is the card refunds' tuning: a lease sized to one bank
// call (the budget and a margin, as a top-up's), the worker's pace.
func cardRefundConfig(cfg config.Config) cardrefund.Config {
	c := cardrefund.DefaultConfig()
	c.Lease = cfg.Budget + 2*time.Second
	c.NotDoneAfter = cfg.CardRefundNotDoneAfter
	c.BaseBackoff, c.MaxBackoff, c.Concurrency = cfg.WorkerBackoffBase, cfg.WorkerBackoffMax, cfg.WorkerConcurrency
	return c
}

// paymentConfig is the payment service's tuning from the configuration
// and the offered drivers' rules. The resilient caller bounds each bank
// operation; the service bounds a whole check (verify, then perhaps
// inquiry) and every wait to the same budget, so no page waits longer.
func topUpConfig(cfg config.Config, drvs []gateway.Driver) topup.Config {
	pc := topup.Config{
		BaseURL: cfg.BaseURL, MinRials: cfg.TopUpMinRials, MaxRials: cfg.TopUpMaxRials,
		RequestTimeout: cfg.RequestTimeout, VerifyTimeout: cfg.Budget, RecheckDelay: cfg.PendingRecheckAfter,
		CreditedCacheSize: cfg.CreditedCacheSize, // 0: keep none
		Gateways:          make(map[string]topup.GatewayRules, len(drvs)),
	}
	for _, drv := range drvs {
		pc.Gateways[drv.Name] = topup.RulesOf(drv.Capabilities)
	}
	return pc
}

// workerConfig is the payment worker's tuning from the configuration
// (Interval 0 when WORKER_INTERVAL=off: the worker is built, and runs
// only when asked, RunOnce).
func workerConfig(cfg config.Config) topup.WorkerConfig {
	return topup.WorkerConfig{
		Interval: cfg.WorkerInterval, Concurrency: cfg.WorkerConcurrency,
		AbandonedAfter: cfg.WorkerAbandonedAfter, AuthorityLifetime: cfg.WorkerAuthorityLifetime,
		MaxUnknown: cfg.WorkerMaxUnknown, StaleCreated: cfg.WorkerStaleCreated,
		BaseBackoff: cfg.WorkerBackoffBase, MaxBackoff: cfg.WorkerBackoffMax,
	}
}
