package sandbank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// DefaultErrorStatus is the status of injected errors when none is set.
const DefaultErrorStatus = http.StatusServiceUnavailable

// DefaultHang is how long a withheld answer (commit-then-hang, answer
// lost) is held when OpFaults.HangMS is 0 (unless the client gives up
// first).
const DefaultHang = 30 * time.Second

// maxFaultMS bounds every duration of a fault setting (one hour).
const maxFaultMS = int64(time.Hour / time.Millisecond)

// ErrInvalidFaults is wrapped by the errors of (Faults).Validate and
// (*Bank).SetFaults.
var ErrInvalidFaults = errors.New("sandbank: invalid faults")

// faultOps are the operations faults can be set on, in display order:
// each protocol's, in the bank's order.
func faultOps(ps []protocol.Protocol) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Ops()...)
	}
	return out
}

// commitOps are the operations that commit a payment at the bank (a
// verify, Mellat's settle): commit-then-hang applies to them.
func commitOps(ps []protocol.Protocol) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.CommitOps()...)
	}
	return out
}

// FaultOps returns the names of the operations faults can be set on:
// Zarinpal's request, verify, inquiry, unverified, startpay, then the
// other gateways' (zibal-request, sep-verify, mellat-settle, …).
func FaultOps() []string { return faultOps(protocols(protocol.Env{})) }

// Faults is a fault-injection setting. The zero value injects nothing. It
// is JSON-friendly: it is what POST /_sandbank/faults takes and GET shows,
// e.g.
//
//	{"seed": 42, "down": false, "ops": {"verify": {"latency_ms": 200,
//	 "jitter_ms": 100, "error_rate": 0.3, "error_status": 503,
//	 "drop_rate": 0.1, "refuse_rate": 0.1, "commit_then_hang": true,
//	 "hang_ms": 30000}, "request": {"answer_lost_rate": 0.1}}}
//
// Every gateway operation passes through (*Bank).serveAPI, which asks the
// fault layer what to do with the call before (or instead of) performing
// it. Faults are keyed on the operation:
//
//	request     POST /pg/v4/payment/request.json
//	verify      POST /pg/v4/payment/verify.json
//	inquiry     POST /pg/v4/payment/inquiry.json
//	unverified  POST /pg/v4/payment/unVerified.json
//	startpay    the payer's page GET /pg/StartPay/{authority} and its three
//	            buttons (POST .../pay, .../cancel, .../pay-close)
//
// The control API (/_sandbank/...) and the stylesheet are never faulted.
//
// Per call, in this order:
//
//  1. Down: the call fails at once (connection dropped, or Faults.DownStatus)
//     and nothing else applies.
//  2. Latency: LatencyMS plus a uniform random [0, JitterMS] is waited,
//     honouring the request's context: a client that gives up frees the
//     handler and the operation is not performed (counted "abandoned").
//  3. One draw decides the outcome: with probability ErrorRate a proxy-style
//     5xx page, DropRate a dropped connection, RefuseRate a 429 with
//     Retry-After: 1 (none of them performs the operation), AnswerLostRate
//     "performed, answer lost": the operation IS performed (a request
//     creates its authority, a verify commits, a StartPay button pays), then
//     its answer is withheld until the client gives up or HangMS elapses
//     and the connection is dropped, so the client never learns what the
//     bank did. The four rates are shares of the calls, so their sum must
//     not exceed 1.
//  4. Otherwise the operation is performed. For verify with CommitThenHang
//     (and a draw below CommitHangRate), a verify that commits (answers 100:
//     the payment becomes VERIFIED with its ref_id) has its answer withheld
//     until the client gives up or HangMS elapses, and then the connection
//     is dropped; a verify that does not commit (101, -50, -51, ...) is
//     answered normally, so the retry of a hung verify answers 101 with the
//     same ref_id, as the real gateway does.
//
// Decisions come from a PCG generator seeded by (*Bank).SetFaults, so the
// same seed and the same sequence of calls give the same faults.
//
// A dropped connection is a hijacked connection closed without a byte of
// answer: a client sees io.EOF or "connection reset". When the
// ResponseWriter cannot be hijacked (HTTP/2, or the bank mounted behind an
// adaptor such as fiber's), the handler panics with http.ErrAbortHandler
// instead: net/http aborts the answer (HTTP/2: resets the stream), while
// behind fiber its recover middleware answers 500. Behind such an adaptor
// the request's context may also never end, so latency and hangs then last
// their full time: serve the bank with net/http (Serve, httptest) for
// faithful faults.
type Faults struct {
	// Seed seeds the fault decisions. 0 means the bank's Options.Seed, or a
	// random seed when that is 0 too.
	Seed uint64 `json:"seed"`
	// Ops holds the faults of each operation, keyed by its name (FaultOps).
	Ops map[string]OpFaults `json:"ops,omitempty"`
	// Down makes every operation fail instantly: the connection is dropped,
	// or answered with DownStatus when that is set.
	Down bool `json:"down"`
	// DownStatus, when not 0, is the status (500-599) a down bank answers
	// with, as a proxy error page, instead of dropping the connection.
	DownStatus int `json:"down_status,omitempty"`
}

