package config_test

import (
	"os/exec"
	"strings"
	"testing"
)

// importsOf lists the Kifpool packages pkg links, its tests included.
func importsOf(t *testing.T, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on this machine")
	}
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/kifpool/kifpool/") {
			own = append(own, strings.TrimPrefix(p, "github.com/kifpool/kifpool/"))
		}
	}
	return own
}

// isPackageTree reports whether dir (relative to the module's root) is a
// package or holds one below it: go list fails on a directory that is
// not there, and lists nothing under one without Go code.
func isPackageTree(t *testing.T, dir string) bool {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on this machine")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "../../"+dir+"/...").Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// TestNoDomainOrStoreImports: reading the environment needs no database
// code and no code of a movement (top-ups, transfers, withdrawals, card
// refunds, charges), tests included (one helper is no reason to link the
// layers above). The load generator drives the app from outside
// too; its one exception is the ledger scenario, which runs the store's
// own transfer from Go beside pgbench (issue 34: the design limit and the
// store's path measured in one run), and so links internal/ledger and
// internal/store.
func TestNoDomainOrStoreImports(t *testing.T) {
	forbidden := []string{"internal/store", "internal/topup", "internal/topupread", "internal/transfer", "internal/withdrawal",
		"internal/cardrefund", "internal/charge", "internal/wallet", "internal/auth", "internal/audit",
		"internal/apitoken", "internal/idempotency", "internal/people", "internal/email",
		"internal/server", "internal/apptest", "web", "views"}
	// A forbidden path that names no package forbids nothing (the list
	// once named internal/payment and internal/topups, long renamed).
	for _, f := range forbidden {
		if !isPackageTree(t, f) {
			t.Errorf("forbidden %s holds no package: give its new path", f)
		}
	}
	for _, pkg := range []string{".", "../../cmd/kifpool-load"} {
		for _, imp := range importsOf(t, pkg) {
			for _, f := range forbidden {
				if pkg != "." && f == "internal/store" {
					continue // the load generator's ledger scenario (above)
				}
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
}
