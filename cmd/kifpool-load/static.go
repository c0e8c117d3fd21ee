package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// The reference for the replays: Fiber's own static page of the same size,
// served by a bare Fiber app (no middleware, one byte slice) in a process of
// its own with serve's GOMAXPROCS, measured by the same load generator in
// the same run. A replay's throughput and p99 are judged against it (issue
// 32: ≥ 0.8 × its req/s, p99 ≤ its p99), which takes the machine's load and
// the load generator's own cost out of the comparison.

// staticPageBody is an HTML page of n bytes that passes the replay's check
// (data-status="credited").
func staticPageBody(n int) []byte {
	head := `<!DOCTYPE html><html><body data-status="credited"><p>`
	tail := `</p></body></html>`
	pad := max(0, n-len(head)-len(tail))
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// serveStatic is kifpool-load's -static-page mode: a bare Fiber app on addr
// answering every GET with the same n-byte page.
func serveStatic(addr string, n int) error {
	body := staticPageBody(n)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/*", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(body)
	})
	return app.Listen(addr)
}

// startStatic starts this binary in -static-page mode serving an n-byte page.
func (bn *bench) startStatic(ctx context.Context, n int) (*proc, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	addr := freeAddr()
	p, err := startProc(ctx, "static-page", self, addr, "", filepath.Join(bn.logDir, "static-page.log"),
		map[string]string{"GOMAXPROCS": os.Getenv("GOMAXPROCS")}, "-static-page", fmt.Sprint(n), "-static-addr", addr)
	return p, "http://" + addr, err
}

// staticReference measures Fiber's static page of the size of the page
// at target (a replay, fetched once by u) at 50 connections.
func (bn *bench) staticReference(ctx context.Context, u *user, target string) (Row, error) {
	return bn.staticReferenceFor(ctx, u, target, newUser(bn.tr, 0, 0, ""), "3 static page: Fiber, same size (50 conns)")
}

// staticReferenceFor is staticReference of the page u gets at target,
// fetched from the static page by client (a signed-in payer's client
// sends its cookies there too: a cookie jar does not tell ports apart,
// so both sides of the comparison send the same request) as step name.
func (bn *bench) staticReferenceFor(ctx context.Context, u *user, target string, client *user, name string) (Row, error) {
	r, err := u.do(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Row{}, err
	}
	if r.status != http.StatusOK {
		return Row{}, fmt.Errorf("sizing the static page: status %d", r.status)
	}
	n := len(r.body)
	p, base, err := bn.startStatic(ctx, n)
	if err != nil {
		return Row{}, err
	}
	defer p.stop()
	row := bn.measure(p, base, fmt.Sprintf("a bare Fiber app's page of %d bytes (the replay's size), its own process", n), func() Row {
		return runLoad(ctx, name, 50, 0, bn.sz.replayDur, func(ctx context.Context, _ int, _ int64) error {
			return callback(ctx, client, base+"/", "credited")
		})
	})
	if row.Errors > 0 {
		return row, errors.New("static page: " + row.FirstError)
	}
	return row, nil
}

// ratioNote compares a replay's row with the static page's.
func ratioNote(r, static Row) string {
	if static.Throughput == 0 {
		return ""
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	ratio := r.Throughput / static.Throughput
	return fmt.Sprintf("%.2f × the static page (%.0f vs %.0f req/s; goal ≥ 0.8: %s), p99 %.1f vs %.1f ms (goal ≤: %s); ours: %s; the static page's: %s",
		ratio, r.Throughput, static.Throughput, verdict(ratio >= 0.8), r.P99MS, static.P99MS, verdict(r.P99MS <= static.P99MS),
		cpuPer(r, "serve"), cpuPer(static, "Fiber"))
}
