package server

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/payout"
	payoutdrivers "github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	wsqlstore "github.com/kifpool/kifpool/internal/withdrawal/sqlstore"
)

// payouts are cash-out's parts: the payout providers PAYOUTS names (each
// behind its own resilient caller: its breaker, the payout_calls log),
// bank accounts (the first provider with an ownership inquiry asks it),
// and the withdrawal lifecycle with its worker.
type payouts struct {
	Store       *wsqlstore.Store
	Callers     []*resilient.Caller
	Accounts    *bankaccount.Service
	Withdrawals *withdrawal.Service
	Worker      *withdrawal.Worker
}

// newPayouts builds them. With PAYOUTS=none there is no provider:
// withdrawals are off (their pages say so), bank accounts wait for an
// admin.
func newPayouts(b base, led *ledger.Ledger, wallets *wallet.Service) (payouts, error) {
	cfg := b.cfg
	w := cfg.Withdrawals
	var p payouts
	p.Store = wsqlstore.New(b.db, led)
	opts := resilientOptions(cfg)
	opts.Now = b.now
	logCalls := b.log("payout_calls")
	opts.Recorder = p.Store.Recorder(func(err error) { logCalls.Error("record a payout call", "err", err) })
	var offers []withdrawal.Offer
	var inquiry bankaccount.Inquiry
	inquiryBy := ""
	for _, name := range w.Providers {
		d, ok := payoutdrivers.Lookup(name)
		if !ok {
			return p, fmt.Errorf("payouts: no driver %q", name)
		}
		inner, err := d.New(w.Settings, payout.Deps{HTTPClient: b.o.HTTPClient, Logger: b.log(name + "_payout"), Now: b.now})
		if err != nil {
			return p, fmt.Errorf("payout provider %s: %w", name, err)
		}
		o := opts
		o.Logger = b.log("resilient").With("provider", name)
		c := resilient.NewCaller(name, o)
		rp := payout.Resilient(inner, c, cfg.RequestTimeout)
		p.Callers = append(p.Callers, c)
		offers = append(offers, withdrawal.Offer{Name: name, Provider: rp, Caps: d.Capabilities})
		if inquiry == nil && rp.Ops().CheckOwner != nil {
			inquiry, inquiryBy = rp.Ops().CheckOwner, name
		}
	}
	if err := p.Store.EnsureAccounts(context.Background(), w.Providers...); err != nil {
		return p, fmt.Errorf("payout accounts: %w", err)
	}
	p.Accounts = bankaccount.New(b.db, b.now, inquiryBy, inquiry, b.log("bank_accounts"))
	p.Withdrawals = withdrawal.New(p.Store, p.Accounts, wallets, offers, withdrawalConfig(b), b.now, b.log("withdrawal"))
	p.Worker = p.Withdrawals.NewWorker(20, cfg.WorkerConcurrency)
	return p, nil
}

// withdrawalConfig is the lifecycle's tuning from the configuration: the
// lease bounds one provider call (the bank calls' budget) and its
// recording.
func withdrawalConfig(b base) withdrawal.Config {
	cfg := b.cfg
	w := cfg.Withdrawals
	return withdrawal.Config{
		MinRials: w.MinRials, DailyMaxRials: w.DailyMaxRials, ReviewAboveRials: w.ReviewAboveRials,
		UnknownReviewAfter: w.UnknownReviewAfter, InProgressReviewAfter: w.InProgressReviewAfter, WatchPaid: w.WatchPaid,
		LeaseDuration: cfg.Budget + cfg.RequestTimeout + 10e9,
		BaseBackoff:   cfg.WorkerBackoffBase, MaxBackoff: cfg.WorkerBackoffMax, Schedule: w.Schedule,
		// Spread in time: withdrawals asked about together (a provider's
		// outage) are not all asked again at the same moment, by every
		// instance.
		Jitter: rand.Float64, // #nosec G404 -- spreads retries in time; no secret
	}
}