// OpFaults are the faults of one operation. Durations are in milliseconds
// (0 to one hour), rates are probabilities in [0, 1].
type OpFaults struct {
	// LatencyMS is added before every call.
	LatencyMS int64 `json:"latency_ms,omitempty"`
	// JitterMS adds a uniformly random [0, JitterMS] on top of LatencyMS.
	JitterMS int64 `json:"jitter_ms,omitempty"`
	// ErrorRate is the share of calls answered with ErrorStatus and a
	// proxy-style HTML page, without performing the operation.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorStatus is the status of injected errors, 500-599; 0 means
	// DefaultErrorStatus (503).
	ErrorStatus int `json:"error_status,omitempty"`
	// DropRate is the share of calls whose connection is closed without an
	// answer, without performing the operation.
	DropRate float64 `json:"drop_rate,omitempty"`
	// RefuseRate is the share of calls answered 429 with Retry-After: 1
	// (and, for the JSON API, Zarinpal's code -12), without performing the
	// operation.
	RefuseRate float64 `json:"refuse_rate,omitempty"`
	// AnswerLostRate is the share of calls that are performed but whose
	// answer is lost: withheld until the client gives up or HangMS
	// elapses, then the connection is dropped. On request, the bank holds
	// an authority the client never learned.
	AnswerLostRate float64 `json:"answer_lost_rate,omitempty"`
	// CommitThenHang (verify only): a verify that commits the payment has
	// its answer withheld until the client gives up or HangMS elapses, then
	// the connection is dropped.
	CommitThenHang bool `json:"commit_then_hang,omitempty"`
	// CommitHangRate (verify only) is the share of calls CommitThenHang
	// applies to; 0 means 1 (all).
	CommitHangRate float64 `json:"commit_hang_rate,omitempty"`
	// HangMS is how long a withheld answer (a commit-then-hang verify, a
	// lost answer) is held at most; 0 means DefaultHang (30 s). It applies
	// to verify, and to any operation with an AnswerLostRate.
	HangMS int64 `json:"hang_ms,omitempty"`
}

// OpStats counts what happened to the calls of one operation.
type OpStats struct {
	// Calls is every call that reached the operation's route.
	Calls int64 `json:"calls"`
	// OK: the operation was performed and answered (whatever its answer).
	OK int64 `json:"ok"`
	// Injected5xx: answered with an injected 5xx (error_rate or down).
	Injected5xx int64 `json:"injected_5xx"`
	// Dropped: the connection was closed without an answer (drop_rate or
	// down).
	Dropped int64 `json:"dropped"`
	// Refused: answered 429 (refuse_rate).
	Refused int64 `json:"refused"`
	// Hung: performed (committed), then the answer was withheld and the
	// connection dropped (commit_then_hang).
	Hung int64 `json:"hung"`
	// Lost: performed, then the answer was withheld and the connection
	// dropped (answer_lost_rate).
	Lost int64 `json:"lost"`
	// Delayed: latency was added (whatever followed).
	Delayed int64 `json:"delayed"`
	// Abandoned: the client gave up during the added latency; the
	// operation was not performed.
	Abandoned int64 `json:"abandoned"`
}

