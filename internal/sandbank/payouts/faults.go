package payouts

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"
)

// ErrInvalidFaults is wrapped by the errors of Faults.Validate.
var ErrInvalidFaults = errors.New("sandbank: invalid payout faults")

// DefaultHang is how long a withheld answer is held at most when HangMS
// is 0 (unless the client gives up first).
const DefaultHang = 30 * time.Second

// Faults are the payout provider's faults, per provider ("jibit",
// "zibal"). It is what POST /_sandbank/payouts/faults takes and GET
// shows, e.g.
//
//	{"seed": 7, "providers": {"jibit": {"accept_then_hang_rate": 0.3,
//	 "duplicate_rate": 0.2, "late_fail_rate": 0.5}, "zibal":
//	 {"balance_short": true}}}
type Faults struct {
	Seed      uint64                    `json:"seed,omitempty"`
	Providers map[string]ProviderFaults `json:"providers,omitempty"`
}

// ProviderFaults are one provider's faults. Rates are shares of the
// calls in [0, 1]; durations are milliseconds.
type ProviderFaults struct {
	// AcceptThenHangRate (submit): the payout is taken, then the answer
	// is withheld until the client gives up or HangMS passes, and the
	// connection is dropped: a time-out after accepting.
	AcceptThenHangRate float64 `json:"accept_then_hang_rate,omitempty"`
	// DuplicateRate (submit): the submit reaches the provider twice (a
	// proxy resent it); the client gets the second arrival's answer,
	// "already exists". One payout all the same.
	DuplicateRate float64 `json:"duplicate_rate,omitempty"`
	// LateFailRate (Jibit): a payout transferred is marked to be failed
	// by hand; its next inquiry finds it MANUALLY_FAILED, the money back.
	LateFailRate float64 `json:"late_fail_rate,omitempty"`
	// ErrorRate: answered 503 without doing anything (any call).
	ErrorRate float64 `json:"error_rate,omitempty"`
	// BalanceShort: every submit is refused, the provider's own balance
	// being short; nothing is taken.
	BalanceShort bool `json:"balance_short,omitempty"`
	// Maintenance: every call is answered 503 "under maintenance",
	// nothing done.
	Maintenance bool `json:"maintenance,omitempty"`
	// NoUpstream (Zibal): the ownership inquiry answers 45, no upstream
	// provider.
	NoUpstream bool `json:"no_upstream,omitempty"`
	// AutoSettle: an inquiry of an in-progress payout transfers it.
	AutoSettle bool `json:"auto_settle,omitempty"`
	// HangMS bounds a withheld answer (0: DefaultHang).
	HangMS int64 `json:"hang_ms,omitempty"`
}

// Validate reports every problem of f (known providers, rates in [0, 1],
// durations from 0 to an hour).
func (f Faults) Validate() error {
	var probs []string
	names := make([]string, 0, len(f.Providers))
	for n := range f.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pf := f.Providers[n]
		if n != Jibit && n != Zibal {
			probs = append(probs, fmt.Sprintf("providers: unknown provider %q (known: jibit, zibal)", n))
			continue
		}
		for _, r := range []struct {
			name string
			v    float64
		}{{"accept_then_hang_rate", pf.AcceptThenHangRate}, {"duplicate_rate", pf.DuplicateRate},
			{"late_fail_rate", pf.LateFailRate}, {"error_rate", pf.ErrorRate}} {
			if !(r.v >= 0 && r.v <= 1) {
				probs = append(probs, fmt.Sprintf("providers.%s.%s %v: must be between 0 and 1", n, r.name, r.v))
			}
		}
		if pf.AcceptThenHangRate+pf.DuplicateRate+pf.ErrorRate > 1+1e-9 {
			probs = append(probs, fmt.Sprintf("providers.%s: accept_then_hang_rate + duplicate_rate + error_rate must not exceed 1", n))
		}
		if pf.HangMS < 0 || pf.HangMS > int64(time.Hour/time.Millisecond) {
			probs = append(probs, fmt.Sprintf("providers.%s.hang_ms %d: must be between 0 and 3600000", n, pf.HangMS))
		}
		if n == Zibal && pf.LateFailRate != 0 {
			probs = append(probs, "providers.zibal.late_fail_rate: zibal has no late failure")
		}
		if n == Jibit && pf.NoUpstream {
			probs = append(probs, "providers.jibit.no_upstream: jibit has no ownership inquiry")
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidFaults, strings.Join(probs, "; "))
	}
	return nil
}

func (f Faults) of(provider string) ProviderFaults { return f.Providers[provider] }

// faultState is the setting and its random source (under Book.mu).
type faultState struct {
	cfg Faults
	rng *rand.Rand
}

func (s *faultState) init(seed uint64) { s.cfg, s.rng = Faults{}, newRand(seed) }

func newRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = 0x5eed
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) // #nosec G404 -- the fault injection's coin flips: test behaviour, reproducible by seed
}

func (s *faultState) draw() float64 { return s.rng.Float64() }

// SetFaults replaces the fault setting (after Validate) and reseeds.
func (b *Book) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	cp := Faults{Seed: f.Seed, Providers: map[string]ProviderFaults{}}
	for k, v := range f.Providers {
		cp.Providers[k] = v
	}
	b.mu.Lock()
	b.faults.cfg, b.faults.rng = cp, newRand(f.Seed)
	b.mu.Unlock()
	return nil
}

// Faults is the current setting.
func (b *Book) Faults() Faults {
	b.mu.Lock()
	defer b.mu.Unlock()
	cp := Faults{Seed: b.faults.cfg.Seed, Providers: map[string]ProviderFaults{}}
	for k, v := range b.faults.cfg.Providers {
		cp.Providers[k] = v
	}
	return cp
}

// plan is what happens to one call.
type plan struct {
	maintenance, error5xx bool
	hang, duplicate       bool
	balanceShort          bool
	noUpstream            bool
	hangD                 time.Duration
}

// plan decides the faults of a call of op ("submit", "status", "list",
// "balance", "owner", "token") at provider.
func (b *Book) plan(provider, op string) plan {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.faults.cfg.of(provider)
	p := plan{maintenance: f.Maintenance, balanceShort: f.BalanceShort && op == "submit", noUpstream: f.NoUpstream && op == "owner"}
	p.hangD = time.Duration(f.HangMS) * time.Millisecond
	if p.hangD == 0 {
		p.hangD = DefaultHang
	}
	if p.maintenance {
		return p
	}
	u := b.faults.draw()
	switch {
	case u < f.ErrorRate:
		p.error5xx = true
	case op == "submit" && u < f.ErrorRate+f.AcceptThenHangRate:
		p.hang = true
	case op == "submit" && u < f.ErrorRate+f.AcceptThenHangRate+f.DuplicateRate:
		p.duplicate = true
	}
	return p
}

// withhold holds the answer until the client gives up or d passes, then
// drops the connection: the client never learns what was done.
func withhold(w http.ResponseWriter, r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	drop(w)
}

// drop closes the client's connection without an answer; when it cannot
// be hijacked it aborts the handler (net/http then aborts the answer).
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// unavailable answers 503 as a proxy or a provider in maintenance does.
func unavailable(w http.ResponseWriter, maintenance bool) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusServiceUnavailable)
	msg := "<html><body><h1>503 Service Unavailable</h1></body></html>\n"
	if maintenance {
		msg = "<html><body><h1>503 Service Unavailable</h1><p>Scheduled maintenance.</p></body></html>\n"
	}
	_, _ = w.Write([]byte(msg))
}
