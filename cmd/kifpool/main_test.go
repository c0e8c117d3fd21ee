package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testport"
	"github.com/kifpool/kifpool/internal/testwait"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestCommands(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	cases := []struct {
		name    string
		args    []string
		stdin   string
		env     map[string]string
		wantErr string
		wantOut string
	}{
		{"no command", nil, "", env, "no command", "usage"},
		{"unknown", []string{"frobnicate"}, "", env, "unknown command", "usage"},
		{"help", []string{"help"}, "", env, "", "usage"},
		{"help names every protocol of the sandbox bank", []string{"help"}, "", env, "", "run the sandbox bank (Zarinpal, Zibal, SEP and Mellat)"},
		{"migrate", []string{"migrate"}, "", env, "", ""},
		{"bad config", []string{"migrate"}, "", map[string]string{"DATABASE_URL": "mysql://x", "GATEWAY": "paypal"}, "DATABASE_URL", ""},
		{"user create", []string{"user", "create", "--email", "Admin@Example.com", "--admin"}, "a long enough password\n", env, "", "created admin admin@example.com (id "},
		{"user exists", []string{"user", "create", "--email", "admin@example.com"}, "another password\n", env, "already registered", ""},
		{"user short password", []string{"user", "create", "--email", "b@example.com"}, "short\n", env, "too short", ""},
		{"user no email", []string{"user", "create"}, "x\n", env, "--email is required", ""},
		{"user bad subcommand", []string{"user", "delete"}, "", env, "usage", ""},
		{"user create -h", []string{"user", "create", "-h"}, "", env, "", "usage: kifpool user create"},
		{"user create --help", []string{"user", "create", "--help"}, "", env, "", "-email"},
		{"user -h", []string{"user", "-h"}, "", env, "", "usage: kifpool user create"},
		{"user empty password", []string{"user", "create", "--email", "c@example.com"}, "\n", env, "no password given", ""},
		{"user no stdin", []string{"user", "create", "--email", "c@example.com"}, "", env, "no password given", ""},
		{"user blank password", []string{"user", "create", "--email", "c@example.com"}, "   \r\n", env, "no password given", ""},
		{"sandbank -h", []string{"sandbank", "-h"}, "", env, "", "-addr"},
		{"sandbank -h lists request performed, answer lost", []string{"sandbank", "-h"}, "", env, "", "-answer-lost-rate"},
		// Issue 31, item 10: the standalone bank keeps the built-in one's
		// rule, loopback only unless ALLOW_SANDBOX=1.
		{"sandbank on every interface", []string{"sandbank", "--addr", "0.0.0.0:0"}, "", env, "not a loopback address", ""},
		{"sandbank on every interface, no host", []string{"sandbank", "--addr", ":0"}, "", env, "not a loopback address", ""},
		{"sandbank on a public address", []string{"sandbank", "--addr", "192.0.2.7:9090"}, "", env, "ALLOW_SANDBOX=1", ""},
		{"sandbank on a .localhost name", []string{"sandbank", "--addr", "bank.localhost:9090"}, "", env, "not a loopback address", ""},
		{"user plain", []string{"user", "create", "--email", "sara@example.com"}, "a long enough password\n", env, "", "created user sara@example.com (id "},
		{"promote", []string{"user", "promote", "--email", "Sara@Example.com"}, "", env, "", "sara@example.com is now an admin"},
		{"promote again", []string{"user", "promote", "--email", "sara@example.com"}, "", env, "", "is now an admin"},
		{"demote", []string{"user", "demote", "--email", "admin@example.com"}, "", env, "", "admin@example.com is now a user"},
		{"merchant", []string{"merchant", "create", "--email", "Sara@Example.com", "--name", "Sara's Books"}, "", env, "", `sara@example.com is now the merchant "Sara's Books"`},
		{"merchant again renames", []string{"merchant", "create", "--email", "sara@example.com", "--name", "Books"}, "", env, "", `renamed "Books"`},
		{"merchant unknown", []string{"merchant", "create", "--email", "nobody@example.com", "--name", "X"}, "", env, "no user nobody@example.com", ""},
		{"merchant no name", []string{"merchant", "create", "--email", "sara@example.com"}, "", env, "--name are required", ""},
		{"merchant bad name", []string{"merchant", "create", "--email", "sara@example.com", "--name", "a\u202eb"}, "", env, "--name must be", ""},
		{"merchant usage", []string{"merchant"}, "", env, "usage", "usage: kifpool merchant create"},
		{"merchant -h", []string{"merchant", "-h"}, "", env, "", "usage: kifpool merchant create"},
		{"promote unknown", []string{"user", "promote", "--email", "nobody@example.com"}, "", env, "no user", ""},
		{"promote no email", []string{"user", "promote"}, "", env, "--email is required", ""},
		// The password once shown in README makes no admin.
		{"user documented password", []string{"user", "create", "--email", "e@example.com", "--admin"}, "a-long-password\n", env, "common passwords", ""},
		{"user common password", []string{"user", "create", "--email", "d@example.com"}, "password1234\n", env, "common passwords", ""},
		{"user one kind of character", []string{"user", "create", "--email", "d@example.com"}, "abcdefghijklm\n", env, "one kind", ""},
		{"reset-2fa unknown", []string{"user", "reset-2fa", "--email", "nobody@example.com"}, "", env, "no user", ""},
		{"reset-2fa no email", []string{"user", "reset-2fa"}, "", env, "--email is required", ""},
		{"set-password unknown", []string{"user", "set-password", "--email", "nobody@example.com"}, "a long enough password\n", env, "no user", ""},
		{"set-password no email", []string{"user", "set-password"}, "x\n", env, "--email is required", ""},
		{"set-password no stdin", []string{"user", "set-password", "--email", "sara@example.com"}, "", env, "no password given", ""},
		{"set-password short", []string{"user", "set-password", "--email", "sara@example.com"}, "short\n", env, "too short", ""},
		{"set-password -h", []string{"user", "set-password", "-h"}, "", env, "", "-email"},
		// After the gateways, each payout provider's reconciliation is run
		// and printed; a provider whose list cannot be read fails the
		// command, as a gateway does.
		{"reconcile payouts", []string{"reconcile"}, "", withEnv(env, "BASE_URL", "http://127.0.0.1:9"), "payouts jibit: ", "payouts zibal: checked 0, paid 0 (0 rials), returned 0, in flight 0, settled 0, 0 differences for an admin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(ctx, tc.args, envOf(tc.env), strings.NewReader(tc.stdin), &out, log)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("output %q, want %q", out.String(), tc.wantOut)
			}
		})
	}
	// The admin exists with the right role, and exactly one wallet.
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var role, sara string
	var wallets int64
	db.Gorm.Raw(`SELECT role FROM users WHERE email = 'admin@example.com'`).Scan(&role)
	db.Gorm.Raw(`SELECT role FROM users WHERE email = 'sara@example.com'`).Scan(&sara)
	db.Gorm.Raw(`SELECT COUNT(*) FROM wallets`).Scan(&wallets)
	if role != "user" || sara != "admin" || wallets != 2 {
		t.Fatalf("roles %q (demoted) %q (promoted), %d wallets", role, sara, wallets)
	}
}

