package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// Driver is one gateway as a plug-in: everything the rest of Kifpool
// needs to know of it, declared in the gateway's own package and listed
// once in the registry (internal/gateway/drivers). The configuration,
// the wiring, the callback route, the admin console and the sandbox bank
// all find the gateway through its Driver, never by its name.
type Driver struct {
	// Name is the stable identifier: the GATEWAY value, and what payments,
	// events, gateway_calls and metrics store ("zarinpal"). Never renamed.
	Name string
	// Label names the gateway for people (the admin console, the banner).
	Label string
	// Capabilities describe its protocol (see Capabilities).
	Capabilities Capabilities
	// ParseCallback reads the browser callback's parameters (GET query,
	// or for a POST the form body too), with the gateway's own field
	// names. ok is false when the callback carries no usable token.
	ParseCallback func(query, form func(key string) string, isPost bool) (p callback.Params, ok bool)
	// Settings are the environment variables the driver reads (besides
	// GATEWAY); the configuration reads, defaults and checks them.
	Settings []Setting
	// URLSetting names the setting holding the gateway's API base (shown
	// by serve's banner).
	URLSetting string
	// New builds the driver from its checked settings.
	New func(s Settings, d Deps) (Gateway, error)
	// Sandbox says how the built-in sandbox bank (GATEWAY=sandbox)
	// imitates the gateway.
	Sandbox Sandbox
}

// Setting is one environment variable of a driver.
type Setting struct {
	Env     string // e.g. ZARINPAL_MERCHANT_ID
	Default string // "" with Required: it must be set
	// Required: GATEWAY=<this driver> needs it set.
	Required bool
	// Secret: never shown (logs, `kifpool config`, errors).
	Secret bool
	Doc    string // one sentence for the configuration reference
	// With names another of the driver's settings that must be set
	// whenever this one is (and this one with it): the configuration is
	// refused at start, naming both, when only one is set.
	With string
	// Check validates the value (trimmed, default applied) and returns it
	// normalized (e.g. lower case, no trailing slash).
	Check func(v string) (string, error)
}

// Settings are a driver's checked values by environment variable.
type Settings map[string]string

// Deps are what a driver is built with besides its settings.
type Deps struct {
	// HTTPClient sends the bank calls (no overall Timeout: each call's
	// context carries the deadline).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock the driver reads the time from (a Retry-After
	// date, Tehran's local date of a request); nil: time.Now. Elapsed
	// times of calls are measured by the monotonic clock, not by Now.
	Now func() time.Time
}

// Sandbox is how the built-in sandbox bank (internal/sandbank) serves a
// gateway.
type Sandbox struct {
	// Protocol is the sandbox bank's imitation of the gateway's protocol
	// ("zarinpal-v4"); the sandbox bank lists those it speaks.
	Protocol string
	// Settings are the driver's settings against the sandbox bank at
	// bankURL (its API base). Nil: the sandbox bank cannot stand in for
	// this gateway.
	Settings func(bankURL string) Settings
}

// RedirectMethod is how the payer's browser is sent to the bank's page.
type RedirectMethod int

const (
	_ RedirectMethod = iota // 0: unset (Driver.Check refuses it)
	// RedirectGET: a plain redirect (303) to the pay URL.
	RedirectGET
	// RedirectPOSTForm: an auto-submitted HTML form posting the token.
	RedirectPOSTForm
)

// HTTPMethods is a set of methods a callback may arrive with.
type HTTPMethods int

const (
	CallbackGET HTTPMethods = 1 << iota
	CallbackPOST
)

// Window is a time limit of the bank's: known, unknown (the gateway does
// not document it), or none at all (the operation does not exist).
type Window struct {
	Kind   WindowKind
	Within time.Duration // with WindowWithin
}

// WindowKind says what is known of a Window.
type WindowKind int

const (
	windowUnset WindowKind = iota
	// WindowWithin: the operation must happen within Window.Within.
	WindowWithin
	// WindowUnknown: the gateway does not document a limit.
	WindowUnknown
	// WindowNone: the operation does not exist (Zibal cannot reverse).
	WindowNone
)