// Validate reports whether f is a valid setting: known operations, rates in
// [0, 1] whose error+drop+refuse+answer-lost sum is at most 1, durations
// between 0 and one hour, statuses 500-599, commit-then-hang fields on
// verify only, hang_ms on verify or with an answer-lost rate. The
// error wraps ErrInvalidFaults and lists every problem.
func (f Faults) Validate() error {
	var probs []string
	if f.DownStatus != 0 && !is5xx(f.DownStatus) {
		probs = append(probs, fmt.Sprintf("down_status %d: must be 0 (drop the connection) or 500-599", f.DownStatus))
	}
	ops := make([]string, 0, len(f.Ops))
	for op := range f.Ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	ps := protocols(protocol.Env{})
	known, commit := faultOps(ps), commitOps(ps)
	for _, op := range ops {
		if !slices.Contains(known, op) {
			probs = append(probs, fmt.Sprintf("ops: unknown operation %q (known: %s)", op, strings.Join(known, ", ")))
			continue
		}
		probs = append(probs, f.Ops[op].problems(op, slices.Contains(commit, op))...)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidFaults, strings.Join(probs, "; "))
	}
	return nil
}

// problems lists what is wrong with the faults of op (commit: an
// operation that commits a payment).
func (o OpFaults) problems(op string, commit bool) []string {
	var probs []string
	field := func(name string) string { return "ops." + op + "." + name }
	for _, d := range []struct {
		name string
		ms   int64
	}{{"latency_ms", o.LatencyMS}, {"jitter_ms", o.JitterMS}, {"hang_ms", o.HangMS}} {
		if d.ms < 0 || d.ms > maxFaultMS {
			probs = append(probs, fmt.Sprintf("%s %d: must be between 0 and %d", field(d.name), d.ms, maxFaultMS))
		}
	}
	ratesOK := true
	for _, r := range []struct {
		name string
		v    float64
	}{{"error_rate", o.ErrorRate}, {"drop_rate", o.DropRate}, {"refuse_rate", o.RefuseRate},
		{"answer_lost_rate", o.AnswerLostRate}, {"commit_hang_rate", o.CommitHangRate}} {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			probs = append(probs, fmt.Sprintf("%s %v: must be between 0 and 1", field(r.name), r.v))
			ratesOK = false
		}
	}
	if sum := o.ErrorRate + o.DropRate + o.RefuseRate + o.AnswerLostRate; ratesOK && sum > 1+1e-9 {
		probs = append(probs, fmt.Sprintf("ops.%s: error_rate + drop_rate + refuse_rate + answer_lost_rate = %v: must not exceed 1", op, sum))
	}
	if o.ErrorStatus != 0 && !is5xx(o.ErrorStatus) {
		probs = append(probs, fmt.Sprintf("%s %d: must be 500-599", field("error_status"), o.ErrorStatus))
	}
	if !commit && (o.CommitThenHang || o.CommitHangRate != 0) {
		probs = append(probs, fmt.Sprintf("ops.%s: commit_then_hang and commit_hang_rate apply to the operations that commit: verify, Mellat's settle, a refund or reverse", op))
	}
	if !commit && o.HangMS != 0 && o.AnswerLostRate == 0 {
		probs = append(probs, fmt.Sprintf("ops.%s: hang_ms applies to verify, or with answer_lost_rate", op))
	}
	return probs
}

func is5xx(status int) bool { return status >= 500 && status <= 599 }

// clone is a deep copy of f.
func (f Faults) clone() Faults {
	f.Ops = maps.Clone(f.Ops)
	return f
}