// set-password gives a user a new password from stdin: the old one stops
// working, the new one works, every session ends and every token dies.
func TestSetPassword(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"user", "create", "--email", "sara@example.com"}, envOf(env), strings.NewReader("the old long password\n"), &out, log); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	db.Gorm.Exec(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) SELECT 't', id, ?, ? FROM users`, now, now.Add(time.Hour))
	db.Gorm.Exec(`INSERT INTO api_tokens (user_id, name, token_hash, prefix, scope, created_at) SELECT id, 'app', 'h', 'kp_abcdef', 'topup', ? FROM users`, now)
	db.Gorm.Exec(`INSERT INTO password_resets (user_id, token_hash, created_at, expires_at) SELECT id, 'r', ?, ? FROM users`, now, now.Add(30*time.Minute))
	out.Reset()
	if err := run(ctx, []string{"user", "set-password", "--email", "Sara@Example.com"}, envOf(env), strings.NewReader("a brand new password\n"), &out, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "password of sara@example.com set") || !strings.Contains(out.String(), "1 sessions signed out, 1 API tokens revoked") {
		t.Fatalf("output %q", out.String())
	}
	users := auth.NewService(db, auth.Options{})
	if _, err := users.Authenticate(ctx, "sara@example.com", "the old long password"); !errors.Is(err, auth.ErrBadCredentials) {
		t.Fatalf("old password: %v", err)
	}
	if _, err := users.Authenticate(ctx, "sara@example.com", "a brand new password"); err != nil {
		t.Fatalf("new password: %v", err)
	}
	var left int64
	db.Gorm.Raw(`SELECT (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NULL) +
		(SELECT COUNT(*) FROM password_resets WHERE used_at IS NULL)`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d sessions, live tokens or live reset links left", left)
	}
}

// reset-2fa removes a locked-out admin's authenticator and recovery codes
// and un-passes their sessions.
func TestReset2FA(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"user", "create", "--email", "boss@example.com", "--admin"}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	db.Gorm.Exec(`UPDATE users SET totp_secret = 'JBSWY3DPEHPK3PXP', totp_confirmed_at = ?, totp_last_step = 5`, now)
	db.Gorm.Exec(`INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT id, 'h', ? FROM users`, now)
	db.Gorm.Exec(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at, second_factor_at) SELECT 't', id, ?, ?, ? FROM users`, now, now.Add(time.Hour), now)
	out.Reset()
	if err := run(ctx, []string{"user", "reset-2fa", "--email", "Boss@Example.com"}, envOf(env), strings.NewReader(""), &out, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "two-factor sign-in of boss@example.com reset") {
		t.Fatalf("output %q", out.String())
	}
	var left int64
	db.Gorm.Raw(`SELECT (SELECT COUNT(*) FROM users WHERE totp_secret <> '' OR totp_confirmed_at IS NOT NULL OR totp_last_step <> 0)
		+ (SELECT COUNT(*) FROM recovery_codes) + (SELECT COUNT(*) FROM sessions WHERE second_factor_at IS NOT NULL)`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d traces of the old second factor left", left)
	}
	// Not for a user who is no admin: their account has no second factor
	// to reset, and the audit log would say an admin's was.
	if err := run(ctx, []string{"user", "create", "--email", "payer@example.com"}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"user", "reset-2fa", "--email", "payer@example.com"}, envOf(env), strings.NewReader(""), &out, log); !errors.Is(err, auth.ErrNotAdmin) ||
		strings.Contains(out.String(), "enrol") {
		t.Fatalf("reset-2fa of a user who is no admin: %v, output %q", err, out.String())
	}
}