// Within is a documented limit.
func Within(d time.Duration) Window { return Window{Kind: WindowWithin, Within: d} }

// Signal is one way the bank says "this payment was verified before"
// (Zarinpal verify 101, Zibal 201, SEP ResultCode 2, Mellat 43 and settle
// 45, PayPing HTTP 409 with 110): the payment is good, and whether to
// credit depends on our own records alone.
type Signal struct {
	Op         string // the operation answering it: "verify", "settle"
	Code       int    // the gateway's code
	HTTPStatus int    // when the signal is (also) an HTTP status; 0 otherwise
}

// CallbackData says whether verify needs what only the callback carries.
type CallbackData int

const (
	_ CallbackData = iota // 0: unset (Driver.Check refuses it)
	// VerifyWithoutCallback: our own row suffices (Zarinpal, Zibal): a
	// payer who never came back can be verified by the worker.
	VerifyWithoutCallback
	// VerifyNeedsCallback: verify needs the callback's fields (Mellat's
	// SaleReferenceId, SEP's RefNum): without a callback only an inquiry,
	// if any, can learn the outcome.
	VerifyNeedsCallback
)

// ReconcileSources is how reconciliation learns of payments the bank holds.
type ReconcileSources int

const (
	// ReconcileList: a list of paid-but-unverified payments (Zarinpal's
	// unVerified).
	ReconcileList ReconcileSources = 1 << iota
	// ReconcileInquiry: a per-payment inquiry (Zarinpal, Zibal, Mellat).
	ReconcileInquiry
)

// Unit is the unit of the gateway's amounts on the wire. Kifpool's
// amounts are rials everywhere; a toman driver converts at its edge.
type Unit int

const (
	_ Unit = iota // 0: unset (Driver.Check refuses it)
	UnitRial
	UnitToman
)

// Capabilities are the facts of a gateway's protocol that the payment
// code and its operators depend on (see ARCHITECTURE §6).
type Capabilities struct {
	// Redirect: how the payer is sent to the bank.
	Redirect RedirectMethod
	// Callback: the methods the bank's callback arrives with (the route
	// accepts both; this records the gateway's).
	Callback HTTPMethods
	// AlreadyVerified: the answers meaning "verified before".
	AlreadyVerified []Signal
	// VerifyDeadline: how long after payment verify is still accepted
	// (after it the bank returns the money to the payer).
	VerifyDeadline Window
	// ReverseWindow: how long a verified payment can still be reversed.
	ReverseWindow Window
	// Settle: whether a verified payment must also be settled (Mellat's
	// bpSettleRequest) and within how long after verify; WindowNone: the
	// gateway has no settle (verify alone makes the money ours).
	Settle Window
	// VerifyData: whether verify needs data from the callback.
	VerifyData CallbackData
	// Receipt: for a gateway whose verify needs the callback's data, how
	// long after the token the bank's receipt of the token still names
	// that data (SEP's receipt API: one hour, and only before verify or
	// reverse), so that a payment whose callback was lost can still be
	// verified and reconciled; WindowNone: only the callback carries it
	// (Mellat). Left unset by gateways that verify without the callback.
	Receipt Window
	// Reconcile: the sources reconciliation can use.
	Reconcile ReconcileSources
	// Unit of amounts on the wire.
	Unit Unit
	// MinAmountRials is the smallest payment the gateway takes
	// (TOPUP_MIN_RIALS may not be lower).
	MinAmountRials int64
	// CardRefund: how a credited top-up goes back to the payer's card
	// (refund.go).
	CardRefund CardRefund
}

