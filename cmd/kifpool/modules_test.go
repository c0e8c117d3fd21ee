package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// toolLines are the module paths of a go.mod's tool directives.
func toolLines(t *testing.T, gomod string) []string {
	t.Helper()
	b, err := os.ReadFile(gomod) // #nosec G304 -- a go.mod of the repository
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	if m := regexp.MustCompile(`(?s)\ntool \(\n(.*?)\n\)`).FindStringSubmatch(string(b)); m != nil {
		tools = strings.Fields(m[1])
	}
	for _, m := range regexp.MustCompile(`\ntool ([^\s(]+)`).FindAllStringSubmatch(string(b), -1) {
		tools = append(tools, m[1])
	}
	return tools
}

// The app's go.mod lists what the app and its tests use, and templ (its
// generator must match the templ library the app links); the linters
// live in tools/go.mod with everything they pull in.
func TestLintersLiveInTheirOwnModule(t *testing.T) {
	root := filepath.Join("..", "..")
	app, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, linterOnly := range []string{"securego/gosec", "honnef.co/go/tools", "anthropic-sdk-go", "openai-go", "google.golang.org/genai"} {
		if strings.Contains(string(app), linterOnly) {
			t.Errorf("go.mod requires %s, which only the linters use (tools/go.mod)", linterOnly)
		}
	}
	if got := toolLines(t, filepath.Join(root, "go.mod")); strings.Join(got, " ") != "github.com/a-h/templ/cmd/templ" {
		t.Errorf("go.mod's tools = %v, want templ only", got)
	}
	want := map[string]bool{"github.com/securego/gosec/v2/cmd/gosec": true, "honnef.co/go/tools/cmd/staticcheck": true}
	for _, tool := range toolLines(t, filepath.Join(root, "tools", "go.mod")) {
		delete(want, tool)
	}
	if len(want) > 0 {
		t.Errorf("tools/go.mod lacks %v", want)
	}
	if testing.Short() {
		return
	}
	// Nothing to tidy: no requirement the app does not use, none missing.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy", "-diff")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go mod tidy -diff: %v\n%s", err, out)
	}
}
