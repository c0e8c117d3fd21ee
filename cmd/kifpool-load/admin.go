package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kifpool/kifpool/cmd/kifpool-load/adminbench"
)

// runAdmin is `make bench-admin` (kifpool-load -admin): the database at
// dbURL made afresh, migrated and seeded with sz (adminbench.Seed), or with
// reuse the one a previous run seeded (migrated to this build by serve);
// then serve and the sandbox bank as processes, every page of adminbench.Pages
// fetched from outside over HTTP, one after another, fetches times each
// (after one warm-up), and `kifpool check` timed on the same database. A
// table on screen and a JSON report under out.
func runAdmin(ctx context.Context, bin, dbURL, out string, sz adminbench.Size, reuse bool, fetches int) error {
	started := time.Now()
	logDir, err := os.MkdirTemp("", "kifpool-bench-admin-")
	if err != nil {
		return err
	}
	notes := []string{loadAverage("before")}
	if !reuse {
		if err := recreateDB(ctx, dbURL); err != nil {
			return err
		}
	}
	// Migrated to this build (on a reused database, a new index on 10M
	// rows takes minutes).
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, bin, "migrate") // #nosec G204 -- our own kifpool binary (-bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "LOG_LEVEL=warn")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %w\n%s", err, b)
	}
	if d := time.Since(t0); reuse && d > 5*time.Second {
		notes = append(notes, fmt.Sprintf("migrated to this build in %.0f s", d.Seconds()))
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var sample adminbench.Sample
	if reuse {
		err = adminbench.SampleOf(ctx, conn, sz, &sample)
	} else {
		t0 = time.Now()
		sample, err = adminbench.Seed(ctx, conn, sz, func(f string, a ...any) { fmt.Printf("kifpool-load: "+f+"\n", a...) })
		notes = append(notes, fmt.Sprintf("seeded in %.0f s", time.Since(t0).Seconds()))
	}
	if err != nil {
		return err
	}
	notes = append(notes, fmt.Sprintf("rows (estimates): %v", sample.Rows))

	// The seeded top-ups were never receipted: serve's mail loop would
	// queue millions of receipts while the pages are timed.
	bn := &bench{bin: bin, dbURL: dbURL, logDir: logDir, env: map[string]string{"MAIL_INTERVAL": "1000h"}}
	bankAddr := freeAddr()
	bn.bankURL = "http://" + bankAddr
	bp, err := startProc(ctx, "sandbank", bin, bankAddr, "", filepath.Join(logDir, "sandbank.log"), map[string]string{"LOG_LEVEL": "error"}, "sandbank", "--addr", bankAddr)
	if err != nil {
		return err
	}
	defer bp.stop()
	p, base, err := bn.startServe(ctx, "serve")
	if err != nil {
		return err
	}
	defer p.stop()
	c := adminbench.NewClient(base, sample, newTransport(4))
	notes = append(notes, loadAverage("before the pages"))
	timings, err := adminbench.TimePages(ctx, c, adminbench.Pages(sample), fetches)
	if err != nil {
		return err
	}
	notes = append(notes, loadAverage("after the pages"))
	p.stop()
	// The pages' figures first: kifpool check at 10M takes a while.
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "page\tp50 ms\tp95 ms\tmax ms\tfirst byte p50\tp95\tbytes\t\n")
	for _, r := range timings {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", r.Page, r.P50MS, r.P95MS, r.MaxMS, r.FirstP50MS, r.FirstP95MS, r.Bytes)
	}
	_ = tw.Flush()

	t0 = time.Now()
	cmd = exec.CommandContext(ctx, bin, "check") // #nosec G204 -- our own kifpool binary (-bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "LOG_LEVEL=warn")
	checkOut, checkErr := cmd.CombinedOutput()
	checkSecs := time.Since(t0).Seconds()
	checkNote := fmt.Sprintf("kifpool check: %.1f s", checkSecs)
	if checkErr != nil {
		checkNote += fmt.Sprintf(" (%v: broken rules reported on the seeded data, see the report)", checkErr)
	}
	notes = append(notes, checkNote)

	for _, n := range notes {
		fmt.Println("-", n)
	}
	report := map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339), "cores": runtime.NumCPU(), "go": runtime.Version(),
		"size":  map[string]int64{"topups": sz.TopUps, "users": sz.Users, "transfers": sz.Transfers, "heavy": sz.Heavy},
		"pages": timings, "notes": notes, "check_seconds": checkSecs, "check_output": lastLines(string(checkOut), 60),
		"seconds": time.Since(started).Seconds(),
	}
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	name := filepath.Join(out, "bench-admin-"+time.Now().UTC().Format("20060102T150405Z")+".json")
	b, _ := json.MarshalIndent(report, "", "  ")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		return err
	}
	fmt.Printf("report: %s (%.0f s)\n", name, time.Since(started).Seconds())
	return nil
}

// loadAverage is the machine's load average, from /proc/loadavg.
func loadAverage(when string) string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average " + when + ": unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average " + when + ": unknown"
	}
	return fmt.Sprintf("load average %s: %s %s %s (%d cores)", when, f[0], f[1], f[2], runtime.NumCPU())
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