// Check reports every part of the driver that is missing or unset: a
// registry entry must be complete.
func (d Driver) Check() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("driver %q: "+format, append([]any{d.Name}, a...)...))
	}
	if d.Name == "" || d.Label == "" {
		bad("name and label are required")
	}
	if d.ParseCallback == nil {
		bad("no callback parser")
	}
	if d.New == nil {
		bad("no constructor")
	}
	c := d.Capabilities
	if c.Redirect != RedirectGET && c.Redirect != RedirectPOSTForm {
		bad("capability Redirect unset")
	}
	if c.Callback == 0 || c.Callback&^(CallbackGET|CallbackPOST) != 0 {
		bad("capability Callback unset")
	}
	if len(c.AlreadyVerified) == 0 {
		bad("capability AlreadyVerified unset")
	}
	for _, s := range c.AlreadyVerified {
		if s.Op == "" || (s.Code == 0 && s.HTTPStatus == 0) {
			bad("AlreadyVerified signal %+v names no operation or code", s)
		}
	}
	for name, w := range map[string]Window{"VerifyDeadline": c.VerifyDeadline, "ReverseWindow": c.ReverseWindow, "Settle": c.Settle} {
		switch {
		case w.Kind == windowUnset || w.Kind > WindowNone:
			bad("capability %s unset", name)
		case w.Kind == WindowWithin && w.Within <= 0:
			bad("capability %s: a limit needs a duration", name)
		case w.Kind != WindowWithin && w.Within != 0:
			bad("capability %s: a duration without WindowWithin", name)
		}
	}
	if c.VerifyData != VerifyWithoutCallback && c.VerifyData != VerifyNeedsCallback {
		bad("capability VerifyData unset")
	}
	switch r := c.Receipt; {
	case c.VerifyData == VerifyNeedsCallback && r.Kind != WindowWithin && r.Kind != WindowNone:
		bad("capability Receipt unset: verify needs the callback; say whether a receipt of the token stands in for it")
	case r.Kind == WindowWithin && (r.Within <= 0 || c.VerifyData != VerifyNeedsCallback):
		bad("capability Receipt: a limit needs a duration, and a gateway whose verify needs the callback")
	case r.Kind != WindowWithin && r.Within != 0:
		bad("capability Receipt: a duration without WindowWithin")
	}
	if c.Reconcile == 0 || c.Reconcile&^(ReconcileList|ReconcileInquiry) != 0 {
		bad("capability Reconcile unset")
	}
	if c.Unit != UnitRial && c.Unit != UnitToman {
		bad("capability Unit unset")
	}
	if c.MinAmountRials <= 0 {
		bad("capability MinAmountRials unset")
	}
	for _, err := range c.CardRefund.check(c.ReverseWindow) {
		bad("%v", err)
	}
	seen := map[string]bool{}
	for _, s := range d.Settings {
		if s.Env == "" || s.Doc == "" || s.Check == nil {
			bad("setting %q needs a name, a sentence and a check", s.Env)
		}
		if s.Required && s.Default != "" {
			bad("setting %s is required and has a default", s.Env)
		}
		if seen[s.Env] {
			bad("setting %s declared twice", s.Env)
		}
		seen[s.Env] = true
	}
	if d.URLSetting != "" && !seen[d.URLSetting] {
		bad("URLSetting %s is not one of its settings", d.URLSetting)
	}
	if d.Sandbox.Settings != nil && d.Sandbox.Protocol == "" {
		bad("sandbox settings without a sandbox protocol")
	}
	return errors.Join(errs...)
}

// Read reads, defaults and checks the driver's settings from getenv.
// Each problem names its variable.
func (d Driver) Read(getenv func(string) string) (Settings, []error) {
	out := Settings{}
	var errs []error
	for _, s := range d.Settings {
		v := strings.TrimSpace(getenv(s.Env))
		if v == "" {
			v = s.Default
		}
		if v == "" && s.Required {
			errs = append(errs, fmt.Errorf("%s: required with GATEWAY=%s: %s", s.Env, d.Name, s.Doc))
			continue
		}
		if v == "" {
			continue
		}
		norm, err := s.Check(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Env, err))
			continue
		}
		out[s.Env] = norm
	}
	return out, errs
}
