//go:build kifpool_testhooks

package testhook

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestClockSkew(t *testing.T) {
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() time.Time { return fixed }
	for _, tc := range []struct {
		env  string
		want time.Duration
		err  bool
	}{{"", 0, false}, {"10m", 10 * time.Minute, false}, {"+10m", 10 * time.Minute, false}, {"-10m", -10 * time.Minute, false}, {"ten", 0, true}} {
		t.Setenv(EnvClockSkew, tc.env)
		now, err := Clock(base)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error", tc.env)
			}
			continue
		}
		if err != nil || now().Sub(fixed) != tc.want {
			t.Errorf("%q: skew %s, %v; want %s", tc.env, now().Sub(fixed), err, tc.want)
		}
	}
}

// At kills the process at a listed point only (run in a child process).
func TestAtKills(t *testing.T) {
	if p := os.Getenv("TESTHOOK_CHILD"); p != "" {
		At("elsewhere")
		At(p)
		os.Exit(0) // not reached
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAtKills$")
	cmd.Env = append(os.Environ(), "TESTHOOK_CHILD="+AfterVerify, EnvCrashAt+"=after_reopen,"+AfterVerify)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Success() || !strings.Contains(string(out), "testhook: SIGKILL at after_verify") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
