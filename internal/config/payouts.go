package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/payout"
	payoutdrivers "github.com/kifpool/kifpool/internal/payout/drivers"
	"github.com/kifpool/kifpool/internal/rail"
	"github.com/kifpool/kifpool/internal/routes"
)

// The PAYOUTS values that are no driver's name.
const (
	// PayoutsSandbox is the sandbox bank's payout provider (every payout
	// protocol it imitates; no real money).
	PayoutsSandbox = payoutdrivers.Sandbox
	// PayoutsNone turns withdrawals off.
	PayoutsNone = payoutdrivers.None
)

// groupWithdrawals is the reference's section of withdrawals.
const groupWithdrawals = "Withdrawals and payout providers"

// Withdrawals are the settings of cash-out to bank accounts.
type Withdrawals struct {
	// Payouts is PAYOUTS as set: "sandbox", "none", or the drivers' names
	// joined by commas.
	Payouts string
	// Providers are the drivers' names in the order new withdrawals go
	// to them (with PAYOUTS=sandbox, every driver against the sandbox
	// bank; none with PAYOUTS=none).
	Providers []string
	// Settings are the drivers' checked settings (against the sandbox
	// bank, their sandbox settings).
	Settings gateway.Settings
	// MinRials is the smallest withdrawal, DailyMaxRials the most a person
	// (a national code) may withdraw per Tehran day (0: no limit), ReviewAboveRials the
	// amount above which a withdrawal waits for an admin (0: none does).
	MinRials, DailyMaxRials, ReviewAboveRials int64
	// UnknownReviewAfter: a submitted payout the provider still does not
	// know after this long, with a provider whose submit cannot be
	// repeated, waits for an admin.
	UnknownReviewAfter time.Duration
	// InProgressReviewAfter: a payout the provider still has in progress
	// this long after its first submit waits for an admin too (its money
	// held, still asked about).
	InProgressReviewAfter time.Duration
	// WatchPaid: how long the worker keeps asking closely about a paid
	// withdrawal whose provider may still fail it (Jibit's
	// MANUALLY_FAILED); then once a day until withdrawal.LateWatchHorizon
	// after it was paid.
	WatchPaid time.Duration
	// ReconcileInterval: how often payouts are reconciled with each
	// provider (0: off).
	ReconcileInterval time.Duration
	// Schedule is the rails' schedule (Tehran time).
	Schedule rail.Schedule
}

// On reports whether withdrawals are offered.
func (w Withdrawals) On() bool { return len(w.Providers) > 0 }

// Sandbox reports whether the providers are the sandbox bank's.
func (w Withdrawals) Sandbox() bool { return w.Payouts == PayoutsSandbox }

// payoutEnabled reports whether PAYOUTS names the driver (a real
// provider, not the sandbox bank's).
func (c *Config) payoutEnabled(name string) bool {
	return c.Withdrawals.Payouts != PayoutsSandbox && slices.Contains(c.Withdrawals.Providers, name)
}

// payoutDriverGroup is the reference's section of a payout driver.
func payoutDriverGroup(d payout.Driver) string {
	return fmt.Sprintf("Payout provider: %s (`%s` in `PAYOUTS`)", d.Label, d.Name)
}

// parsePayouts reads a PAYOUTS value.
func parsePayouts(v string) ([]string, error) {
	if v == PayoutsSandbox || v == PayoutsNone {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == PayoutsSandbox || n == PayoutsNone:
			return nil, fmt.Errorf("`%s` stands alone, got %q", n, v)
		case n == "":
			return nil, fmt.Errorf("an empty name in %q", v)
		case slices.Contains(out, n):
			return nil, fmt.Errorf("%s named twice in %q", n, v)
		}
		if _, ok := payoutdrivers.Lookup(n); !ok {
			return nil, fmt.Errorf("want `sandbox`, `none` or names among %s, got %q", strings.Join(payoutdrivers.Names(), ", "), n)
		}
		out = append(out, n)
	}
	return out, nil
}

