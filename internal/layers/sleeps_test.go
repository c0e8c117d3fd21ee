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

// The test-support packages whose every file counts as test code.
var testSupport = []string{"internal/apptest", "internal/store/storetest", "internal/payment/paymenttest",
	"internal/mail/mailtest", "internal/testwait"}

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
