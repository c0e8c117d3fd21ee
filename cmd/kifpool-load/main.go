// Command kifpool-load is the load harness behind `make bench`: it starts
// `kifpool serve` on PostgreSQL and a standalone sandbox bank as separate
// processes, seeds users directly in the database, drives the scenarios
// over HTTP (keep-alive, one cookie jar per virtual user), measures the
// database's own limit for one credit with pgx (no HTTP, no bank), checks
// the invariants, and prints a table plus a JSON file under data/bench/.
//
//	go run ./cmd/kifpool-load -bin bin/kifpool [-short] [-db URL] [-out data/bench] [-only NAME] [-pgbench PATH]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kifpool/kifpool/internal/routes"

	"github.com/kifpool/kifpool/cmd/kifpool-load/adminbench"
)

// sizes are the counts of one run (full or short).
type sizes struct {
	fullTopUps    int64
	credits       int64
	replayDur     time.Duration
	walletEntries int
	adminTopUps   int
	pageDur       time.Duration
	slowUsers     int
	downRefusals  int64
	twoInstances  int64
	ledgerDur     time.Duration // each of the ledger transfer's four runs
	soakDur       time.Duration // the mixed soak
}

var full = sizes{fullTopUps: 600, credits: 1500, replayDur: 6 * time.Second, walletEntries: 10_000,
	adminTopUps: 1_000_000, pageDur: 6 * time.Second, slowUsers: 500, downRefusals: 4000, twoInstances: 600, ledgerDur: 10 * time.Second}

var short = sizes{fullTopUps: 20, credits: 40, replayDur: 500 * time.Millisecond, walletEntries: 300,
	adminTopUps: 2_000, pageDur: 500 * time.Millisecond, slowUsers: 20, downRefusals: 20, twoInstances: 20, ledgerDur: 3 * time.Second, soakDur: 3 * time.Second}

const (
	metricsToken = "bench-metrics-token-5Xq9Lw2Rk7Vt3Nz8"
	secret       = "q7Zp2LmX9vKc4RtY8wNb3HsJ6dFg1AeU-bench" // #nosec G101 -- SESSION_SECRET of the bench's throwaway loopback instances, never of a deployment
	merchant     = "00000000-0000-4000-8000-000000000000"
	topUpTomans  = 1000 // 10,000 rials, the smallest top-up
)