// payoutOptions are the withdrawals' variables and each payout driver's
// settings (read only when PAYOUTS names it).
func payoutOptions() []Option {
	opts := []Option{
		{Name: "PAYOUTS", Group: groupWithdrawals, Default: PayoutsSandbox,
			DefaultDoc: "`sandbox` with `GATEWAYS=sandbox`, else `none`",
			dynamic: func(c *Config, _ Getenv) string {
				if c.Gateway == GatewaySandbox {
					return PayoutsSandbox
				}
				return PayoutsNone
			},
			Doc: "the payout providers withdrawals go through, in order (a new withdrawal goes to the first that is up): driver names separated by commas (`jibit,zibal`), each with its own variables below; `sandbox`: the built-in sandbox bank's payout provider (no real money, only with `GATEWAYS=sandbox`); `none`: no withdrawals",
			p: parser{accepts: "`sandbox`, `none`, or a comma-separated list of `" + strings.Join(payoutdrivers.Names(), "`, `") + "`",
				set: func(c *Config, v string) error {
					names, err := parsePayouts(v)
					if err != nil {
						return err
					}
					w := &c.Withdrawals
					w.Payouts, w.Providers = strings.Join(names, ","), names
					switch v {
					case PayoutsSandbox:
						w.Payouts, w.Providers = PayoutsSandbox, payoutdrivers.SandboxNames()
					case PayoutsNone:
						w.Payouts = PayoutsNone
					}
					return nil
				},
				show: func(c Config) string { return c.Withdrawals.Payouts }}},
		{Name: "WITHDRAWAL_MIN_RIALS", Group: groupWithdrawals, Default: "100000",
			Doc: "smallest withdrawal; whole tomans, at least each provider's minimum",
			p:   rialsField(func(c *Config) *int64 { return &c.Withdrawals.MinRials })},
		{Name: "WITHDRAWAL_DAILY_MAX_RIALS", Group: groupWithdrawals, Default: "2000000000",
			Doc: "rials a person may withdraw per Tehran calendar day, counted over every account that gave the same national code (withdrawals not failed, rejected or cancelled); the API answers `422` `daily_limit_exceeded`; the default is the published cap of Paya and Satna orders per person and day (200 M toman); `0` turns it off",
			p:   limitField(func(c *Config) *int64 { return &c.Withdrawals.DailyMaxRials })},
		{Name: "WITHDRAWAL_REVIEW_ABOVE_RIALS", Group: groupWithdrawals, Default: "500000000",
			Doc: "a withdrawal above this waits in `/admin/withdrawals` for an admin to approve or reject it before it is sent; `0`: none waits",
			p:   limitField(func(c *Config) *int64 { return &c.Withdrawals.ReviewAboveRials })},
		{Name: "WITHDRAWAL_UNKNOWN_REVIEW_AFTER", Group: groupWithdrawals, Default: "24h",
			Doc: "a payout whose submit's outcome is still unknown after this long waits for an admin (`needs_review`, its money held): one the provider does not know, or whose status cannot be read at all; until then a provider that keeps one payout per id (Jibit) is sent it again, one that cannot (Zibal) only asked. A payout the provider refused \"for now\" at every submit (its balance short, our address not allowed) goes to the admin this long after its first submit too, and is no longer sent",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.Withdrawals.UnknownReviewAfter })},
		{Name: "WITHDRAWAL_IN_PROGRESS_REVIEW_AFTER", Group: groupWithdrawals, Default: "96h",
			Doc: "a payout the provider still has in progress this long after its first submit waits for an admin too (`needs_review`, reason `in_progress_too_long`): its money stays held, an admin cannot close it as failed while the provider's last word is in progress, and the worker keeps asking, so the provider's transferred or failed still ends it. Paya settles in cycles on working days only, so a payout sent before a long holiday may rightly take days: the default (four days) covers a weekend and a holiday or two",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.Withdrawals.InProgressReviewAfter })},
		{Name: "WITHDRAWAL_WATCH_PAID", Group: groupWithdrawals, Default: "72h",
			Doc: "how long the worker keeps asking closely (at its back-off) about a paid withdrawal a provider may still fail by hand (Jibit's `MANUALLY_FAILED`); after it, the worker asks about it once a day until 30 days after it was paid (a slow Paya return), then no more; the daily reconciliation compares it for seven days after its payment too",
			p:   durationField(0, func(c *Config) *time.Duration { return &c.Withdrawals.WatchPaid })},
		{Name: "PAYOUT_RECONCILE_INTERVAL", Group: groupWithdrawals, Default: "24h",
			Doc: "how often our paid, returned and in-flight withdrawals are compared with each provider's list (or inquiry) and the report stored for the admins; differences are flagged, never fixed. Each instance asks every 10 minutes whether a provider's newest stored report is this old (a failed run: an hour), so restarts do not put it off",
			p:   durationOrOffField(func(c *Config) *time.Duration { return &c.Withdrawals.ReconcileInterval })},
		{Name: "PAYA_CYCLES", Group: groupWithdrawals, Default: "03:45,09:45,12:45,18:45",
			Doc: "the cut-offs of Paya's cycles on working days, Tehran time (the published ones): the withdrawal page's arrival estimate",
			p:   cyclesField(func(c *Config) *[]rail.Clock { return &c.Withdrawals.Schedule.PayaCycles })},
		{Name: "PAYA_HOLIDAY_CYCLES", Group: groupWithdrawals, Default: "03:45",
			Doc: "the cut-offs of Paya's cycles on Fridays (the sources disagree between 03:45 and 12:45: confirm with the provider)",
			p:   cyclesField(func(c *Config) *[]rail.Clock { return &c.Withdrawals.Schedule.PayaHolidayCycles })},
		{Name: "SATNA_CUTOFF", Group: groupWithdrawals, Default: "14:30",
			Doc: "the last time of a working day a Satna order is taken, Tehran time",
			p: parser{accepts: "a time of day, `HH:MM`",
				set: func(c *Config, v string) error {
					t, err := rail.ParseClock(v)
					if err != nil {
						return err
					}
					c.Withdrawals.Schedule.SatnaCutoff = t
					return nil
				},
				show: func(c Config) string { return c.Withdrawals.Schedule.SatnaCutoff.String() }}},
	}
	for _, d := range payoutdrivers.All() {
		for _, st := range d.Settings {
			o := Option{Name: st.Env, Group: payoutDriverGroup(d), Default: st.Default, Secret: st.Secret, driver: d.Name,
				Doc: st.Doc + "; read only when `PAYOUTS` names `" + d.Name + "`"}
			if st.Required {
				o.DefaultDoc = "*(unset)*: required when `PAYOUTS` names `" + d.Name + "`"
			}
			o.p = parser{accepts: "see its meaning",
				set: func(c *Config, v string) error {
					if !c.payoutEnabled(d.Name) {
						return nil
					}
					if c.Withdrawals.Settings == nil {
						c.Withdrawals.Settings = gateway.Settings{}
					}
					delete(c.Withdrawals.Settings, st.Env)
					if v == "" {
						if st.Required {
							return fmt.Errorf("required when PAYOUTS names %s: %s", d.Name, st.Doc)
						}
						return nil
					}
					norm, err := st.Check(v)
					if err != nil {
						return err
					}
					c.Withdrawals.Settings[st.Env] = norm
					return nil
				},
				show: func(c Config) string {
					if !c.payoutEnabled(d.Name) {
						return ""
					}
					return c.Withdrawals.Settings[st.Env]
				}}
			opts = append(opts, o)
		}
	}
	return opts
}

