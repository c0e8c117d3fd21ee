package layers_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The test-support packages whose every file counts as test code: every
// package of the module named *test, and the tests' polling helper.
// TestTestSupportListed keeps the list true: each entry exists, and no
// package named *test is left out (a renamed package once escaped this
// guard while the list named its old path).
var testSupport = []string{"internal/apitoken/apitokentest", "internal/apptest", "internal/auth/authtest",
	"internal/idempotency/idempotencytest", "internal/ledger/ledgertest", "internal/mail/mailtest", "internal/store/storetest",
	"internal/testwait", "internal/topup/topuptest", "internal/withdrawal/withdrawaltest", "web/browsertest"}

// TestTestSupportListed: testSupport names packages that exist, and every
// package named *test.
func TestTestSupportListed(t *testing.T) {
	for _, p := range supportProblems(filepath.Join("..", ".."), testSupport) {
		t.Error(p)
	}
}

// supportProblems lists what is wrong with listed as the test-support
// packages of the module at root: a listed directory without Go code (gone,
// renamed), and a directory named *test with Go code that is not listed.
func supportProblems(root string, listed []string) []string {
	var out []string
	for _, dir := range listed {
		if !hasGo(filepath.Join(root, filepath.FromSlash(dir))) {
			out = append(out, fmt.Sprintf("testSupport lists %s, which holds no Go package: remove it or give its new path", dir))
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(d.Name(), "test") && hasGo(path) && !slices.Contains(listed, rel) {
			out = append(out, fmt.Sprintf("%s is a test-support package missing from testSupport: its sleeps go unchecked", rel))
		}
		return nil
	})
	if err != nil {
		out = append(out, err.Error())
	}
	return out
}

// hasGo reports whether dir holds a Go file.
func hasGo(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}

// TestSupportProblemsFindsThem runs the list's check on a made-up tree,
// so that TestTestSupportListed cannot pass by seeing nothing.
func TestSupportProblemsFindsThem(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"internal/apptest/apptest.go", "internal/topup/topuptest/topuptest.go", "internal/topup/topup.go",
		"internal/sandbank/testdata/x.go", "internal/payment/README.md"} {
		path := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("package x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := supportProblems(root, []string{"internal/apptest", "internal/payment/paymenttest"})
	if len(got) != 2 || !strings.Contains(got[0], "lists internal/payment/paymenttest") ||
		!strings.HasPrefix(got[1], "internal/topup/topuptest is a test-support package") {
		t.Errorf("found %q, want the gone paymenttest and the unlisted topuptest", got)
	}
}

// TestNoSleepWithoutAReason: tests wait for the clock by advancing a fake
// one, and for another goroutine or process through testwait.Eventually.
// A real-time sleep stays only where real time is the point, and says so
// with a `// real time: why` comment on its line or the line above.
func TestNoSleepWithoutAReason(t *testing.T) {
	root := filepath.Join("..", "..")
	var problems []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || (!strings.HasSuffix(rel, "_test.go") && !slices.Contains(testSupport, filepath.ToSlash(filepath.Dir(rel)))) {
			return nil
		}
		b, err := os.ReadFile(path) // #nosec G304 -- files of the repository
		if err != nil {
			return err
		}
		files++
		problems = append(problems, unexplainedSleeps(rel, string(b))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("found %d test files: the walk does not see the repository", files)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

var (
	sleepCall      = regexp.MustCompile(`\btime\.Sleep\(`)
	realTimeReason = regexp.MustCompile(`//\s*real time: \S`)
)

// unexplainedSleeps lists the lines of src that sleep without a reason.
func unexplainedSleeps(name, src string) []string {
	var out []string
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		code, _, _ := strings.Cut(line, "//")
		if !sleepCall.MatchString(code) {
			continue
		}
		if realTimeReason.MatchString(line) || (i > 0 && realTimeReason.MatchString(lines[i-1])) {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d: time.Sleep", name, i+1)+" without a `// real time: why` comment: advance a fake clock, or wait with testwait.Eventually")
	}
	return out
}

// TestUnexplainedSleepsFindsThem runs the check on made-up code, so that
// TestNoSleepWithoutAReason cannot pass by seeing nothing.
func TestUnexplainedSleepsFindsThem(t *testing.T) {
	// Spelled so that this file does not hold the call it looks for.
	sleep := "time." + "Sleep"
	src := strings.Join([]string{
		sleep + "(time.Second)",
		sleep + "(d) // real time: the bank's hang is the point",
		"// real time: a process's restart",
		sleep + "(d)",
		"// " + sleep + "(d) in a comment",
		"x := 1 // no reason: " + sleep + "(d)",
		sleep + "(d) // real time:",
	}, "\n")
	got := unexplainedSleeps("f_test.go", src)
	if len(got) != 2 || !strings.HasPrefix(got[0], "f_test.go:1:") || !strings.HasPrefix(got[1], "f_test.go:7:") {
		t.Errorf("found %q, want lines 1 and 7", got)
	}
}
