package server

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/web"
	"github.com/kifpool/kifpool/web/account"
	"github.com/kifpool/kifpool/web/admin"
	"github.com/kifpool/kifpool/web/api"
	"github.com/kifpool/kifpool/web/merchant"
	"github.com/kifpool/kifpool/web/pay"
	"github.com/kifpool/kifpool/web/wallet"
	"github.com/kifpool/kifpool/web/withdraw"
)

// newWeb builds the web app over the instance's parts: the one place that
// fills web.Deps, and each feature's Deps (web/account, web/wallet,
// web/pay, web/admin, web/api), which web registers in its order.
func newWeb(b base, s *Server, gws gateways, reads *topupread.Reader) *fiber.App {
	cfg, db, log := b.cfg, b.db, b.log("web")
	var userTopUps *ratelimit.Window
	if b.o.RateLimits && cfg.RateLimitTopUp > 0 {
		userTopUps = ratelimit.New(cfg.RateLimitTopUp, time.Minute, b.now)
	}
	// Transfers refused for an unknown address: one allowance per user,
	// shared by the page and the API.
	var unknownRecipients *ratelimit.Window
	if b.o.RateLimits && cfg.RateLimitUnknownRecipients > 0 {
		// At most 64 lookups open at once per user: a burst learns at
		// most that many addresses beyond the allowance, while a partner
		// sending many transfers at once to known people is not held up.
		unknownRecipients = ratelimit.New(cfg.RateLimitUnknownRecipients, time.Hour, b.now).LimitPending(64)
	}
	var recipientPreviews *ratelimit.Window
	if b.o.RateLimits && cfg.RateLimitRecipientPreviews > 0 {
		recipientPreviews = ratelimit.New(cfg.RateLimitRecipientPreviews, time.Hour, b.now).LimitPending(64)
	}
	// API requests refused for their token, per client address: one
	// allowance for every instance's own memory, as the sign-in's.
	var apiAuthFailures *ratelimit.Window
	if b.o.RateLimits && cfg.RateLimitAPIAuthFailures > 0 {
		apiAuthFailures = ratelimit.New(cfg.RateLimitAPIAuthFailures, time.Minute, b.now)
	}
	var tokenCharges *ratelimit.Window
	if cfg.APIChargesPerMinute > 0 {
		tokenCharges = ratelimit.New(cfg.APIChargesPerMinute, time.Minute, b.now)
	}
	labels := drivers.Labeler(cfg.Gateway == config.GatewaySandbox)
	// The pages' lists, searches, histories and dashboard read the read
	// pool (DATABASE_READ_URL, else the primary); one top-up, receipts and
	// everything a use case decides on read the primary
	// (docs/design/scaling.md#read-replicas).
	pageReads := reads.WithReadPool(s.Reads)
	pageWallets := s.Wallets.WithReadPool(s.Reads)
	pageTransfers := s.Transfers.WithReadPool(s.Reads)
	payDeps := pay.Deps{TopUps: s.TopUps, Reads: reads, Webhooks: s.Webhooks, ParseCallback: ParseCallback, ToCard: s.CardRefunds.ToCard}
	return web.New(web.Deps{
		Config: cfg, Auth: s.Auth, GatewayLabel: labels, Metrics: s.Metrics, Bank: gws.BankHandler,
		RateLimits: b.o.RateLimits, Log: log, Now: b.now,
		Probes: web.Probes{
			Health: func(ctx context.Context) error { return db.SQL().PingContext(ctx) },
			Ready:  func(ctx context.Context) error { return ready(ctx, db) },
		},
		Features: web.Features{
			API: api.Deps{
				Tokens: s.Tokens, Keys: s.Keys, TopUps: s.TopUps, Wallets: pageWallets, TopUp: s.TopUp, Reads: pageReads,
				Log: log.With("component", "api"), TopUpsPerMinute: cfg.APITopUpsPerMinute,
				UserTopUps: userTopUps, Webhooks: s.Webhooks, Transfers: pageTransfers, Withdrawals: s.Withdrawals, BankAccounts: s.BankAccounts,
				Charges: s.Charges, TokenCharges: tokenCharges, UnknownRecipients: unknownRecipients, AuthFailures: apiAuthFailures,
			},
			Return: payDeps.Return(),
			Account: account.Deps{
				Auth: s.Auth, Tokens: s.Tokens, Webhooks: s.Webhooks, MailQueued: s.Outbox.Kick,
				SignInPerMinute: cfg.RateLimitSignIn, SignUpPerMinute: cfg.RateLimitSignUp, ForgotPerMinute: cfg.RateLimitForgot,
			},
			Wallet: wallet.Deps{
				Wallets: pageWallets, TopUps: s.TopUps, TopUp: s.TopUp, Reads: pageReads, Limits: s.Limits,
				UserTopUps: userTopUps, Transfers: s.Transfers, Withdrawals: s.Withdrawals, Charges: s.Charges,
				UnknownRecipients: unknownRecipients, RecipientPreviews: recipientPreviews,
			},
			Pay:      payDeps,
			Withdraw: withdraw.Deps{Withdrawals: s.Withdrawals, BankAccounts: s.BankAccounts, Wallets: s.Wallets},
			Merchant: merchant.Deps{Charges: s.Charges, Wallets: s.Wallets, TopUps: s.TopUps},
			Admin: admin.Deps{
				TopUps: s.TopUps, Reads: pageReads, People: people.New(db).WithReadPool(s.Reads), Replica: s.Reads, Audit: audit.NewLog(db).WithReadPool(s.Reads), Auth: s.Auth, Tokens: s.Tokens,
				Webhooks: s.Webhooks, Hooks: s.Hooks, Limits: s.Limits, Breakers: gws.breakers,
				GatewayNames: s.Gateways.Names(), GatewayLabel: labels, AbandonedAfter: cfg.WorkerAbandonedAfter,
				Transfers: pageTransfers, Ledger: s.Ledger, Withdrawals: s.Withdrawals, BankAccounts: s.BankAccounts,
				CardRefunds: s.CardRefunds, Charges: s.Charges,
			},
		},
	})
}