// ---- the layer ----

// faultLayer holds the fault setting, its random source and the counts.
type faultLayer struct {
	baseSeed uint64   // Options.Seed: the default of Faults.Seed
	commit   []string // the operations that commit a payment

	mu    sync.Mutex
	cfg   Faults
	rng   *rand.Rand
	stats map[string]*OpStats
}

func (l *faultLayer) init(baseSeed uint64, ps []protocol.Protocol) {
	l.baseSeed = baseSeed
	l.commit = commitOps(ps)
	ops := faultOps(ps)
	l.stats = make(map[string]*OpStats, len(ops))
	for _, op := range ops {
		l.stats[op] = &OpStats{}
	}
	l.cfg, l.rng = Faults{}, l.newRand(0)
}

// newRand is the decision source of a setting with this seed.
func (l *faultLayer) newRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = l.baseSeed
	}
	if seed == 0 {
		seed = rand.Uint64() // #nosec G404 -- seeds the fault injection's coin flips (which call to slow down or fail): test behaviour, no secret
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) // #nosec G404 -- as above; reproducible by seed on purpose
}

// SetFaults replaces the whole fault setting with f (after Validate) and
// reseeds the fault decisions from f.Seed. Calls already waiting keep the
// setting they started with.
func (b *Bank) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	f = f.clone()
	rng := b.faults.newRand(f.Seed)
	b.faults.mu.Lock()
	b.faults.cfg, b.faults.rng = f, rng
	b.faults.mu.Unlock()
	b.log.Info("sandbank: faults set", "down", f.Down, "ops", len(f.Ops), "seed", f.Seed)
	return nil
}

// Faults returns the current fault setting.
func (b *Bank) Faults() Faults {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	return b.faults.cfg.clone()
}

// ClearFaults removes every fault (the bank behaves normally again).
func (b *Bank) ClearFaults() {
	_ = b.SetFaults(Faults{})
}

// Stats returns the counts of every operation (FaultOps), since the bank
// was created or ResetStats.
func (b *Bank) Stats() map[string]OpStats {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	out := make(map[string]OpStats, len(b.faults.stats))
	for op, s := range b.faults.stats {
		out[op] = *s
	}
	return out
}

// ResetStats sets every count to zero.
func (b *Bank) ResetStats() {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	for _, s := range b.faults.stats {
		*s = OpStats{}
	}
}

// faultKind is what happens to a call instead of the operation.
type faultKind int

const (
	faultNone   faultKind = iota
	faultError            // answer a proxy-style 5xx page
	faultDrop             // close the connection without an answer
	faultRefuse           // answer 429 Retry-After: 1
)

// faultPlan is the decision about one call.
type faultPlan struct {
	key    string // the operation's fault key ("startpay" for its buttons)
	delay  time.Duration
	kind   faultKind
	status int           // of faultError
	hang   bool          // commit then hang (verify)
	lost   bool          // perform, then withhold the answer and drop
	hangD  time.Duration // how long at most (hang, lost)
}

// faultKey is the operation a route's op belongs to: the StartPay buttons
// ("startpay.pay", ...) are "startpay".
func faultKey(op string) string {
	key, _, _ := strings.Cut(op, ".")
	return key
}

