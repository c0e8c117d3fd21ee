package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

// usageEnv is an environment whose SQLite file and DATA_DIR do not exist
// yet: a command that did anything (opened, migrated, wrote a secret)
// leaves them behind.
func usageEnv(t *testing.T) (env map[string]string, db, data string) {
	t.Helper()
	dir := t.TempDir()
	db, data = filepath.Join(dir, "k.db"), filepath.Join(dir, "data")
	return map[string]string{"DATABASE_URL": "sqlite:" + db, "DATA_DIR": data, "LISTEN_ADDR": "127.0.0.1:0"}, db, data
}

func assertNothingDone(t *testing.T, db, data string) {
	t.Helper()
	for _, p := range []string{db, data} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): the command did work instead of only printing its usage", p, err)
		}
	}
}

// -h or --help prints a command's usage on stdout, exits 0 and does
// nothing else: `migrate -h` migrated the database, `reconcile -h` ran a
// reconciliation, `serve -h` served; `user promote -h` failed with "flag:
// help requested".
func TestHelpDoesNothingElse(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-h"}, "usage: kifpool serve"},
		{[]string{"serve", "--help"}, "usage: kifpool serve"},
		{[]string{"migrate", "-h"}, "usage: kifpool migrate"},
		{[]string{"migrate", "-help"}, "usage: kifpool migrate"},
		{[]string{"reconcile", "-h"}, "usage: kifpool reconcile"},
		{[]string{"reconcile", "--help"}, "usage: kifpool reconcile"},
		{[]string{"user", "promote", "-h"}, "-email"},
		{[]string{"user", "demote", "--help"}, "usage: kifpool user"},
		{[]string{"user", "reset-2fa", "-h"}, "-email"},
		{[]string{"check", "-h"}, "usage: kifpool check"},
		{[]string{"backup", "-h"}, "usage: kifpool backup"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env, db, data := usageEnv(t)
			// A serve that served would block: the deadline ends it, and
			// the files it left fail the test.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, tc.args, envOf(env), strings.NewReader(""), &out, slog.New(slog.DiscardHandler))
			if err != nil || exitCode(err) != 0 {
				t.Fatalf("error %v (exit %d), want none", err, exitCode(err))
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q, want %q", out.String(), tc.want)
			}
			assertNothingDone(t, db, data)
		})
	}
}

// A flag or an argument a command does not take is refused with exit
// status 2 and the command's usage line, before anything is done.
func TestUnknownArgumentsAreRefused(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "8080"}, "usage: kifpool serve"},
		{[]string{"serve", "now"}, `unexpected argument "now"`},
		{[]string{"migrate", "--down"}, "usage: kifpool migrate"},
		{[]string{"migrate", "up"}, `unexpected argument "up"`},
		{[]string{"reconcile", "--dry-run"}, "usage: kifpool reconcile"},
		{[]string{"reconcile", "zarinpal"}, `unexpected argument "zarinpal"`},
		{[]string{"user", "promote", "--email", "a@example.com", "--admin"}, "usage: kifpool user promote --email E"},
		{[]string{"user", "demote", "--email", "a@example.com", "b@example.com"}, `unexpected argument "b@example.com"`},
		{[]string{"check", "--fix"}, "usage: kifpool check"},
		{[]string{"config", "extra"}, `config: unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env, db, data := usageEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, tc.args, envOf(env), strings.NewReader(""), &out, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("exit status %d, want 2 (a usage error)", got)
			}
			assertNothingDone(t, db, data)
		})
	}
}

// Any other failure exits 1.
func TestExitCode(t *testing.T) {
	err := run(context.Background(), []string{"migrate"}, envOf(map[string]string{"DATABASE_URL": "mysql://x"}), strings.NewReader(""), &bytes.Buffer{}, slog.New(slog.DiscardHandler))
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("a bad configuration: error %v, exit %d; want exit 1", err, exitCode(err))
	}
	if exitCode(nil) != 0 {
		t.Fatal("no error: exit status is not 0")
	}
	// An unknown command is a usage error, as an unknown flag is.
	err = run(context.Background(), []string{"frobnicate"}, envOf(map[string]string{}), strings.NewReader(""), &bytes.Buffer{}, slog.New(slog.DiscardHandler))
	if err == nil || exitCode(err) != 2 {
		t.Fatalf("an unknown command: error %v, exit %d; want exit 2", err, exitCode(err))
	}
}

// A reconciliation that ran and found what a person must look at exits
// 3: neither clean (0) nor broken (1); a failure beside findings is 1.
func TestReconcileFindingsExit(t *testing.T) {
	portal, _ := json.Marshal([]topup.ReconcileItem{{Kind: topup.KindReceiptExpired}, {Kind: "credited"}, {Kind: topup.KindNoCallback}})
	for _, tc := range []struct {
		name    string
		rep     topup.ReconcileReport
		reports []withdrawal.Report
		err     error
		want    int
		says    string
	}{
		{"clean", topup.ReconcileReport{Credited: 2}, []withdrawal.Report{{Provider: "jibit"}}, nil, 0, ""},
		{"top-ups disagree", topup.ReconcileReport{Mismatches: 2}, nil, nil, 3, "2 top-ups disagree with their bank"},
		{"foreign payments", topup.ReconcileReport{ForeignCount: 1}, nil, nil, 3, "1 payments at a bank are none of ours"},
		{"the portal's to answer", topup.ReconcileReport{Details: string(portal)}, nil, nil, 3, "2 top-ups to look up in the bank's portal"},
		{"payout differences", topup.ReconcileReport{}, []withdrawal.Report{{Provider: "jibit"}, {Provider: "zibal", Differences: 1}}, nil, 3, "payouts zibal: 1 differences"},
		{"a failure beside findings", topup.ReconcileReport{Mismatches: 2}, nil, errors.New("3 listed top-ups not reconciled"), 1, "not reconciled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := orFindings(tc.err, reconcileFindings(tc.rep, tc.reports))
			if got := exitCode(err); got != tc.want || (tc.says != "" && !strings.Contains(err.Error(), tc.says)) {
				t.Fatalf("exit %d (%v), want %d saying %q", got, err, tc.want, tc.says)
			}
		})
	}
}
