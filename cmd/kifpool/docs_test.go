package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link or image target: ](target) or src="target".
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)|src="([^"]+)"`)

// codePath is a file of the repository named in a code span
// (`web/admin/i18n_test.go`): moved files leave such names behind.
var codePath = regexp.MustCompile("`((?:internal|web|cmd|views|migrations|static)/[A-Za-z0-9_./-]+\\.(?:go|templ|sql|js|css|json))`")

// The documents a clone ships stand alone: every link is relative and
// leads to a file of the repository (nothing links outside it) and, when
// it names a heading (#anchor) of a Markdown file, to a heading there;
// a file named in a code span is there too; README stays short and says
// what it promises.
func TestDocsLinksStayInTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{"README.md", "ARCHITECTURE.md", "SECURITY.md"}
	// docs/ and its folders (docs/design holds the design's references).
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil || len(files) == 3 {
		t.Fatalf("no docs/**/*.md: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f)) // #nosec G304 -- files of the repository
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, bad := range []string{"/work/", "../shared"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s mentions %q: a clone must stand alone", f, bad)
			}
		}
		for _, m := range codePath.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("%s names %s, which is not in the repository", f, m[1])
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "/") {
				t.Errorf("%s links outside the repository: %s", f, target)
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(root, f)
			if path != "" {
				file = filepath.Join(root, filepath.Dir(f), filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", f, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !headingAnchors(t, file)[anchor] {
				t.Errorf("%s links to %s, which has no such heading", f, target)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens, a repeat numbered.
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file) // #nosec G304 -- files of the repository
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	code := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
		}
		h := headingLine.FindStringSubmatch(line)
		if code || h == nil {
			continue
		}
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h[1])), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var (
	headingLine = regexp.MustCompile(`^#{1,6} (.*)$`)
	slugDrop    = regexp.MustCompile(`[^\p{L}\p{N}_ -]`)
)

func TestReadmeIsShortAndSaysWhatItPromises(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines; keep it under 150 and move the rest into docs/", n)
	}
	for _, want := range []string{"make run", "make test", "make test-quick", "KEEPDB=1", ".ci/run", "docs/configuration.md",
		"docs/operations.md", "docs/api.md", "docs/admin.md", "docs/benchmarks.md", "ARCHITECTURE.md"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
	// The variables of accounts, mail and limits (issue 18).
	for _, v := range []string{"SMTP_URL", "MAIL_FROM", "TOPUP_DAILY_MAX_RIALS", "TOPUP_DAILY_MAX_COUNT", "BALANCE_MAX_RIALS", "TOPUP_WAITING_MAX_COUNT",
		"API_TOKEN_DEFAULT_DAYS", "API_TOKENS_PER_USER", "RATE_LIMIT_SIGNIN", "RATE_LIMIT_SIGNUP", "RETENTION_MAIL"} {
		if !strings.Contains(readme, "`"+v+"`") {
			t.Errorf("README.md does not name %s", v)
		}
	}
	if !regexp.MustCompile(`It takes about\s+\d+\s+minutes`).MatchString(readme) {
		t.Errorf("README.md does not say how long .ci/run takes")
	}
	if !regexp.MustCompile(`make test-quick[^\n]*(\n[^\n]+)*?\s+took\s+\d+\s+(minutes|seconds|s\b)`).MatchString(readme) {
		t.Errorf("README.md does not say how long make test-quick takes")
	}
	// One layout list, in ARCHITECTURE.md.
	if strings.Contains(readme, "Layout:") {
		t.Errorf("README.md has a layout list; the one list is ARCHITECTURE.md §1")
	}
}

// ARCHITECTURE §1 is the repository's one layout list: every package of
// the module has its row in the package table.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	arch := string(b)
	start, end := strings.Index(arch, "| package | holds |"), strings.Index(arch, "\n## 2.")
	if start < 0 || end < start {
		t.Fatal("ARCHITECTURE.md has no package table in §1")
	}
	table := arch[start:end]
	cmd := exec.Command("go", "list", "-tags", "kifpool_testhooks", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(pkg, "github.com/kifpool/kifpool/")
		if !strings.Contains(table, "`"+rel+"`") {
			t.Errorf("ARCHITECTURE.md §1 has no row for %s", rel)
		}
	}
}