// plan counts the call and decides its faults.
func (l *faultLayer) plan(op string) faultPlan {
	p := faultPlan{key: faultKey(op)}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.statsLocked(p.key)
	st.Calls++
	if l.cfg.Down {
		p.kind, p.status = faultDrop, l.cfg.DownStatus
		if p.status != 0 {
			p.kind = faultError
		}
		return p
	}
	rule, ok := l.cfg.Ops[p.key]
	if !ok {
		return p
	}
	p.delay = time.Duration(rule.LatencyMS) * time.Millisecond
	if rule.JitterMS > 0 {
		p.delay += time.Duration(l.rng.Int64N(rule.JitterMS*int64(time.Millisecond) + 1))
	}
	if p.delay > 0 {
		st.Delayed++
	}
	if e, d, r, lo := rule.ErrorRate, rule.DropRate, rule.RefuseRate, rule.AnswerLostRate; e+d+r+lo > 0 {
		switch u := l.rng.Float64(); {
		case u < e:
			p.kind, p.status = faultError, rule.ErrorStatus
			if p.status == 0 {
				p.status = DefaultErrorStatus
			}
		case u < e+d:
			p.kind = faultDrop
		case u < e+d+r:
			p.kind = faultRefuse
		case u < e+d+r+lo:
			p.lost = true
		}
	}
	if p.kind == faultNone && !p.lost && rule.CommitThenHang && slices.Contains(l.commit, op) {
		rate := rule.CommitHangRate
		if rate == 0 {
			rate = 1
		}
		p.hang = l.rng.Float64() < rate
	}
	p.hangD = time.Duration(rule.HangMS) * time.Millisecond
	if p.hangD == 0 {
		p.hangD = DefaultHang
	}
	return p
}

// statsLocked is the counts of key, created for an unexpected key.
func (l *faultLayer) statsLocked(key string) *OpStats {
	st, ok := l.stats[key]
	if !ok {
		st = &OpStats{}
		l.stats[key] = st
	}
	return st
}

// count applies f to the counts of key.
func (l *faultLayer) count(key string, f func(*OpStats)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.statsLocked(key))
}

// serveOp is the single entry point of every simulated-gateway operation:
// it applies the fault setting to the call, and has the protocol perform
// the operation unless a fault replaces it. The control API under
// /_sandbank is deliberately not routed here: it is the test's own
// reliable channel.
func (b *Bank) serveOp(proto protocol.Protocol, op string, w http.ResponseWriter, r *http.Request) {
	p := b.faults.plan(op)
	if p.delay > 0 {
		// Read the body first: net/http notices a client that goes away
		// (and cancels the context) only once the body has been read.
		bufferBody(r)
		if !sleepCtx(r.Context(), p.delay) {
			b.faults.count(p.key, func(s *OpStats) { s.Abandoned++ })
			b.log.Debug("sandbank: fault: client gave up during latency", "op", op, "latency", p.delay)
			return
		}
	}
	switch p.kind {
	case faultError:
		b.faults.count(p.key, func(s *OpStats) { s.Injected5xx++ })
		b.log.Debug("sandbank: fault: 5xx", "op", op, "status", p.status)
		protocol.FaultPage(w, p.status)
		return
	case faultDrop:
		b.faults.count(p.key, func(s *OpStats) { s.Dropped++ })
		b.log.Debug("sandbank: fault: connection dropped", "op", op)
		dropConnection(w)
		return
	case faultRefuse:
		b.faults.count(p.key, func(s *OpStats) { s.Refused++ })
		b.log.Debug("sandbank: fault: refused", "op", op)
		w.Header().Set("Retry-After", "1")
		proto.Refuse(p.key, w)
		return
	}
	if p.hang {
		b.commitThenHang(proto, op, w, r, p)
		return
	}
	if p.lost {
		b.answerLost(proto, op, w, r, p)
		return
	}
	proto.Serve(op, w, r)
	b.faults.count(p.key, func(s *OpStats) { s.OK++ })
}

// commitThenHang performs a verify; when it commits (answer 100), the answer
// is withheld until the client gives up or p.hangD elapses, and then the
// connection is dropped. Any other answer is delivered normally.
func (b *Bank) commitThenHang(proto protocol.Protocol, op string, w http.ResponseWriter, r *http.Request, p faultPlan) {
	rec := &recorder{header: w.Header()}
	proto.Serve(op, rec, r)
	if rec.status != http.StatusOK || !proto.Committed(op, rec.body.Bytes()) {
		rec.sendTo(w)
		b.faults.count(p.key, func(s *OpStats) { s.OK++ })
		return
	}
	b.faults.count(p.key, func(s *OpStats) { s.Hung++ })
	b.log.Info("sandbank: fault: verify committed, answer withheld", "op", op, "hang", p.hangD)
	// Finish reading the body so a client that gives up is noticed.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, protocol.MaxBody))
	sleepCtx(r.Context(), p.hangD)
	dropConnection(w)
}