func main() {
	bin := flag.String("bin", "bin/kifpool", "the kifpool binary")
	dbURL := flag.String("db", envOr("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/kifpool_bench?sslmode=disable"), "PostgreSQL database (dropped and created afresh)")
	out := flag.String("out", "data/bench", "folder of the JSON report")
	isShort := flag.Bool("short", false, "small counts: proves the harness works, judges no speed")
	only := flag.String("only", "", "run only the scenarios whose step name contains this, or one of these comma-separated (e.g. \"credit path,bank down\"): before/after measurements")
	pgbench := flag.String("pgbench", envOr("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench"), "pgbench, for the ledger transfer's design limit")
	pgbenchScript := flag.String("pgbench-script", "internal/ledger/transfer.pgbench", "the transfer's pgbench script (the store's SQL)")
	staticPage := flag.Int("static-page", 0, "internal: serve a bare Fiber static page of this many bytes on -static-addr (the replays' reference) and nothing else")
	staticAddr := flag.String("static-addr", "", "internal: the -static-page server's address")
	soak := flag.Duration("soak", 5*time.Minute, "the mixed soak's length (full counts)")
	profile := flag.Duration("profile", 0, "with serve's PPROF_ADDR, take a CPU profile of the first this-long of each step (e.g. 8s) into -out, one .pprof per step")
	admin := flag.Bool("admin", false, "the admin console and the payer's pages at scale (make bench-admin): seed -topups top-ups, then time every page")
	topUps := flag.Int64("topups", adminbench.Full.TopUps, "with -admin: top-ups seeded (users, transfers and the heavy payer's top-ups scale with it)")
	reuse := flag.Bool("reuse", false, "with -admin: keep the database a previous -admin run seeded (migrated to this build) instead of seeding it again")
	fetches := flag.Int("fetches", 20, "with -admin: timed fetches per page")
	credits := flag.Int64("credits", 0, "the credit path's callbacks (0: 1,500, or 40 with -short): more makes a before/after of the credit path decidable on a noisy machine")
	flag.Parse()
	if *staticPage > 0 {
		if err := serveStatic(*staticAddr, *staticPage); err != nil {
			fmt.Fprintln(os.Stderr, "kifpool-load -static-page:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *admin {
		sz := adminbench.SizeOf(*topUps)
		if *isShort {
			sz = adminbench.Small
		}
		if err := runAdmin(ctx, *bin, *dbURL, *out, sz, *reuse, *fetches); err != nil {
			fmt.Fprintln(os.Stderr, "kifpool-load -admin:", err)
			os.Exit(1)
		}
		return
	}
	sz := full
	if *isShort {
		sz = short
	} else {
		sz.soakDur = *soak
	}
	if *credits > 0 {
		sz.credits = *credits
	}
	if err := run(ctx, *bin, *dbURL, *out, *isShort, *only, *profile, sz, *pgbench, *pgbenchScript); err != nil {
		fmt.Fprintln(os.Stderr, "kifpool-load:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// bench holds one run's processes, database and users.
type bench struct {
	sz      sizes
	short   bool
	bin     string
	dbURL   string
	logDir  string
	pool    *pgxpool.Pool
	bank    *bank
	bankURL string
	bankPID int // the sandbox bank's process (its CPU per step)
	a, b    *proc
	baseA   string
	baseB   string
	tr      *http.Transport
	users   []*user
	rows    []Row
	notes   []string
	// profile > 0: a CPU profile of each step's first profile, into out.
	profile  time.Duration
	out      string
	stamp    string
	profiles int
	// env is added to serve's environment.
	env map[string]string
	// pgbench and the transfer's script (the ledger transfer's limit).
	pgbenchBin, pgbenchScript string
}

func run(ctx context.Context, bin, dbURL, out string, isShort bool, only string, profile time.Duration, sz sizes, pgbench, pgbenchScript string) error {
	started := time.Now()
	if err := recreateDB(ctx, dbURL); err != nil {
		return err
	}
	logDir, err := os.MkdirTemp("", "kifpool-load-")
	if err != nil {
		return err
	}
	bn := &bench{sz: sz, short: isShort, bin: bin, dbURL: dbURL, logDir: logDir, tr: newTransport(600),
		profile: profile, out: out, stamp: started.UTC().Format("20060102T150405Z"), pgbenchBin: pgbench, pgbenchScript: pgbenchScript}
	defer bn.stopAll()

	bankAddr := freeAddr()
	bn.bankURL = "http://" + bankAddr
	bp, err := startProc(ctx, "sandbank", bin, bankAddr, "", filepath.Join(logDir, "sandbank.log"), map[string]string{"LOG_LEVEL": "error"}, "sandbank", "--addr", bankAddr)
	if err != nil {
		return err
	}
	defer bp.stop()
	bn.bankPID = bp.pid()
	bn.bank = &bank{base: bn.bankURL, hc: &http.Client{Timeout: 30 * time.Second, Transport: bn.tr}}

	if bn.a, bn.baseA, err = bn.startServe(ctx, "serve-a"); err != nil {
		return err
	}
	bn.pool, err = pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer bn.pool.Close()
	nUsers := max(sz.slowUsers, 64) + 2
	if err := bn.seedUsers(ctx, nUsers); err != nil {
		return fmt.Errorf("seed users: %w", err)
	}
	fmt.Printf("kifpool-load: serve pid %d at %s, bank at %s, %d users seeded, logs in %s\n", bn.a.pid(), bn.baseA, bn.bankURL, nUsers, logDir)

	baseline, _ := metric(bn.baseA, metricsToken, "go_goroutines")
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"full top-up", bn.scenarioFullTopUp},
		{"credit path", bn.scenarioCreditPath},
		{"pages", bn.scenarioPages},
		{"slow bank", bn.scenarioSlowBank},
		{"two instances", bn.scenarioTwoInstances},
		{"mixed soak", bn.scenarioSoak},
		{"ledger transfer", bn.scenarioLedger},
		{"transfer over HTTP", bn.scenarioTransfer},
		// Last: the breaker stays open for the rest of the run
		// (BREAKER_OPEN_TIMEOUT 10m), and every step before it starts
		// top-ups at the bank (the transfer step's top-up replay too).
		{"bank down", bn.scenarioBankDown},
	}
	for _, s := range steps {
		if only != "" && !slices.ContainsFunc(strings.Split(only, ","), func(o string) bool { return strings.Contains(s.name, strings.TrimSpace(o)) }) {
			continue
		}
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	// Goroutines back to baseline: fasthttp keeps idle workers for 10 s
	// after their connection ends.
	bn.tr.CloseIdleConnections()
	time.Sleep(11 * time.Second)
	final, _ := metric(bn.baseA, metricsToken, "go_goroutines")
	bn.notes = append(bn.notes, fmt.Sprintf("serve's goroutines: %.0f after start, %.0f at the end (11 s after the last request)", baseline, final))
	inv, err := bn.checkInvariants(ctx)
	if err != nil {
		return fmt.Errorf("invariants: %w", err)
	}
	report := map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339), "short": isShort, "cores": runtime.NumCPU(),
		"go": runtime.Version(), "rows": bn.rows, "notes": bn.notes, "invariants": inv,
		"seconds": time.Since(started).Seconds(),
	}
	bn.print(inv)
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	name := filepath.Join(out, "bench-"+time.Now().UTC().Format("20060102T150405Z")+map[bool]string{true: "-short", false: ""}[isShort]+".json")
	b, _ := json.MarshalIndent(report, "", "  ")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		return err
	}
	fmt.Printf("report: %s (%.0f s)\n", name, time.Since(started).Seconds())
	if len(inv.Violations) > 0 {
		return errors.New("invariants violated: " + strings.Join(inv.Violations, "; "))
	}
	for _, r := range bn.rows {
		if r.Errors > 0 && !strings.Contains(r.Note, "errors expected") {
			return fmt.Errorf("scenario %q: %d errors (first: %s)", r.Scenario, r.Errors, r.FirstError)
		}
	}
	return nil
}

func (bn *bench) stopAll() {
	bn.b.stop()
	bn.a.stop()
}

// startServe starts one instance of serve on the bench database.
func (bn *bench) startServe(ctx context.Context, name string) (*proc, string, error) {
	addr := freeAddr()
	base := "http://" + addr
	env := map[string]string{
		"DATABASE_URL": bn.dbURL, "LISTEN_ADDR": addr, "BASE_URL": base, "SESSION_SECRET": secret,
		"DATA_DIR": bn.logDir, "GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": merchant, "ZARINPAL_BASE_URL": bn.bankURL,
		"RECONCILE_INTERVAL": "off", "RATE_LIMIT_SIGNIN": "0", "RATE_LIMIT_TOPUP": "0", "RATE_LIMIT_TRANSFERS": "0", "TOPUP_WAITING_MAX_COUNT": "0", "LOG_LEVEL": "warn",
		"API_TOPUPS_PER_MINUTE": "1000000",
		"METRICS_TOKEN":         metricsToken, "BREAKER_OPEN_TIMEOUT": "10m", "GOMAXPROCS": os.Getenv("GOMAXPROCS"),
	}
	for k, v := range bn.env {
		env[k] = v
	}
	pprofAddr := ""
	if bn.profile > 0 {
		pprofAddr = freeAddr()
		env["PPROF_ADDR"] = pprofAddr
	}
	p, err := startProc(ctx, name, bn.bin, addr, base+routes.Readyz, filepath.Join(bn.logDir, name+".log"), env, "serve")
	if p != nil {
		p.pprof = pprofAddr
	}
	return p, base, err
}

// measure runs a scenario step while reading serve's CPU time, peak RSS
// and goroutines.
func (bn *bench) measure(p *proc, base string, note string, f func() Row) Row {
	cpu0, self0, bank0 := cpuSeconds(p.pid()), cpuSeconds(os.Getpid()), bn.bankCPU()
	db := startDBMeter()
	reset := resetPeakRSS(p.pid())
	stopSampling := make(chan struct{})
	peak := make(chan int, 1)
	var profiled chan string
	if p.pprof != "" {
		profiled = make(chan string, 1)
		go func() { profiled <- bn.cpuProfile(p.pprof) }()
	}
	// Goroutines are read from /metrics, whose scrape runs serve's
	// collectors (database counts among them): once a second, not more,
	// so that the sampling does not load the step it measures (at 200 ms
	// it took 2–4 % of serve's CPU in a replay's profile, which the
	// static page, not sampled, did not pay). One more sample as the
	// step ends, before its connections close.
	go func() {
		best := 0
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				if v, ok := metric(base, metricsToken, "go_goroutines"); ok && int(v) > best {
					best = int(v)
				}
				peak <- best
				return
			case <-t.C:
				if v, ok := metric(base, metricsToken, "go_goroutines"); ok && int(v) > best {
					best = int(v)
				}
			}
		}
	}()
	r := f()
	if profiled != nil {
		if path := <-profiled; path != "" {
			note = strings.TrimSpace(note + " (CPU profile of the first " + bn.profile.String() + ": " + path + ")")
		}
	}
	close(stopSampling)
	r.PeakGor = <-peak
	r.CPUSeconds = cpuSeconds(p.pid()) - cpu0
	r.LoadCPUSeconds = cpuSeconds(os.Getpid()) - self0
	r.DBCPUSeconds = db.Stop()
	r.BankCPUSeconds = bn.bankCPU() - bank0
	r.PeakRSSMB = peakRSSMB(p.pid())
	if !reset {
		note = strings.TrimSpace(note + " (peak RSS since start)")
	}
	// Goroutines back to baseline: our idle keep-alive connections (one
	// server goroutine each) are closed first.
	bn.tr.CloseIdleConnections()
	time.Sleep(300 * time.Millisecond)
	if v, ok := metric(base, metricsToken, "go_goroutines"); ok {
		r.Goroutines = int(v)
	}
	r.Note = note
	bn.rows = append(bn.rows, r)
	fmt.Printf("  %-40s %6d req %4d err %9.1f/s p99 %8.1f ms\n", r.Scenario, r.Requests, r.Errors, r.Throughput, r.P99MS)
	return r
}

