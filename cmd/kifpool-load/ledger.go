package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
)

const (
	ledgerWallets = 1000          // the wallets transfers go between
	ledgerFunds   = 1_000_000_000 // each one's top-up, in rials: no transfer is refused for want of money
	ledgerHotPct  = 90            // % of transfers touching the hot account in the second pair
	ledgerConc    = 16            // clients of pgbench, goroutines (and pool connections) of the Go path
	ledgerGroup   = 64            // the most transfers group commit writes in one database transaction
)

const ()

// 8. Ledger transfer: one wallet-to-wallet transfer, the pgbench script
// (the store's exact SQL, internal/ledger/transfer.pgbench) as the design
// limit, then the store's own ledger.Write from Go (no HTTP), against the
// same 1,000 wallets at the same concurrency, back to back: random pairs,
// then with 90 % of transfers touching one hot account.
func (bn *bench) scenarioLedger(ctx context.Context) error {
	accounts, err := bn.seedLedgerWallets(ctx, ledgerWallets)
	if err != nil {
		return fmt.Errorf("seed wallets: %w", err)
	}
	first, hot := accounts[0], accounts[0]
	db, err := store.Open(ctx, bn.dbURL, nil)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // the bench's own pool, closed at the end of the step; its error changes no figure
	if err := db.SetPoolSize(ledgerConc); err != nil {
		return err
	}
	l := ledger.New(db)
	// The same store with Write's group commit: concurrent transfers
	// written several to a database transaction.
	lg := ledger.New(db, ledger.GroupCommit(ledgerGroup))
	defer lg.Close()
	dur := bn.sz.ledgerDur
	var pgUniform Row
	var uniform []Row
	for k, hotPct := range []int{0, ledgerHotPct} {
		label := "random pairs"
		if hotPct > 0 {
			label = fmt.Sprintf("%d%% touch one account", hotPct)
		}
		// Each run starts from a vacuumed table of accounts: the run before
		// leaves a hot account's row thousands of dead versions long, which
		// would slow whichever run comes second.
		if err := bn.vacuumLedger(ctx); err != nil {
			return err
		}
		pg, err := bn.pgbench(ctx, ledgerConc, dur, map[string]string{
			"first": strconv.FormatInt(first, 10), "wallets": strconv.Itoa(len(accounts)), "hot": strconv.FormatInt(hot, 10),
			"hotpct": strconv.Itoa(hotPct), "kind": string(ledger.KindTransfer), "at": time.Now().UTC().Format(time.RFC3339Nano),
		})
		if err != nil {
			return fmt.Errorf("pgbench: %w", err)
		}
		pg.Scenario = "8 ledger transfer, " + label + ": pgbench (design limit)"
		bn.addRow(pg)
		gr, err := bn.ledgerGo(ctx, l, "8 ledger transfer, "+label+": Go ledger.Write", accounts, hot, hotPct, pg)
		if err != nil {
			return err
		}
		g0, m0 := lg.GroupStats()
		gg, err := bn.ledgerGo(ctx, lg, "8 ledger transfer, "+label+": Go ledger.Write, group commit", accounts, hot, hotPct, pg)
		if err != nil {
			return err
		}
		g1, m1 := lg.GroupStats()
		bn.notes = append(bn.notes, fmt.Sprintf("%s: %d groups of 2 or more, %.1f transfers each; %d of %d transfers grouped",
			gg.Scenario, g1-g0, ratio(float64(m1-m0), float64(g1-g0)), m1-m0, gg.Requests))
		gos := []Row{gr, gg}
		if k == 0 {
			pgUniform, uniform = pg, gos
			for _, r := range gos {
				bn.notes = append(bn.notes, fmt.Sprintf("%s: Go = %.2f × pgbench (%.0f vs %.0f transfers/s; goal ≥ 0.6)",
					r.Scenario, ratio(r.Throughput, pg.Throughput), r.Throughput, pg.Throughput))
			}
			continue
		}
		for i, r := range gos {
			bn.notes = append(bn.notes, fmt.Sprintf("%s: Go = %.2f × pgbench's random pairs (%.0f vs %.0f transfers/s; goal ≥ 0.3) and %.2f × its own random pairs (%.0f; goal ≥ 0.33); pgbench itself %.0f",
				r.Scenario, ratio(r.Throughput, pgUniform.Throughput), r.Throughput, pgUniform.Throughput,
				ratio(r.Throughput, uniform[i].Throughput), uniform[i].Throughput, pg.Throughput))
		}
	}
	return nil
}

// ledgerGo runs l.Write from ledgerConc goroutines for the step's
// duration, on a vacuumed table of accounts, on pairs as pair picks them.
func (bn *bench) ledgerGo(ctx context.Context, l *ledger.Ledger, name string, accounts []int64, hot int64, hotPct int, pg Row) (Row, error) {
	rngs := make([]*rand.Rand, ledgerConc)
	for vu := range rngs {
		rngs[vu] = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(vu))) // #nosec G404 -- picks bench pairs, no secret
	}
	if err := bn.vacuumLedger(ctx); err != nil {
		return Row{}, err
	}
	run := time.Now().UnixNano()
	gr := runLoad(ctx, name, ledgerConc, 0, bn.sz.ledgerDur, func(ctx context.Context, vu int, i int64) error {
		from, to := pair(rngs[vu], accounts, hot, hotPct)
		_, err := l.Write(ctx, ledger.Entry{Kind: ledger.KindTransfer, Reference: fmt.Sprintf("bench:%d:%d:%d", run, vu, i),
			Postings: ledger.Transfer(from, to, 1+rngs[vu].Int64N(1000)), At: time.Now()})
		return err
	})
	if pg.Throughput > 0 {
		gr.Note = fmt.Sprintf("%.2f × pgbench", gr.Throughput/pg.Throughput)
	}
	bn.addRow(gr)
	return gr, nil
}

