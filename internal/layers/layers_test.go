// Package layers_test checks the import rules of ARCHITECTURE.md §1
// against the packages as they are: the table of layers lives in
// ARCHITECTURE.md alone (between its <!-- layers --> markers), and this
// test reads it from there, so that the document and the check cannot
// disagree.
//
// The rule: a package imports packages of its own layer or of a lower
// one, never of a higher one; the imports of its tests (in-package
// _test.go files and its external _test package) count as its own. Every
// package of the module is in exactly one layer. Direct imports suffice:
// when every edge points down or sideways, so does every path.
package layers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const architecture = "../../ARCHITECTURE.md"

// layer is one row of the table: its number (higher is above) and the
// package patterns it holds ("x/..." is x and every package under it).
type layer struct {
	n        int
	name     string
	patterns []string
}

// pkg is a package as go list shows it, paths relative to the module.
type pkg struct {
	path                string
	imports, testImport []string // testImport: in-package and external tests
}

func TestImportsPointDown(t *testing.T) {
	layers := readLayers(t, architecture)
	module := modulePath(t)
	// The test hooks' build tag changes which files are compiled: both
	// builds must keep the rules.
	for _, tags := range []string{"", "kifpool_testhooks"} {
		pkgs := goList(t, module, tags)
		if len(pkgs) < 10 {
			t.Fatalf("go list (tags %q) found %d packages: the module is not where this test thinks it is", tags, len(pkgs))
		}
		for _, p := range check(layers, pkgs) {
			t.Errorf("tags %q: %s", tags, p)
		}
	}
}

