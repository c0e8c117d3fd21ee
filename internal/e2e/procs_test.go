// Package e2e runs the real kifpool binary as separate processes (several
// app instances, a standalone sandbox bank), drives users over HTTP, kills
// processes at random moments, and checks from the database and the bank's
// own record that every rial moved exactly once.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway/drivers"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testport"
	"github.com/kifpool/kifpool/internal/testwait"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// make test-quick: no binaries, no processes (make test runs them).
		fmt.Println("internal/e2e: skipped under -short (make test-quick); make test runs it")
		os.Exit(0)
	}
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// kifpoolBinary builds ./cmd/kifpool once per test binary (without -race,
// with the test hooks: crash points and clock skew, see internal/testhook)
// and returns its path.
func kifpoolBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			buildErr = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			buildErr = fmt.Errorf("module root %s: %w", root, err)
			return
		}
		buildDir, err = os.MkdirTemp("", "kifpool-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		out := filepath.Join(buildDir, "kifpool")
		cmd := exec.Command(goTool, "build", "-tags", "kifpool_testhooks", "-o", out, "./cmd/kifpool")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags kifpool_testhooks ./cmd/kifpool: %v\n%s", err, b)
			return
		}
		binPath = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a child process that can be killed and restarted with the same
// arguments, environment and address. Its output (every run) goes to one
// log file, printed when the test fails.
type proc struct {
	t       *testing.T
	bin     string
	name    string
	addr    string // HOST:PORT it listens on
	args    []string
	env     []string
	health  string // URL answering 200 when ready; "" = TCP connect
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run exits
	runs int
}

func newProc(t *testing.T, name, addr, health string, env map[string]string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, bin: kifpoolBinary(t), name: name, addr: addr, args: args, health: health,
		logPath: filepath.Join(t.TempDir(), name+".log")}
	// A small, explicit environment: nothing from the developer's shell
	// (DATABASE_URL, GATEWAY, ...) leaks into the child.
	base := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "TMPDIR": os.TempDir(), "TZ": "UTC"}
	for k, v := range env {
		base[k] = v
	}
	for k, v := range base {
		p.env = append(p.env, k+"="+v)
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.printLog(200)
		}
	})
	t.Cleanup(p.stop) // runs first (LIFO): no leftovers
	return p
}

// setEnv changes one variable of the environment for the next start
// ("" removes it).
func (p *proc) setEnv(key, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	env := p.env[:0:0]
	for _, kv := range p.env {
		if !strings.HasPrefix(kv, key+"=") {
			env = append(env, kv)
		}
	}
	if value != "" {
		env = append(env, key+"="+value)
	}
	p.env = env
}

// exited is closed when the current run ends (nil before the first start).
func (p *proc) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// start runs the process and waits until it is ready.
func (p *proc) start() error {
	p.mu.Lock()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	p.runs++
	fmt.Fprintf(f, "==== %s run %d at %s ====\n", p.name, p.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = slices.Clone(p.env)
	cmd.Stdout, cmd.Stderr = f, f
	setChildAttrs(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return p.waitReady(cmd, done, 60*time.Second)
}

// errKilledBeforeReady: the run was ended by a signal (a crash point's
// SIGKILL of itself) before it answered as ready.
var errKilledBeforeReady = errors.New("killed by a signal before it was ready")

func (p *proc) waitReady(cmd *exec.Cmd, done chan struct{}, limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	var exited error
	err := testwait.Until(limit, p.name+" to be ready", func() bool {
		select {
		case <-done:
			// cmd.Wait has returned (done is closed after it): a run
			// ended by a signal reports exit code -1.
			if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == -1 {
				exited = fmt.Errorf("%s %w (see its log)", p.name, errKilledBeforeReady)
			} else {
				exited = fmt.Errorf("%s exited before it was ready (see its log)", p.name)
			}
			return true
		default:
		}
		if p.health != "" {
			resp, err := client.Get(p.health)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	if exited != nil {
		return exited
	}
	return err
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop asks the process to shut down (SIGTERM), and kills it after 10s.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// printLog prints the last n lines of the process's log.
func (p *proc) printLog(n int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	p.t.Logf("---- last %d lines of %s (%s) ----\n%s", len(lines), p.name, p.logPath, strings.Join(lines, "\n"))
}

// logCount counts the occurrences of s in of the log that contain s.
func (p *proc) logCount(s string) int {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

// ---- the parts of a deployment ----

const (
	testSecret   = "e2e-session-secret-0123456789-abcdefghijklmnop"
	testMerchant = "7c0a5e1e-3b1f-4c2a-9d7e-5b6f8a9c0d1e"
)

// startBank runs a standalone sandbox bank with the given extra flags.
func startBank(t *testing.T, flags ...string) (*proc, string) {
	t.Helper()
	addr := testport.Addr(t)
	p := newProc(t, "sandbank", addr, "", nil, append([]string{"sandbank", "--addr", addr}, flags...)...)
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	return p, "http://" + addr
}

// serveEnv is the environment of a serve process on addr.
func serveEnv(t *testing.T, addr, dbURL, bankURL string, extra map[string]string) map[string]string {
	env := map[string]string{
		"DATABASE_URL":   dbURL,
		"LISTEN_ADDR":    addr,
		"BASE_URL":       "http://" + addr,
		"SESSION_SECRET": testSecret,
		"DATA_DIR":       t.TempDir(),
		// Two gateways of the standalone bank: payers choose either
		// (submitTopUp), so every run drives both protocols.
		"GATEWAYS":             "zarinpal,zibal",
		"ZARINPAL_MERCHANT_ID": testMerchant,
		"ZARINPAL_BASE_URL":    bankURL,
		"ZIBAL_MERCHANT":       "zibal",
		"ZIBAL_BASE_URL":       bankURL,
		"RECONCILE_INTERVAL":   "off",
		// Every test payer signs up from 127.0.0.1, more than the
		// per-address sign-up limit allows in a minute; tests of the
		// limit itself set it back (extra).
		"RATE_LIMIT_SIGNUP": "0",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// eachDialect runs test on SQLite and on PostgreSQL, in parallel.
func eachDialect(t *testing.T, test func(*testing.T, store.Dialect)) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			test(t, d)
		})
	}
}

// withAllGateways makes env offer the standalone bank's four gateways
// (GATEWAYS in bankGateways' order), each with its sandbox settings for
// bankURL.
func withAllGateways(t *testing.T, env map[string]string, bankURL string) {
	t.Helper()
	for _, name := range gatewayNames() {
		d, ok := drivers.Lookup(name)
		if !ok || d.Sandbox.Settings == nil {
			t.Fatalf("driver %s: not registered or without sandbox settings", name)
		}
		maps.Copy(env, d.Sandbox.Settings(bankURL))
	}
	env["GATEWAYS"] = strings.Join(gatewayNames(), ",")
}

// newServe prepares (does not start) a serve process.
func newServe(t *testing.T, name, dbURL, bankURL string, extra map[string]string) (*proc, string) {
	t.Helper()
	addr := testport.Addr(t)
	p := newProc(t, name, addr, "http://"+addr+routes.Healthz, serveEnv(t, addr, dbURL, bankURL, extra), "serve")
	return p, "http://" + addr
}

// errNotReady: a page came back without what the step needs; retry it.
var errNotReady = errors.New("not ready")

// sleepCtx sleeps d unless ctx ends first (real time: it paces the
// crash test's drivers of real processes, it waits for nothing).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