// vacuumLedger vacuums the ledger's accounts, so that every run starts
// from the same table.
func (bn *bench) vacuumLedger(ctx context.Context) error {
	if _, err := bn.pool.Exec(ctx, `VACUUM ANALYZE ledger_accounts`); err != nil {
		return fmt.Errorf("vacuum the ledger's accounts: %w", err)
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// pair picks a transfer's two accounts: distinct, uniform over accounts,
// and with hotPct % chance the hot account on one side (either side, as
// the pgbench script does).
func pair(r *rand.Rand, accounts []int64, hot int64, hotPct int) (int64, int64) {
	n := len(accounts)
	i := r.IntN(n)
	a, b := accounts[i], accounts[(i+1+r.IntN(n-1))%n]
	if r.IntN(100) < hotPct {
		other := hot
		for other == hot {
			other = accounts[r.IntN(n)]
		}
		if r.IntN(2) == 0 {
			return hot, other
		}
		return other, hot
	}
	return a, b
}

func (bn *bench) addRow(r Row) {
	bn.rows = append(bn.rows, r)
	fmt.Printf("  %-40s %6d req %4d err %9.1f/s p99 %8.1f ms\n", r.Scenario, r.Requests, r.Errors, r.Throughput, r.P99MS)
}

// seedLedgerWallets makes n users with wallets and their accounts (ids
// contiguous, as the pgbench script picks them by range), each funded by a
// credited top-up; it returns the accounts' ids in order.
func (bn *bench) seedLedgerWallets(ctx context.Context, n int) ([]int64, error) {
	rows, err := bn.pool.Query(ctx, `WITH u AS (
			INSERT INTO users (email, password_hash, role, locale, created_at, email_verified_at)
			SELECT 'ledger' || g || '@example.com', 'x', 'user', 'en', now(), now() FROM generate_series(1, $1::int) g RETURNING id),
		w AS (INSERT INTO wallets (user_id, created_at, updated_at) SELECT id, now(), now() FROM u ORDER BY id RETURNING id, user_id)
		INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
		SELECT 'wallet', 'wallet:' || id, id, user_id, FALSE, now(), now() FROM w ORDER BY id RETURNING id`, n)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) != n || ids[n-1]-ids[0] != int64(n-1) {
		return nil, fmt.Errorf("%d wallet accounts, ids %v…: not one range", len(ids), ids[:min(len(ids), 3)])
	}
	if err := bn.seedTopUps(ctx, ids, 1, ledgerFunds, "seedl", 800_000_000); err != nil {
		return nil, err
	}
	if _, err := bn.pool.Exec(ctx, `VACUUM ANALYZE ledger_accounts, ledger_transactions, ledger_postings`); err != nil {
		return nil, err
	}
	return ids, nil
}

var pgbenchTPS = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs the transfer script for dur with conc clients (-M prepared,
// the mode pgx's statement cache matches), each transaction's latency
// logged (-l) for p50/p99.
func (bn *bench) pgbench(ctx context.Context, conc int, dur time.Duration, vars map[string]string) (Row, error) {
	dir, err := os.MkdirTemp(bn.logDir, "pgbench-")
	if err != nil {
		return Row{}, err
	}
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(conc), "-j", "2", "-T", strconv.Itoa(max(1, int(dur.Seconds()))),
		"-f", bn.pgbenchScript, "-l", "--log-prefix", filepath.Join(dir, "tx")}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-D", k+"="+vars[k])
	}
	args = append(args, bn.dbURL)
	cmd := exec.CommandContext(ctx, bn.pgbenchBin, args...) // #nosec G204 -- pgbench from the -pgbench flag with arguments built here
	db := startDBMeter()
	out, err := cmd.CombinedOutput()
	dbCPU := db.Stop()
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w\n%s", bn.pgbenchBin, err, out)
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return Row{}, fmt.Errorf("no tps in pgbench's output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	lats, err := pgbenchLatencies(dir)
	if err != nil {
		return Row{}, err
	}
	r := Row{Concurrency: conc, Requests: int64(len(lats)), Throughput: tps, Seconds: dur.Seconds(), DBCPUSeconds: dbCPU,
		LoadCPUSeconds: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	if fm := regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`).FindSubmatch(out); fm != nil {
		r.Errors, _ = strconv.ParseInt(string(fm[1]), 10, 64)
	}
	if len(lats) > 0 {
		q := func(p float64) float64 { return ms(lats[min(len(lats)-1, int(p*float64(len(lats))))]) }
		r.P50MS, r.P95MS, r.P99MS, r.MaxMS = q(0.50), q(0.95), q(0.99), ms(lats[len(lats)-1])
	}
	return r, nil
}

// pgbenchLatencies reads the per-transaction logs in dir (one file per
// thread: client, transaction, latency in µs, …), sorted.
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx.*"))
	if err != nil || len(files) == 0 {
		return nil, errors.Join(err, fmt.Errorf("no pgbench log in %s", dir))
	}
	var out []time.Duration
	for _, name := range files {
		f, err := os.Open(name) // #nosec G304 -- pgbench's log in our own temporary folder
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fs[2], 10, 64)
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("pgbench log %s: %q: %w", name, sc.Text(), err)
			}
			out = append(out, time.Duration(us)*time.Microsecond)
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