func TestServeStartsAndStops(t *testing.T) {
	addr := testport.Addr(t)
	dir := t.TempDir()
	pprofAddr := testport.Addr(t)
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir,
		"LISTEN_ADDR": addr, "BASE_URL": "http://" + addr, "PPROF_ADDR": pprofAddr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out, logs := &syncBuffer{}, &syncBuffer{}
	go func() {
		done <- run(ctx, []string{"serve"}, envOf(env), strings.NewReader(""), out, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	waitHealthy(t, "http://"+addr, done)
	// serve says which binary it is, and that it runs on a development
	// secret (no SESSION_SECRET, sandbox bank).
	for _, want := range []string{`msg="kifpool starting" version=`, " revision=", " build_time=", " go=go1."} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("serve's log lacks %q:\n%s", want, logs.String())
		}
	}
	if !strings.Contains(out.String(), "warning: no SESSION_SECRET: using a development session secret kept in "+filepath.Join(dir, "session_secret")) {
		t.Errorf("serve does not say it runs on a development secret:\n%s", out.String())
	}
	// The in-process sandbox bank answers under /sandbank.
	resp, err := http.Post("http://"+addr+routes.Sandbank+"/pg/v4/payment/inquiry.json", "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("sandbank: %v %v", resp, err)
	}
	resp.Body.Close()
	// PPROF_ADDR: the profiler on its own loopback listener, not on the app's.
	resp, err = http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("profiler at %s: %v %v", pprofAddr, resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the app's own port serves the profiler: %v %v", resp, err)
	}
	resp.Body.Close()
	// The banner says where it runs and on which database.
	for _, want := range []string{"open http://" + addr, "listening on " + addr, "SQLite " + filepath.Join(dir, "k.db"), "sandbox bank at http://" + addr + routes.Sandbank,
		"mail:       written to " + filepath.Join(dir, "mail") + " (no SMTP_URL)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner %q does not say %q", out.String(), want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// With LISTEN_ADDR alone, serve runs where it listens and a top-up reaches
// the built-in bank there (issue 10, point 7): BASE_URL is derived.
func TestServeListenAddrAlone(t *testing.T) {
	addr := testport.Addr(t)
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir, "LISTEN_ADDR": addr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, envOf(env), strings.NewReader(""), out, slog.New(slog.DiscardHandler))
	}()
	base := "http://" + addr
	waitHealthy(t, base, done)
	if !strings.Contains(out.String(), "open "+base) {
		t.Errorf("banner %q does not name %s", out.String(), base)
	}
	// A top-up reaches the built-in bank (called at the derived BASE_URL).
	c := (&apptest.App{URL: base}).NewClient(t)
	c.SignUp("derived@example.com")
	csrf, token := c.TopUpForm()
	r := c.PostTopUp(csrf, token, "50000")
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, base+routes.Sandbank+"/pg/StartPay/") {
		t.Fatalf("top-up: %d to %q, want 303 to the bank at %s", r.Status, r.Location, base)
	}
	if page := c.Get(r.Location); page.Status != http.StatusOK || apptest.Parse(page.Body).TestID("bank-pay") == nil {
		t.Fatalf("bank page: %d", page.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// waitHealthy waits for serve to answer /healthz (a minute: migrations
// under -race on a loaded machine are slow), failing at once if it ended.
func waitHealthy(t *testing.T, base string, done <-chan error) {
	t.Helper()
	testwait.Eventually(t, time.Minute, "serve to answer /healthz", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve ended before answering: %v", err)
		default:
		}
		resp, err := http.Get(base + routes.Healthz)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// kifpool config prints every value in effect with its source, never a
// secret, and fails on a bad configuration naming the variable.
func TestConfigCommand(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	secret := "q7Zp2LmX9vKc4RtY8wNb3HsJ6dFg1AeU"
	var out bytes.Buffer
	err := run(ctx, []string{"config"}, envOf(map[string]string{"SESSION_SECRET": secret, "WORKER_CONCURRENCY": "8", "ALLOW_SANDBOX": "1",
		"DATABASE_URL": "postgres://k:hunter2hunter2@db/k"}), nil, &out, log)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, out.String())
	}
	for _, want := range []string{"WORKER_CONCURRENCY=8 ", "# environment", "GATEWAY_BUDGET=12s ", "# default",
		"SESSION_SECRET=******** (32 characters)", "DATABASE_URL=postgres://k:xxxxx@db/k"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, leak := range []string{secret, "hunter2"} {
		if strings.Contains(out.String(), leak) {
			t.Errorf("output shows a secret %q:\n%s", leak, out.String())
		}
	}

	out.Reset()
	err = run(ctx, []string{"config"}, envOf(map[string]string{"GATEWAY_BUDGET": "soon", "WORKER_CONCURRENCY": "0"}), nil, &out, log)
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_BUDGET") || !strings.Contains(err.Error(), "WORKER_CONCURRENCY") {
		t.Fatalf("bad configuration: err %v, want both variables named", err)
	}

	// What serve refuses, config refuses: a real gateway without
	// SESSION_SECRET passes Load but never starts.
	out.Reset()
	err = run(ctx, []string{"config"}, envOf(map[string]string{"GATEWAY": "zarinpal",
		"ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be"}), nil, &out, log)
	if err == nil || !strings.Contains(err.Error(), "SESSION_SECRET: required to serve with GATEWAYS=zarinpal") {
		t.Fatalf("real gateway without SESSION_SECRET: config returned %v, want serve's refusal\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "a development secret is kept") {
		t.Errorf("config says a development secret will be used where serve refuses to start:\n%s", out.String())
	}

	out.Reset()
	if err := run(ctx, []string{"config", "--reference"}, envOf(nil), nil, &out, log); err != nil || !strings.HasPrefix(out.String(), "# Configuration reference") {
		t.Fatalf("config --reference: %v\n%.200s", err, out.String())
	}
}

// With a real gateway, serve refuses to start without SESSION_SECRET,
// before it writes anything; a secret file in DATA_DIR does not count.
func TestServeRefusesARealGatewayWithoutSessionSecret(t *testing.T) {
	for _, withFile := range []bool{false, true} {
		dir := t.TempDir()
		if withFile {
			if err := os.WriteFile(filepath.Join(dir, "session_secret"), []byte("q7Zp2LmX9vKc4RtY8wNb3HsJ6dFg1AeU\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir, "LISTEN_ADDR": "127.0.0.1:0",
			"GATEWAY": "zarinpal", "ZARINPAL_MERCHANT_ID": "1344b5d4-0048-11e8-94db-005056a205be", "ZARINPAL_BASE_URL": "http://127.0.0.1:1"}
		var out bytes.Buffer
		err := run(context.Background(), []string{"serve"}, envOf(env), strings.NewReader(""), &out, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "SESSION_SECRET: required to serve with GATEWAYS=zarinpal") {
			t.Fatalf("secret file %v: serve returned %v, want a refusal naming SESSION_SECRET", withFile, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "k.db")); !os.IsNotExist(err) {
			t.Errorf("secret file %v: the refused start created the database (%v)", withFile, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "session_secret")); withFile == os.IsNotExist(err) {
			t.Errorf("secret file %v: the refused start changed DATA_DIR (%v)", withFile, err)
		}
	}
}

// Role changes and second-factor resets from the command line are in the
// audit log; every change of role un-passes the user's sessions (demote
// then promote needs a new code); an admin not enrolled gets a one-time
// enrolment code, printed once (issue 20, findings 9 and 10).
func TestCLIRoleChangesAreAuditedAndPrintEnrolmentCodes(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	cmd := func(stdin string, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, envOf(env), strings.NewReader(stdin), &out, log); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	codeRE := regexp.MustCompile(`enrolment code for \S+: ([A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4})`)
	out := cmd("a long enough password\n", "user", "create", "--email", "boss@example.com", "--admin")
	first := codeRE.FindStringSubmatch(out)
	if first == nil {
		t.Fatalf("create --admin printed no enrolment code: %q", out)
	}
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	audited := func() []string {
		var rows []string
		if err := db.Gorm.Raw(`SELECT action || ':' || COALESCE(from_status, '') || '>' || COALESCE(to_status, '') FROM admin_actions WHERE admin_id IS NULL ORDER BY id`).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if got := strings.Join(audited(), " "); got != "cli_create:>admin" {
		t.Fatalf("audit after create --admin: %q", got)
	}
	var hash string
	db.Gorm.Raw(`SELECT totp_enrol_hash FROM users`).Scan(&hash)
	if hash == "" || strings.Contains(hash, first[1]) {
		t.Fatalf("enrolment code stored as %q", hash)
	}
	// An enrolled admin with a session that passed the second factor.
	now := time.Now().UTC()
	db.Gorm.Exec(`UPDATE users SET totp_secret = 'JBSWY3DPEHPK3PXP', totp_confirmed_at = ?, totp_enrol_hash = ''`, now)
	passed := func() int64 {
		var n int64
		db.Gorm.Raw(`SELECT COUNT(*) FROM sessions WHERE second_factor_at IS NOT NULL`).Scan(&n)
		return n
	}
	db.Gorm.Exec(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at, second_factor_at) SELECT 't', id, ?, ?, ? FROM users`, now, now.Add(time.Hour), now)
	cmd("", "user", "demote", "--email", "boss@example.com")
	db.Gorm.Exec(`UPDATE sessions SET second_factor_at = ?`, now) // even if it had kept it
	out = cmd("", "user", "promote", "--email", "boss@example.com")
	if passed() != 0 {
		t.Fatalf("a session kept its second factor across demote and promote")
	}
	if codeRE.MatchString(out) {
		t.Fatalf("promote printed an enrolment code for an enrolled admin: %q", out)
	}
	out = cmd("", "user", "reset-2fa", "--email", "boss@example.com")
	second := codeRE.FindStringSubmatch(out)
	if second == nil || second[1] == first[1] {
		t.Fatalf("reset-2fa printed no new enrolment code: %q", out)
	}
	// A promoted user who never enrolled gets a code.
	cmd("a long enough password\n", "user", "create", "--email", "sara@example.com")
	if out := cmd("", "user", "promote", "--email", "sara@example.com"); !codeRE.MatchString(out) {
		t.Fatalf("promote of a new admin printed no enrolment code: %q", out)
	}
	want := "cli_create:>admin cli_demote:admin>user cli_promote:user>admin cli_reset_2fa:> cli_promote:user>admin"
	if got := strings.Join(audited(), " "); got != want {
		t.Fatalf("audit log:\n got %s\nwant %s", got, want)
	}
}

// withEnv is env with name set to value.
func withEnv(env map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range env {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// A command that finds an empty database (run without the server's
// environment) says it made the schema there, naming the database; one
// run on a database that has it says nothing of the kind.
func TestCommandOnEmptyDatabaseWarns(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		var logs, out bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		email := "u" + strconv.Itoa(i) + "@example.com"
		if err := run(ctx, []string{"user", "create", "--email", email}, envOf(env), strings.NewReader("a long enough password\n"), &out, log); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(logs.String(), "had no schema and was made now")
		if got != want || (want && !strings.Contains(logs.String(), filepath.Join(dir, "k.db"))) {
			t.Errorf("run %d: warned %v, want %v: %s", i, got, want, logs.String())
		}
	}
}

// failingWriter refuses every write, as a closed pipe or a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// An enrolment code that could not be written is an error, not a silent
// success: the code is kept only as a hash, so no one could ever type
// it; the error names the way to a new one.
func TestEnrolmentCodeNotWrittenIsAnError(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir}
	log := slog.New(slog.DiscardHandler)
	err := run(context.Background(), []string{"user", "create", "--email", "boss@example.com", "--admin"}, envOf(env),
		strings.NewReader("a long enough password\n"), failingWriter{}, log)
	if err == nil || !strings.Contains(err.Error(), "reset-2fa") {
		t.Fatalf("create --admin with its output refused: %v, want an error naming reset-2fa", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"user", "reset-2fa", "--email", "boss@example.com"}, envOf(env), strings.NewReader(""), &out, log); err != nil ||
		!strings.Contains(out.String(), "enrolment code for boss@example.com") {
		t.Fatalf("reset-2fa after a lost code: %v %q", err, out.String())
	}
}

// reconcile takes each gateway's and provider's turn, as serve's runs and
// an admin's do: one another run holds is left to it, said by name, and
// the command exits with an error (run it again), having asked nothing.
func TestReconcileLeavesAHeldTurn(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "k.db"), "DATA_DIR": dir, "BASE_URL": "http://127.0.0.1:9"}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	if err := run(ctx, []string{"migrate"}, envOf(env), strings.NewReader(""), io.Discard, log); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	later := time.Now().Add(time.Hour).UTC()
	for _, name := range []string{"zarinpal", "zibal", "sep", "mellat", "payout:jibit", "payout:zibal"} {
		if err := db.Gorm.Exec(`INSERT INTO reconcile_turns (gateway, next_at) VALUES (?, ?)`, name, later).Error; err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	err = run(ctx, []string{"reconcile"}, envOf(env), strings.NewReader(""), &out, log)
	if err == nil || !strings.Contains(err.Error(), "another run holds the turn") {
		t.Fatalf("error %v, want the held turn's", err)
	}
	for _, want := range []string{"gateway zarinpal: not reconciled now", "gateway mellat: not reconciled now", "payout provider jibit: not reconciled now"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output %q, want %q", out.String(), want)
		}
	}
	for _, not := range []string{"listed ", "payouts jibit:", "payouts zibal:"} {
		if strings.Contains(out.String(), not) {
			t.Fatalf("output %q: a held turn's run was made (%q)", out.String(), not)
		}
	}
	var reports, payoutReports int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM reconcile_reports`).Scan(&reports)
	db.Gorm.Raw(`SELECT COUNT(*) FROM payout_reconcile_reports`).Scan(&payoutReports)
	if reports+payoutReports != 0 {
		t.Fatalf("%d+%d reconciliation reports stored, want none", reports, payoutReports)
	}
}
