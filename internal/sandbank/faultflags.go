package sandbank

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/zarinpal"
)

// faultFlagOpsHelp is the OP part of the per-operation flags' help: every
// protocol's operations, since the bare names are Zarinpal's alone.
func faultFlagOpsHelp() string {
	var others []string
	for _, op := range FaultOps() {
		if strings.Contains(op, "-") {
			others = append(others, op)
		}
	}
	return "OP is Zarinpal's request, verify, inquiry, unverified or startpay (the payer's page and its buttons), " +
		"another gateway's operation (" + strings.Join(others, ", ") + ") or all (every gateway's); " +
		"repeat the flag or separate items with commas"
}

// ParseFaultFlags registers the fault-injection flags on fs and returns a
// function to call after fs.Parse: it builds and validates the setting, and
// returns nil (no faults) when none of these flags was given.
//
// Per-operation flags take OP=VALUE items separated by commas, and may be
// repeated (a later item wins for the same OP); OP is one of FaultOps
// (Zarinpal's request, verify, inquiry, unverified, startpay; the other
// gateways' prefixed sep-, mellat-, zibal-), or all for every one.
// Durations use Go's syntax (200ms, 1.5s, 30s) in whole milliseconds, up
// to 1h; rates are
// probabilities in [0, 1].
//
//	-seed N                  seed of the fault decisions (0: random)
//	-down                    every operation fails at once (dropped connection)
//	-down-status N           with -down: answer N (500-599) instead of dropping
//	-latency OP=DUR,...      added latency, e.g. verify=200ms,request=50ms
//	-jitter OP=DUR,...       uniformly random extra latency, e.g. verify=100ms
//	-error-rate OP=R,...     share of 5xx answers, e.g. verify=0.2
//	-error-status OP=N,...   status of those answers (500-599, default 503)
//	-drop-rate OP=R,...      share of dropped connections, e.g. verify=0.1
//	-refuse-rate OP=R,...    share of 429 Retry-After: 1 answers, e.g. inquiry=0.1
//	-answer-lost-rate OP=R,... share of calls performed whose answer is lost, e.g. request=0.1
//	-commit-then-hang        verify commits, then its answer never arrives
//	-commit-hang-rate R      share of verifies -commit-then-hang applies to (default 1)
//	-hang DUR                how long a withheld answer is held (default 30s)
//
// Example:
//
//	kifpool sandbank -seed 42 -latency verify=200ms -jitter verify=100ms \
//	    -error-rate verify=0.2,request=0.05 -commit-then-hang -hang 10s
func ParseFaultFlags(fs *flag.FlagSet) func() (*Faults, error) {
	seed := fs.Uint64("seed", 0, "fault injection: seed of the fault decisions; the same seed and calls give the same faults (0: random)")
	down := fs.Bool("down", false, "fault injection: the bank is down: every operation's connection is dropped at once (see -down-status)")
	downStatus := &valueFlag[int]{parse: parseFaultStatus}
	fs.Var(downStatus, "down-status", "fault injection: with -down, answer this status `N` (500-599) with a proxy error page instead of dropping the connection")
	latency := newOpFlag(fs, "latency", parseFaultDuration,
		"fault injection: added latency per operation, `OP=DURATION[,...]`, e.g. verify=200ms,request=50ms; "+faultFlagOpsHelp())
	jitter := newOpFlag(fs, "jitter", parseFaultDuration,
		"fault injection: uniformly random extra latency in [0, DURATION], `OP=DURATION[,...]`, e.g. verify=100ms; "+faultFlagOpsHelp())
	errorRate := newOpFlag(fs, "error-rate", parseFaultRate,
		"fault injection: share of calls answered 5xx (not performed), `OP=RATE[,...]` with RATE in [0,1], e.g. verify=0.2; "+faultFlagOpsHelp())
	errorStatus := newOpFlag(fs, "error-status", parseFaultStatus,
		"fault injection: status of the injected errors, `OP=STATUS[,...]` with STATUS 500-599 (default 503), e.g. verify=502; "+faultFlagOpsHelp())
	dropRate := newOpFlag(fs, "drop-rate", parseFaultRate,
		"fault injection: share of calls whose connection is closed without an answer (not performed), `OP=RATE[,...]`, e.g. verify=0.1; "+faultFlagOpsHelp())
	refuseRate := newOpFlag(fs, "refuse-rate", parseFaultRate,
		"fault injection: share of calls answered 429 with Retry-After: 1 (not performed), `OP=RATE[,...]`, e.g. inquiry=0.1; "+faultFlagOpsHelp())
	lostRate := newOpFlag(fs, "answer-lost-rate", parseFaultRate,
		"fault injection: share of calls that are performed but whose answer is lost (\"request performed, answer lost\": "+
			"the bank creates the authority, then the answer is held until the client gives up or -hang elapses and the connection is dropped), "+
			"`OP=RATE[,...]`, e.g. request=0.1; "+faultFlagOpsHelp())
	commit := fs.Bool("commit-then-hang", false,
		"fault injection: a verify that commits the payment (VERIFIED, ref_id assigned) never gets its answer: it is held until the client gives up or -hang elapses, then the connection is dropped; the retry answers 101")
	commitRate := &valueFlag[float64]{parse: parseFaultRate}
	fs.Var(commitRate, "commit-hang-rate", "fault injection: share `RATE` in [0,1] of verifies -commit-then-hang applies to (default 1)")
	hang := &valueFlag[time.Duration]{parse: parseFaultDuration}
	fs.Var(hang, "hang", "fault injection: how long a withheld answer (-commit-then-hang, -answer-lost-rate) is held at most before the connection is dropped, a `DURATION` such as 30s (default 30s)")

	names := []string{"seed", "down", "down-status", "latency", "jitter", "error-rate", "error-status",
		"drop-rate", "refuse-rate", "answer-lost-rate", "commit-then-hang", "commit-hang-rate", "hang"}
	return func() (*Faults, error) {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || slices.Contains(names, f.Name) })
		if !given {
			return nil, nil
		}
		ops := map[string]*OpFaults{}
		op := func(name string) *OpFaults {
			if ops[name] == nil {
				ops[name] = &OpFaults{}
			}
			return ops[name]
		}
		for name, d := range latency.vals {
			op(name).LatencyMS = d.Milliseconds()
		}
		for name, d := range jitter.vals {
			op(name).JitterMS = d.Milliseconds()
		}
		for name, r := range errorRate.vals {
			op(name).ErrorRate = r
		}
		for name, s := range errorStatus.vals {
			op(name).ErrorStatus = s
		}
		for name, r := range dropRate.vals {
			op(name).DropRate = r
		}
		for name, r := range refuseRate.vals {
			op(name).RefuseRate = r
		}
		for name, r := range lostRate.vals {
			op(name).AnswerLostRate = r
		}
		if *commit {
			op(zarinpal.OpVerify).CommitThenHang = true
		}
		if commitRate.set {
			op(zarinpal.OpVerify).CommitHangRate = commitRate.v
		}
		if hang.set {
			op(zarinpal.OpVerify).HangMS = hang.v.Milliseconds()
			for name, r := range lostRate.vals {
				if r > 0 {
					op(name).HangMS = hang.v.Milliseconds()
				}
			}
		}
		f := &Faults{Seed: *seed, Down: *down, DownStatus: downStatus.v}
		if len(ops) > 0 {
			f.Ops = make(map[string]OpFaults, len(ops))
			for name, o := range ops {
				f.Ops[name] = *o
			}
		}
		if err := f.Validate(); err != nil {
			return nil, err
		}
		return f, nil
	}
}

