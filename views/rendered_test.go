package views_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// coverEnv names the cover profile of the suite's run over the packages
// with templ components (make test and make test-quick write it with
// -coverpkg=./views,./views/admin,./internal/sandbank/page).
const coverEnv = "VIEWS_COVERPROFILE"

// templPackages are the module's folders of templ components: the app's
// pages, the admin console's, and the sandbox bank's.
var templPackages = []string{"views", "views/admin", "internal/sandbank/page"}

// TestEveryComponentIsRendered: every templ component (exported or not)
// was rendered by at least one test of the run, as goatcounter checks that
// every template executed. A component is rendered when the body of the
// function its Component runs was entered: the cover profile's block that
// starts at that body has a count. make test and make test-quick run this
// after the suite, with the suite's profile; on its own it skips.
func TestEveryComponentIsRendered(t *testing.T) {
	profile := os.Getenv(coverEnv)
	if profile == "" {
		t.Skipf("needs %s, the cover profile of a test run over ./views (make test and make test-quick set it)", coverEnv)
	}
	var comps []component
	for _, dir := range templPackages {
		found := components(t, dir)
		if len(found) == 0 {
			t.Fatalf("found no components in %s: the parser does not see them", dir)
		}
		comps = append(comps, found...)
	}
	if len(comps) < 20 {
		t.Fatalf("found %d components: the parser does not see them", len(comps))
	}
	counts := readProfile(t, profile)
	for _, p := range unrendered(comps, counts) {
		t.Error(p)
	}
}

// component is a templ component: its name and where the body of the
// function it renders with starts (file path from the module root, line,
// column).
type component struct {
	name      string
	file      string
	line, col int
}

// components lists every templ component of the *_templ.go files in dir
// (a folder of the module):
// a function returning templ.Component whose body returns
// templruntime.GeneratedTemplate(func(...) {...}).
func components(t *testing.T, dir string) []component {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", filepath.FromSlash(dir), "*_templ.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *_templ.go in %s: %v", dir, err)
	}
	var out []component
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if sel, ok := fn.Type.Results.List[0].Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Component" {
				continue
			}
			lit := generatedBody(fn)
			if lit == nil {
				t.Errorf("%s/%s: %s returns a templ.Component that templ did not generate", dir, filepath.Base(f), fn.Name.Name)
				continue
			}
			pos := fset.Position(lit.Body.Lbrace)
			out = append(out, component{name: fn.Name.Name, file: dir + "/" + filepath.Base(f), line: pos.Line, col: pos.Column})
		}
	}
	return out
}

// generatedBody returns the function literal of `return
// templruntime.GeneratedTemplate(func ...)`, or nil.
func generatedBody(fn *ast.FuncDecl) *ast.FuncLit {
	if len(fn.Body.List) != 1 {
		return nil
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil
	}
	call, ok := ret.Results[0].(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "GeneratedTemplate" {
		return nil
	}
	lit, _ := call.Args[0].(*ast.FuncLit)
	return lit
}

// blockStart is where a cover profile's block starts.
type blockStart struct {
	file      string // path from the module root
	line, col int
}

// readProfile sums the counts of the views' blocks by where they start
// (a profile of several packages repeats a block once per test binary).
func readProfile(t *testing.T, path string) map[blockStart]int64 {
	t.Helper()
	f, err := os.Open(path) // #nosec G304 -- the profile make test wrote
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[blockStart]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		b, n, ok := parseBlock(sc.Text())
		if ok {
			counts[b] += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// parseBlock reads one line of a cover profile of the module:
// "github.com/kifpool/kifpool/views/x_templ.go:12.150,14.3 1 5".
func parseBlock(line string) (blockStart, int64, bool) {
	const module = "github.com/kifpool/kifpool/"
	rest, ok := strings.CutPrefix(line, module)
	if !ok {
		return blockStart{}, 0, false
	}
	file, rng, ok := strings.Cut(rest, ":")
	if !ok {
		return blockStart{}, 0, false
	}
	fields := strings.Fields(rng)
	if len(fields) != 3 {
		return blockStart{}, 0, false
	}
	start, _, _ := strings.Cut(fields[0], ",")
	l, c, _ := strings.Cut(start, ".")
	ln, err1 := strconv.Atoi(l)
	col, err2 := strconv.Atoi(c)
	n, err3 := strconv.ParseInt(fields[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return blockStart{}, 0, false
	}
	return blockStart{file, ln, col}, n, true
}

// unrendered lists the components whose body no test entered, and those
// the profile does not know (a stale profile, or one of another build).
func unrendered(comps []component, counts map[blockStart]int64) []string {
	var out []string
	for _, c := range comps {
		n, ok := counts[blockStart{c.file, c.line, c.col}]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s (%s:%d): not in the cover profile; run the suite with -coverpkg=./views,./views/admin,./internal/sandbank/page after templ generate", c.name, c.file, c.line))
		case n == 0:
			out = append(out, fmt.Sprintf("%s (%s:%d): no test renders this component", c.name, c.file, c.line))
		}
	}
	slices.Sort(out)
	return out
}

// The check on a made-up profile, so that it cannot pass by seeing
// nothing.
func TestUnrenderedFindsThem(t *testing.T) {
	comps := components(t, "views")
	if len(comps) < 3 {
		t.Fatalf("%d components", len(comps))
	}
	a, b := comps[0], comps[1]
	profile := strings.Join([]string{
		"mode: atomic",
		fmt.Sprintf("github.com/kifpool/kifpool/%s:%d.%d,%d.3 4 0", a.file, a.line, a.col, a.line+3),
		fmt.Sprintf("github.com/kifpool/kifpool/%s:%d.%d,%d.3 4 0", b.file, b.line, b.col, b.line+3),
		fmt.Sprintf("github.com/kifpool/kifpool/%s:%d.%d,%d.3 4 2", b.file, b.line, b.col, b.line+3),
	}, "\n")
	path := filepath.Join(t.TempDir(), "cover.out")
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	got := unrendered(comps[:3], readProfile(t, path))
	want := []string{
		fmt.Sprintf("%s (%s:%d): no test renders this component", a.name, a.file, a.line),
		fmt.Sprintf("%s (%s:%d): not in the cover profile; run the suite with -coverpkg=./views,./views/admin,./internal/sandbank/page after templ generate", comps[2].name, comps[2].file, comps[2].line),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