func cyclesField(field func(*Config) *[]rail.Clock) parser {
	return parser{accepts: "times of day `HH:MM`, separated by commas",
		set: func(c *Config, v string) error {
			cs, err := rail.ParseCycles(v)
			if err != nil {
				return err
			}
			*field(c) = cs
			return nil
		},
		show: func(c Config) string { return rail.FormatCycles(*field(&c)) }}
}

// checkPayouts applies the rules that tie the withdrawals' options to
// the others: never a real payout from sandbox money nor a sandbox payout
// of real money, the minimum above every provider's, and the sandbox
// providers' settings.
func (c *Config) checkPayouts(l *loader) {
	w := &c.Withdrawals
	w.Schedule.PayoutDelay = rail.Default().PayoutDelay
	if !l.ok("PAYOUTS", "GATEWAYS", "GATEWAY") {
		return
	}
	switch {
	case w.Payouts == PayoutsSandbox && c.Gateway != GatewaySandbox:
		l.bad("PAYOUTS", "the sandbox payout provider pays nobody, while GATEWAYS=%s takes real money: withdrawals would take it from wallets and send it nowhere; set PAYOUTS to real providers (%s) or `none`", c.Gateway, strings.Join(payoutdrivers.Names(), ", "))
	case w.On() && w.Payouts != PayoutsSandbox && c.Gateway == GatewaySandbox:
		l.bad("PAYOUTS", "real payout providers would pay out real money for the sandbox bank's top-ups (GATEWAYS=sandbox): set PAYOUTS=sandbox, or real GATEWAYS")
	}
	if l.ok("WITHDRAWAL_MIN_RIALS") {
		if w.MinRials%money.RialsPerToman != 0 {
			l.bad("WITHDRAWAL_MIN_RIALS", "must be whole tomans (a multiple of 10 rials)")
		}
		for _, name := range w.Providers {
			if d, ok := payoutdrivers.Lookup(name); ok && w.MinRials < d.Capabilities.MinAmountRials {
				l.bad("WITHDRAWAL_MIN_RIALS", "must be at least %d (%s's minimum), got %d", d.Capabilities.MinAmountRials, d.Name, w.MinRials)
			}
		}
	}
	if l.ok("WITHDRAWAL_MIN_RIALS", "WITHDRAWAL_DAILY_MAX_RIALS") && w.DailyMaxRials != 0 && w.DailyMaxRials < w.MinRials {
		l.bad("WITHDRAWAL_DAILY_MAX_RIALS", "must not be below WITHDRAWAL_MIN_RIALS (%d), or 0", w.MinRials)
	}
	if w.Sandbox() {
		w.Settings = gateway.Settings{}
		for _, name := range w.Providers {
			if d, ok := payoutdrivers.Lookup(name); ok {
				maps.Copy(w.Settings, d.Sandbox.Settings(c.BaseURL+routes.Sandbank))
			}
		}
	}
	for _, d := range payoutdrivers.All() {
		if c.payoutEnabled(d.Name) {
			continue
		}
		var set []string
		for _, st := range d.Settings {
			if l.set[st.Env] {
				set = append(set, st.Env)
			}
		}
		if len(set) > 0 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s set, but PAYOUTS does not name %s: not used", strings.Join(set, ", "), d.Name))
		}
	}
}
