package web_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqlInTests are the web tests that still reach into the database by
// hand, with how many places each does: empty, and it stays so. A test of
// the web app reads and writes the data through typed helpers where the
// data lives (topuptest, ledgertest, authtest, apitokentest,
// idempotencytest, mailtest, storetest, apptest's reads over the
// services), so that a change of the schema touches the stores and their
// helpers, not the HTTP tests.
var sqlInTests = map[string]int{}

// sqlRE finds an SQL statement in a string.
var sqlRE = regexp.MustCompile(`(?is)\b(select\s+(distinct\s+)?` + sqlCol + `(\s*,\s*` + sqlCol + `)*\s+from\s+\w+|insert\s+into\s+\w+|update\s+\w+\s+set\s+\w+|delete\s+from\s+\w+|analyze\s+\w+|with\s+recursive\b)`)

// sqlCol is a column, a function of columns or * in a select list.
const sqlCol = `(\*|[a-z_][a-z_0-9.]*|\w+\s*\([^)]*\))`

// The web app's tests (web/...) hold no SQL: no SQL string, no use of the
// database's GORM handle (store.DB.Gorm) or its *sql.DB (store.DB.SQL),
// beyond what sqlInTests still allows.
func TestWebTestsHoldNoSQL(t *testing.T) {
	found := map[string][]string{}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") || path == "testsql_test.go" {
			return err
		}
		checked++
		for _, w := range rawSQL(t, path) {
			found[filepath.ToSlash(path)] = append(found[filepath.ToSlash(path)], w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 40 {
		t.Fatalf("only %d test files checked: wrong root?", checked)
	}
	for _, f := range slices.Sorted(maps.Keys(found)) {
		if allowed := sqlInTests[f]; len(found[f]) > allowed {
			t.Errorf("%s reaches into the database by hand %d times (allowed %d): use a typed helper where the data lives:\n\t%s",
				f, len(found[f]), allowed, strings.Join(found[f], "\n\t"))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(sqlInTests)) {
		if n := len(found[f]); n < sqlInTests[f] {
			t.Errorf("%s now reaches into the database %d times: lower its line in sqlInTests to %d (or remove it at 0)", f, n, n)
		}
	}
}

// rawSQL lists where the Go file at path runs SQL by hand: one entry per
// line (a statement and the handle it runs on count once).
func rawSQL(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[int]bool{}
	add := func(pos token.Pos, what string) {
		if p := fset.Position(pos); !seen[p.Line] {
			seen[p.Line] = true
			out = append(out, p.String()+": "+what)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && sqlRE.MatchString(s) {
				add(n.Pos(), "SQL "+strconv.Quote(firstLine(s)))
			}
		case *ast.SelectorExpr:
			if n.Sel.Name == "Gorm" || n.Sel.Name == "SQL" {
				add(n.Pos(), "the database's ."+n.Sel.Name)
			}
		}
		return true
	})
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// The check finds what it is meant to find.
func TestRawSQLFindsSQL(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nfunc f() {\n\tdb.Gorm.Raw(`SELECT status FROM topups WHERE id = ?`, 1)\n\tdb.Gorm.Find(&rows)\n" +
		"\tcount(t, db, \"SELECT COUNT(*) FROM users\")\n\tdb.SQL().Ping()\n\t_ = \"select a payment from the list\"\n\t_ = \"Delete\"\n}\n"
	path := filepath.Join(dir, "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := rawSQL(t, path); len(got) != 4 {
		t.Fatalf("found %d, want 4 (a statement on .Gorm once, .Gorm, a statement, .SQL; not the sentence, not the word):\n%s", len(got), strings.Join(got, "\n"))
	}
}