// TestCheckFindsViolations runs the checker on a made-up module, so that
// TestImportsPointDown cannot pass by checking nothing.
func TestCheckFindsViolations(t *testing.T) {
	layers := []layer{
		{n: 2, name: "web", patterns: []string{"web/..."}},
		{n: 1, name: "domain", patterns: []string{"internal/payment/...", "internal/paymentread"}},
		{n: 0, name: "store", patterns: []string{"internal/store/..."}},
	}
	pkgs := []pkg{
		{path: "web", imports: []string{"internal/payment", "internal/store"}},
		{path: "web/api", imports: []string{"web"}},
		{path: "internal/payment", imports: []string{"internal/store", "fmt", "gorm.io/gorm"}},
		{path: "internal/payment/paymenttest", imports: []string{"internal/payment"}},
		{path: "internal/paymentread", imports: []string{"internal/store"}},
		{path: "internal/store", testImport: []string{"internal/store/storetest"}},
		{path: "internal/store/storetest", imports: []string{"internal/store"}, testImport: []string{"internal/payment"}},
		{path: "internal/store", imports: []string{"web"}},
		{path: "internal/paymentreads"},
		{path: "tools"},
	}
	got := check(layers, pkgs)
	want := []string{
		"package internal/paymentreads is in no layer of ARCHITECTURE.md §1: add it to the layer it belongs to",
		"package tools is in no layer of ARCHITECTURE.md §1: add it to the layer it belongs to",
		"internal/store/storetest (layer 0 store) imports internal/payment (layer 1 domain) in its tests: a lower layer never imports a higher one",
		"internal/store (layer 0 store) imports web (layer 2 web): a lower layer never imports a higher one",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	// A row that matches no package is stale; two rows for one package
	// are ambiguous.
	got = check(append(layers, layer{n: 3, name: "gone", patterns: []string{"cmd/..."}},
		layer{n: 1, name: "again", patterns: []string{"web/api"}}), pkgs[:2])
	want = []string{
		"package web/api is in two layers of ARCHITECTURE.md §1 (web and again)",
		"ARCHITECTURE.md §1: `internal/payment/...` (layer domain) matches no package",
		"ARCHITECTURE.md §1: `internal/paymentread` (layer domain) matches no package",
		"ARCHITECTURE.md §1: `internal/store/...` (layer store) matches no package",
		"ARCHITECTURE.md §1: `cmd/...` (layer gone) matches no package",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// check returns every breach of the rules, in the packages' order.
func check(layers []layer, pkgs []pkg) []string {
	var problems []string
	used := map[string]bool{}
	of := map[string]*layer{}
	for _, p := range pkgs {
		var in []*layer
		for i := range layers {
			for _, pat := range layers[i].patterns {
				if matches(pat, p.path) {
					used[pat] = true
					in = append(in, &layers[i])
				}
			}
		}
		switch len(in) {
		case 0:
			problems = append(problems, fmt.Sprintf("package %s is in no layer of ARCHITECTURE.md §1: add it to the layer it belongs to", p.path))
		case 1:
			of[p.path] = in[0]
		default:
			problems = append(problems, fmt.Sprintf("package %s is in two layers of ARCHITECTURE.md §1 (%s and %s)", p.path, in[0].name, in[1].name))
		}
	}
	for _, p := range pkgs {
		l := of[p.path]
		if l == nil {
			continue
		}
		for _, imp := range []struct {
			list []string
			how  string
		}{{p.imports, ""}, {p.testImport, " in its tests"}} {
			for _, q := range imp.list {
				ql, ours := of[q]
				if !ours || ql.n <= l.n {
					continue // outside the module (or reported above), or pointing down
				}
				problems = append(problems, fmt.Sprintf("%s (layer %d %s) imports %s (layer %d %s)%s: a lower layer never imports a higher one",
					p.path, l.n, l.name, q, ql.n, ql.name, imp.how))
			}
		}
	}
	for _, l := range layers {
		for _, pat := range l.patterns {
			if !used[pat] {
				problems = append(problems, fmt.Sprintf("ARCHITECTURE.md §1: `%s` (layer %s) matches no package", pat, l.name))
			}
		}
	}
	return problems
}

// matches is go list's pattern rule for one path: "x/..." is x and every
// package under it; anything else is one package.
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

var (
	rowRE     = regexp.MustCompile(`^\|\s*(\d+)\s+([^|]*?)\s*\|([^|]*)\|`)
	patternRE = regexp.MustCompile("`([^`]+)`")
)

// readLayers parses the table between ARCHITECTURE.md's layer markers:
// "| N name | `pkg`, `pkg/...` | what it holds |".
func readLayers(t *testing.T, path string) []layer {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("<!-- layers -->"))
	table, _, ok2 := bytes.Cut(rest, []byte("<!-- /layers -->"))
	if !ok || !ok2 {
		t.Fatalf("%s: no <!-- layers --> … <!-- /layers --> table", path)
	}
	var layers []layer
	seen := map[int]bool{}
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue // the header and its rule
		}
		n, _ := strconv.Atoi(m[1])
		if seen[n] {
			t.Fatalf("%s: layer %d twice", path, n)
		}
		seen[n] = true
		l := layer{n: n, name: m[2]}
		for _, p := range patternRE.FindAllStringSubmatch(m[3], -1) {
			l.patterns = append(l.patterns, p[1])
		}
		if len(l.patterns) == 0 {
			t.Fatalf("%s: layer %d names no package: %q", path, n, line)
		}
		layers = append(layers, l)
	}
	if len(layers) < 3 {
		t.Fatalf("%s: the layer table has %d rows", path, len(layers))
	}
	return layers
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// goList lists every package of the module with its imports and its
// tests' imports, paths relative to the module (others left as they are).
func goList(t *testing.T, module, tags string) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	args := []string{"list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, "./...")...) // #nosec G204 -- the go tool with fixed arguments
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	rel := func(s string) []string {
		var r []string
		for _, f := range strings.Fields(s) {
			if f == module {
				f = "."
			}
			r = append(r, strings.TrimPrefix(f, module+"/"))
		}
		return r
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		pkgs = append(pkgs, pkg{path: rel(f[0])[0], imports: rel(f[1]), testImport: rel(f[2])})
	}
	return pkgs
}