// cpuProfile takes a CPU profile of serve's next bn.profile through its
// PPROF_ADDR, writes it under bn.out and returns its path ("" on failure,
// said on stderr: a missing profile does not spoil the run).
func (bn *bench) cpuProfile(addr string) string {
	cl := &http.Client{Timeout: bn.profile + 30*time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(bn.profile.Seconds()+0.5)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kifpool-load: cpu profile:", err)
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "kifpool-load: cpu profile:", resp.Status, err)
		return ""
	}
	bn.profiles++
	path := filepath.Join(bn.out, fmt.Sprintf("cpu-%s-%02d.pprof", bn.stamp, bn.profiles))
	if err := os.MkdirAll(bn.out, 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "kifpool-load: cpu profile:", err)
		return ""
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "kifpool-load: cpu profile:", err)
		return ""
	}
	return path
}

func (bn *bench) print(inv invariants) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tconc\trequests\terrors\treq/s\tp50 ms\tp95 ms\tp99 ms\tmax ms\tCPU s\tDB CPU s\tbank CPU s\tload CPU s\tpeak RSS MB\tgoroutines (peak/after)\t")
	for _, r := range bn.rows {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%d/%d\t\n", r.Scenario, r.Concurrency, r.Requests, r.Errors,
			r.Throughput, r.P50MS, r.P95MS, r.P99MS, r.MaxMS, r.CPUSeconds, r.DBCPUSeconds, r.BankCPUSeconds, r.LoadCPUSeconds, r.PeakRSSMB, r.PeakGor, r.Goroutines)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "print table:", err)
	}
	for _, r := range bn.rows {
		if r.Note != "" {
			fmt.Printf("- %s: %s\n", r.Scenario, r.Note)
		}
	}
	for _, n := range bn.notes {
		fmt.Println("-", n)
	}
	fmt.Printf("invariants: %d wallets, %d credited payments, bank paid %d; violations: %d\n", inv.Wallets, inv.Credited, inv.BankPaid, len(inv.Violations))
	for _, v := range inv.Violations {
		fmt.Println("  VIOLATION:", v)
	}
}

// recreateDB drops and creates the bench database (its name from the URL).
func recreateDB(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.ContainsAny(name, `"';`) {
		return fmt.Errorf("database name %q", name)
	}
	admin := *u
	admin.Path = "/postgres"
	pool, err := pgxpool.New(ctx, admin.String())
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := pool.Exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}
