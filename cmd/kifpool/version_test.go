package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestReadVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/kifpool/kifpool", Version: "v0.0.0-20261201120000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := readVersion(info, true, "2026-12-01T12:30:00Z")
	var out bytes.Buffer
	if err := v.write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kifpool v0.0.0-20261201120000-0123456789ab+dirty\n", "module:      github.com/kifpool/kifpool",
		"revision:    0123456789abcdef0123456789abcdef01234567 (modified)", "commit time: 2026-12-01T12:00:00Z",
		"build time:  2026-12-01T12:30:00Z", "go:          go1.26.8"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
	// Without VCS data or a build time: said so, not invented.
	out.Reset()
	_ = readVersion(&debug.BuildInfo{Main: debug.Module{Path: "github.com/kifpool/kifpool", Version: "(devel)"}}, true, "").write(&out)
	for _, want := range []string{"kifpool (devel)", "revision:    unknown", "build time:  unknown (built without make build)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
	if v := readVersion(nil, false, ""); v.Version != "(unknown)" {
		t.Errorf("no build info: %+v", v)
	}
}

// make build records the revision it was built from and the build time;
// `kifpool version` prints them, and serve logs them at start.
func TestVersionOfMakeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	bin := filepath.Join(t.TempDir(), "kifpool")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now().UTC().Truncate(time.Second)
	if out, err := exec.CommandContext(ctx, "make", "-s", "-C", root, "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatalf("kifpool version: %v", err)
	}
	text := string(out)
	if !strings.Contains(text, "revision:    "+strings.TrimSpace(string(head))) {
		t.Errorf("version does not name HEAD %s:\n%s", head, text)
	}
	if !strings.Contains(text, "module:      github.com/kifpool/kifpool") {
		t.Errorf("version does not name the module:\n%s", text)
	}
	i := strings.Index(text, "build time:  ")
	if i < 0 {
		t.Fatalf("no build time:\n%s", text)
	}
	built, err := time.Parse(time.RFC3339, strings.Fields(text[i+len("build time:  "):])[0])
	if err != nil || built.Before(start.Add(-time.Minute)) || built.After(time.Now().Add(time.Minute)) {
		t.Errorf("build time %v (%v), want about %v", built, err, start)
	}
}