// answerLost performs the operation and loses its answer: it is withheld
// until the client gives up or p.hangD elapses, then the connection is
// dropped. A request has created its authority, which the client never
// learns.
func (b *Bank) answerLost(proto protocol.Protocol, op string, w http.ResponseWriter, r *http.Request, p faultPlan) {
	rec := &recorder{header: make(http.Header)}
	proto.Serve(op, rec, r)
	b.faults.count(p.key, func(s *OpStats) { s.Lost++ })
	b.log.Info("sandbank: fault: performed, answer lost", "op", op, "status", rec.status, "hang", p.hangD)
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, protocol.MaxBody))
	sleepCtx(r.Context(), p.hangD)
	dropConnection(w)
}

// sleepCtx waits d; false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// bufferBody reads the request body (up to protocol.MaxBody+1 bytes) into memory and
// puts it back, so the operation still finds it.
func bufferBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBody+1))
	var rd io.Reader = bytes.NewReader(data)
	if err != nil {
		rd = io.MultiReader(rd, errReader{err})
	}
	r.Body = io.NopCloser(rd)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// dropConnection closes the client's connection without an answer; when it
// cannot be hijacked it aborts the handler (net/http then aborts the answer).
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// recorder buffers an answer so it can be inspected before it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// sendTo delivers the buffered answer (headers are shared with w already).
func (r *recorder) sendTo(w http.ResponseWriter) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

// ---- control API ----

// faultRoutes adds the fault and stats control routes.
func (b *Bank) faultRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_sandbank/faults", b.controlGetFaults)
	mux.HandleFunc("POST /_sandbank/faults", b.controlSetFaults)
	mux.HandleFunc("DELETE /_sandbank/faults", b.controlClearFaults)
	mux.HandleFunc("GET /_sandbank/stats", b.controlStats)
	mux.HandleFunc("DELETE /_sandbank/stats", b.controlResetStats)
}

// controlGetFaults serves GET /_sandbank/faults: the current setting.
func (b *Bank) controlGetFaults(w http.ResponseWriter, _ *http.Request) {
	protocol.WriteJSON(w, http.StatusOK, b.Faults())
}

// controlSetFaults serves POST /_sandbank/faults: the JSON body (a Faults)
// replaces the whole setting; the answer is the new setting, or 400 with
// {"error": "..."} when the body is not a valid setting.
func (b *Bank) controlSetFaults(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, protocol.MaxBody))
	dec.DisallowUnknownFields()
	var f Faults
	err := dec.Decode(&f)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err != nil {
		protocol.WriteJSON(w, http.StatusBadRequest, controlAnswer{Error: "decode faults: " + err.Error()})
		return
	}
	if err := b.SetFaults(f); err != nil {
		protocol.WriteJSON(w, http.StatusBadRequest, controlAnswer{Error: err.Error()})
		return
	}
	protocol.WriteJSON(w, http.StatusOK, b.Faults())
}

// controlClearFaults serves DELETE /_sandbank/faults: no faults any more;
// the answer is the (empty) setting.
func (b *Bank) controlClearFaults(w http.ResponseWriter, _ *http.Request) {
	b.ClearFaults()
	protocol.WriteJSON(w, http.StatusOK, b.Faults())
}

// controlStats serves GET /_sandbank/stats: the counts of every operation.
func (b *Bank) controlStats(w http.ResponseWriter, _ *http.Request) {
	protocol.WriteJSON(w, http.StatusOK, b.Stats())
}

// controlResetStats serves DELETE /_sandbank/stats: counts back to zero.
func (b *Bank) controlResetStats(w http.ResponseWriter, _ *http.Request) {
	b.ResetStats()
	protocol.WriteJSON(w, http.StatusOK, b.Stats())
}
