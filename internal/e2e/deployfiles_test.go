package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's top folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// needTool finds a program the deployment tests run (Debian's nginx,
// promtool, systemd-analyze, buildah). Without it the test is skipped,
// unless REQUIRE_DEPLOY_TOOLS=1 (CI, which installs them) makes that a
// failure.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	if os.Getenv("REQUIRE_DEPLOY_TOOLS") == "1" {
		t.Fatalf("REQUIRE_DEPLOY_TOOLS=1 but %s is missing (apt-get install -y %s)", name, pkg)
	}
	t.Skipf("%s not installed (apt-get install -y %s); CI runs this test", name, pkg)
	return ""
}

// The systemd units and timers pass `systemd-analyze verify` with no complaint at
// all (a misspelt option is only a warning there, so any output fails).
// The units name /usr/local/bin/kifpool, which verify wants to exist: the
// test verifies copies that name an executable of its own.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	bin := filepath.Join(dir, "kifpool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil { // #nosec G306 -- an executable stand-in for the test
		t.Fatal(err)
	}
	units, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "systemd", "*.service"))
	if err != nil || len(units) < 2 {
		t.Fatalf("units: %v %v", units, err)
	}
	var names []string
	for _, u := range units {
		b, err := os.ReadFile(u) // #nosec G304 -- the repository's own files
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "/usr/local/bin/kifpool "} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", filepath.Base(u), want)
			}
		}
		name := filepath.Base(u)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(text, "/usr/local/bin/kifpool", bin)), 0o600); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "@.service") {
			name = strings.TrimSuffix(name, "@.service") + "@8081.service"
		}
		names = append(names, name)
	}
	// The timers too (a misspelt key there is the same warning), beside
	// the services they start.
	timers, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "systemd", "*.timer"))
	if err != nil || len(timers) == 0 {
		t.Fatalf("timers: %v %v", timers, err)
	}
	for _, u := range timers {
		b, err := os.ReadFile(u) // #nosec G304 -- the repository's own files
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(u)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(u))
	}
	cmd := exec.Command(analyze, append([]string{"verify"}, names...)...) // #nosec G204 -- the test's own arguments
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify %v: %v\n%s", names, err, out)
	}
}

// The alert rules load and fire on the series they are written for
// (deploy/prometheus/alerts_test.yml, `promtool test rules`).
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	dir := filepath.Join(repoRoot(t), "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...) // #nosec G204 -- the test's own arguments
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "SUCCESS") {
			t.Fatalf("promtool %v: %s", args, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, alert := range []string{"KifpoolInstanceDown", "KifpoolNotScraped", "KifpoolGatewayBreakerOpen", "KifpoolWorkerLag", "KifpoolTopUpsNeedReview", "KifpoolCreditsFailing", "KifpoolHigh5xxRate", "KifpoolReconciliationNotRun", "KifpoolReconciliationNeverRun", "KifpoolPayoutDifferences", "KifpoolPayoutReconciliationNotRun", "KifpoolPayoutReconciliationNeverRun", "KifpoolReadReplicaDown", "KifpoolReadReplicaLag", "KifpoolWaitingForAnAdmin", "KifpoolWebhookSenderStalled", "KifpoolWebhookGaveUp", "KifpoolMailQueueStalled", "KifpoolBackgroundLoopStalled", "KifpoolCheckFoundViolations", "KifpoolCheckNotRun"} {
		if !strings.Contains(string(b), "alert: "+alert+"\n") {
			t.Errorf("alerts.yml has no %s", alert)
		}
	}
}
