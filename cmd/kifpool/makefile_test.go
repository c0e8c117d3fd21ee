package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// `make test` names each suite it skipped, with the command that enables
// it: one visible line per suite, not only under -v.
func TestMakeTestSaysWhatItSkipped(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	tests := []struct {
		name string
		env  []string
		want []string
		not  []string
	}{
		{"nothing set up", []string{"TEST_DATABASE_URL=", "REQUIRE_BROWSER=", "CHROMIUM=/nonexistent/chromium",
			"REQUIRE_COMPAT=", "COMPAT_NODE_MODULES=/nonexistent/node_modules"},
			[]string{"SKIPPED the PostgreSQL suites (TEST_DATABASE_URL is unset); to run them: createdb kifpool_test && TEST_DATABASE_URL=",
				"SKIPPED the browser suite (web/browsertest: no Chromium at /nonexistent/chromium); to run it: apt-get install -y chromium",
				"SKIPPED the client-library suite (internal/sandbank: no"}, nil},
		{"all required (CI)", []string{"TEST_DATABASE_URL=postgres://x@127.0.0.1:1/x", "REQUIRE_POSTGRES=1", "REQUIRE_BROWSER=1", "CHROMIUM=/nonexistent/chromium",
			"REQUIRE_COMPAT=1", "COMPAT_NODE_MODULES=/nonexistent/node_modules"},
			nil, []string{"SKIPPED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("make", "-s", "--no-print-directory", "-C", "../..", "test-skips")
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make test-skips: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), "make test: "+w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(string(out), n) {
					t.Errorf("output has %q:\n%s", n, out)
				}
			}
		})
	}
}

// `make run` says it is building before the first build's quiet minute,
// ahead of the compiler's line (issue 29, item 17).
func TestMakeRunSaysItIsBuilding(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	out, err := exec.Command("make", "-n", "--no-print-directory", "-C", "../..", "run").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	say, build := -1, -1
	for i, l := range lines {
		if say < 0 && strings.Contains(l, "building ./bin/kifpool (the first build takes about a minute)") {
			say = i
		}
		if build < 0 && strings.Contains(l, " build ") && strings.Contains(l, "./cmd/kifpool") {
			build = i
		}
	}
	if say < 0 || build < 0 || say > build {
		t.Errorf("make run does not say it is building before it builds:\n%s", out)
	}
}
