package server

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/ratelimit"
	"github.com/kifpool/kifpool/web"
)

// newWeb builds the web app over the instance's parts: the one place that
// fills web.Deps.
func newWeb(b base, s *Server, gws gateways, reads *paymentread.Reader) *fiber.App {
	cfg, db := b.cfg, b.db
	var userTopUps *ratelimit.Window
	if b.o.RateLimits && cfg.RateLimitTopUp > 0 {
		userTopUps = ratelimit.New(cfg.RateLimitTopUp, time.Minute, b.now)
	}
	return web.New(web.Deps{
		Config: cfg, Auth: s.Auth, Wallets: s.Wallets, Payments: s.Payments, Tokens: s.Tokens,
		TopUp:  s.TopUp,
		People: people.New(db), Reads: reads, Audit: audit.NewLog(db), GatewayNames: s.Gateways.Names(), Metrics: s.Metrics,
		GatewayLabel: drivers.Labeler(cfg.Gateway == config.GatewaySandbox), ParseCallback: ParseCallback,
		Keys: s.Keys, Limits: s.Limits,
		Bank: gws.BankHandler, Log: b.log("web"), Now: b.now, RateLimits: b.o.RateLimits,
		UserTopUps: userTopUps, Outbox: s.Outbox, Webhooks: s.Webhooks, Hooks: s.Hooks,
		Breakers: gws.breakers,
		Health:   func(ctx context.Context) error { return db.SQL().PingContext(ctx) },
		Ready:    func(ctx context.Context) error { return ready(ctx, db) },
	})
}