// opFlag is a flag of OP=VALUE items.
type opFlag[T any] struct {
	parse func(string) (T, error)
	vals  map[string]T
}

func newOpFlag[T any](fs *flag.FlagSet, name string, parse func(string) (T, error), usage string) *opFlag[T] {
	f := &opFlag[T]{parse: parse, vals: map[string]T{}}
	fs.Var(f, name, usage)
	return f
}

func (f *opFlag[T]) String() string {
	if f == nil || len(f.vals) == 0 {
		return ""
	}
	items := make([]string, 0, len(f.vals))
	for _, op := range FaultOps() {
		if v, ok := f.vals[op]; ok {
			items = append(items, op+"="+fmt.Sprint(v))
		}
	}
	return strings.Join(items, ",")
}

func (f *opFlag[T]) Set(s string) error {
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%q: want OP=VALUE", item)
		}
		name = strings.TrimSpace(name)
		ops, known := []string{name}, FaultOps()
		if name == "all" {
			ops = known
		} else if !slices.Contains(known, name) {
			return fmt.Errorf("%q: unknown operation %q (known: %s, all)", item, name, strings.Join(known, ", "))
		}
		v, err := f.parse(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, op := range ops {
			f.vals[op] = v
		}
	}
	return nil
}

// valueFlag is a flag of one value checked when parsed.
type valueFlag[T any] struct {
	parse func(string) (T, error)
	v     T
	set   bool
}

func (f *valueFlag[T]) String() string {
	if f == nil || !f.set {
		return ""
	}
	return fmt.Sprint(f.v)
}

func (f *valueFlag[T]) Set(s string) error {
	v, err := f.parse(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	f.v, f.set = v, true
	return nil
}

// parseFaultDuration reads a duration of whole milliseconds, 0 to 1h.
func parseFaultDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("duration %q: want e.g. 200ms or 1.5s", s)
	case d < 0:
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	case d > time.Duration(maxFaultMS)*time.Millisecond:
		return 0, fmt.Errorf("duration %q: must be at most 1h", s)
	case d%time.Millisecond != 0:
		return 0, fmt.Errorf("duration %q: must be a whole number of milliseconds", s)
	}
	return d, nil
}

// parseFaultRate reads a probability in [0, 1].
func parseFaultRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || !(r >= 0 && r <= 1) {
		return 0, fmt.Errorf("rate %q: want a number between 0 and 1", s)
	}
	return r, nil
}

// parseFaultStatus reads an HTTP status 500-599.
func parseFaultStatus(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || !is5xx(n) {
		return 0, fmt.Errorf("status %q: want 500-599", s)
	}
	return n, nil
}
