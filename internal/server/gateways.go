package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/sandbank"
)

// gateways are the banks an instance offers, in the configuration's order.
type gateways struct {
	// Drivers are the registry's entries offered.
	Drivers []gateway.Driver
	// Set and Resilients are each driver's resilient caller (its own
	// breaker, so that one bank down leaves the others taking top-ups).
	Set        gateway.Set
	Resilients []*resilient.Gateway
	// Bank is the built-in sandbox bank and BankHandler its pages (nil
	// unless GATEWAY=sandbox).
	Bank        *sandbank.Bank
	BankHandler http.Handler
}

// newGateways builds the offered drivers (or the options' replacements),
// each behind a resilient caller tuned by the configuration and reporting
// to recorder, with the sandbox bank when it is the gateway, and makes the
// ledger's clearing accounts of each.
func newGateways(b base, led *ledger.Ledger, recorder resilient.Recorder) (gateways, error) {
	var g gateways
	drvs, err := offered(b)
	if err != nil {
		return g, err
	}
	if g.Bank, err = sandboxBank(b); err != nil {
		return g, err
	}
	if g.Bank != nil {
		g.BankHandler = g.Bank.Handler()
	}
	opts := resilientOptions(b.cfg)
	opts.Now = b.now // gateway_calls of every instance on one clock
	names := make([]string, len(drvs))
	for i, drv := range drvs {
		inner := b.o.Gateways[drv.Name]
		if i == 0 && b.o.Gateway != nil {
			inner = b.o.Gateway
		}
		if inner == nil {
			if inner, err = drv.New(b.cfg.GatewaySettings, gateway.Deps{HTTPClient: b.o.HTTPClient, Logger: b.log(drv.Name), Now: b.now}); err != nil {
				return g, fmt.Errorf("gateway %s: %w", drv.Name, err)
			}
		}
		opts.Recorder, opts.Logger = recorder, b.log("resilient").With("gateway", inner.Name())
		r := resilient.New(inner, opts)
		g.Resilients, g.Set, names[i] = append(g.Resilients, r), append(g.Set, r), drv.Name
	}
	if err := led.EnsureClearing(context.Background(), names...); err != nil {
		return g, fmt.Errorf("clearing accounts: %w", err)
	}
	g.Drivers = drvs
	return g, nil
}

// offered are the registry's drivers the configuration names; with
// GATEWAYS=sandbox, those the built-in bank imitates and the flow serves.
func offered(b base) ([]gateway.Driver, error) {
	var drvs []gateway.Driver
	sandbox := b.cfg.Gateway == config.GatewaySandbox
	for _, name := range b.cfg.Gateways {
		drv, ok := drivers.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("gateway: no driver %q (want one of %v)", name, drivers.Names())
		}
		if sandbox && (!sandbank.Speaks(drv.Sandbox.Protocol) || drivers.Supported(drv) != nil) {
			b.o.Log.Debug("sandbox: gateway not offered yet", "gateway", name)
			continue
		}
		if err := drivers.Supported(drv); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		drvs = append(drvs, drv)
	}
	if len(drvs) == 0 {
		return nil, fmt.Errorf("gateway: none of %v can be offered", b.cfg.Gateways)
	}
	return drvs, nil
}

// sandboxBank is the options' bank or the built-in one when the sandbox
// is the gateway (nil otherwise). The built-in bank's payments may call
// back only to this app (its "pay" button must not become a redirect to
// anywhere), and are kept under DATA_DIR, so that a restart of serve
// orphans none of those still open.
func sandboxBank(b base) (*sandbank.Bank, error) {
	if b.cfg.Gateway != config.GatewaySandbox {
		return nil, nil
	}
	if b.o.Bank != nil {
		return b.o.Bank, nil
	}
	return sandbank.Open(sandbank.Options{Logger: b.log("sandbank"), NoControlAPI: true,
		CallbackOrigin: originOf(b.cfg.BaseURL), StateFile: filepath.Join(b.cfg.DataDir, SandbankStateFile)})
}

// resilientOptions are the resilient callers' tuning from the
// configuration (GATEWAY_*, BREAKER_*).
func resilientOptions(cfg config.Config) resilient.Options {
	return resilient.Options{
		AttemptTimeout: cfg.AttemptTimeout, Budget: cfg.Budget, RequestTimeout: cfg.RequestTimeout,
		Breaker: resilient.BreakerOptions{
			Window: cfg.BreakerWindow, MinRequests: cfg.BreakerMinRequests,
			FailureRatio: float64(cfg.BreakerFailurePercent) / 100, OpenTimeout: cfg.BreakerOpenTimeout,
		},
	}
}

// breakers are the gateways' breakers in this instance, for the metrics
// and the admin's pages.
func (g gateways) breakers() []resilient.BreakerState {
	out := make([]resilient.BreakerState, len(g.Resilients))
	for i, r := range g.Resilients {
		out[i] = r.BreakerState()
	}
	return out
}
