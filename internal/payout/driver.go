package payout

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/rail"
)

// Driver is one payout provider as a plug-in: everything the rest of
// Kifpool knows of it, declared in its own package and listed once in
// payout/drivers. The configuration (PAYOUTS and the driver's settings),
// the wiring, the withdrawal lifecycle and the sandbox bank find it
// through its Driver, never by its name.
type Driver struct {
	// Name is the stable identifier: the PAYOUTS value, and what
	// withdrawals and the call log store ("jibit"). Never renamed.
	Name string
	// Label names it for people (the admin console).
	Label        string
	Capabilities Capabilities
	// Settings are the environment variables it reads (besides PAYOUTS),
	// read and checked by the configuration like a gateway's.
	Settings []gateway.Setting
	// New builds the driver from its checked settings.
	New func(s gateway.Settings, d Deps) (Provider, error)
	// Sandbox says how the sandbox bank imitates it.
	Sandbox Sandbox
}

// Deps are what a driver is built with besides its settings.
type Deps struct {
	// HTTPClient sends the calls (no overall Timeout: each call's
	// context carries the deadline).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the driver's clock (a token's expiry, a list's dates); nil:
	// time.Now.
	Now func() time.Time
}

// Sandbox is how the sandbox bank (internal/sandbank) serves a provider.
type Sandbox struct {
	// Protocol is the sandbox bank's imitation ("jibit-transferor").
	Protocol string
	// Settings are the driver's settings against the sandbox bank at
	// bankURL (its API base).
	Settings func(bankURL string) gateway.Settings
}

// Reconcile is how reconciliation learns of a provider's payouts.
type Reconcile int

const (
	_ Reconcile = iota // 0: unset (Check refuses it)
	// ReconcileList: a list of payouts by date (Jibit's transfers
	// filter): what the provider holds that we do not shows up.
	ReconcileList
	// ReconcileInquiry: one inquiry per payout of ours (Zibal's
	// checkout inquiry): only our own payouts can be compared.
	ReconcileInquiry
)

// Capabilities are the facts of a provider's protocol the withdrawal
// lifecycle and its operators depend on.
type Capabilities struct {
	// IdempotentSubmit: the provider keeps one payout per id and answers
	// a second submit of it "already exists" (Jibit's
	// transfer.already_exists): after an unknown outcome the worker may
	// submit the same order again. False: it never does; it asks Status
	// until the provider knows, and a payout the provider still does not
	// know of after WITHDRAWAL_UNKNOWN_REVIEW_AFTER waits for a person.
	IdempotentSubmit bool
	// LateFailure: a transferred payout may still fail later and its
	// money come back (Jibit's MANUALLY_FAILED): the worker keeps asking
	// about paid withdrawals for a while, and reconciliation every day.
	LateFailure bool
	// Rails it sends on.
	Rails []rail.Rail
	// Reconcile: how reconciliation compares.
	Reconcile Reconcile
	// Unit of its amounts on the wire.
	Unit gateway.Unit
	// MinAmountRials and MaxAmountRials bound one payout (0: no maximum).
	MinAmountRials, MaxAmountRials int64
}

// Check reports every part of the driver that is missing or unset.
func (d Driver) Check() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("payout driver %q: "+format, append([]any{d.Name}, a...)...))
	}
	if d.Name == "" || d.Label == "" {
		bad("name and label are required")
	}
	if d.New == nil {
		bad("no constructor")
	}
	c := d.Capabilities
	if len(c.Rails) == 0 {
		bad("capability Rails unset")
	}
	for _, r := range c.Rails {
		if !r.Valid() {
			bad("unknown rail %q", r)
		}
	}
	if c.Reconcile != ReconcileList && c.Reconcile != ReconcileInquiry {
		bad("capability Reconcile unset")
	}
	if c.Unit != gateway.UnitRial && c.Unit != gateway.UnitToman {
		bad("capability Unit unset")
	}
	if c.MinAmountRials <= 0 {
		bad("capability MinAmountRials unset")
	}
	if d.Sandbox.Protocol == "" || d.Sandbox.Settings == nil {
		bad("no sandbox imitation")
	}
	for _, s := range d.Settings {
		if s.Env == "" || s.Doc == "" || s.Check == nil {
			bad("setting %q incomplete", s.Env)
		}
	}
	return errors.Join(errs...)
}
