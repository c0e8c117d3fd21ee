package charge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The charge package decides and orchestrates; SQL lives in its store
// (internal/charge/sqlstore). Its code holds no SQL string and imports
// neither GORM, database/sql nor the store.
func TestChargeHoldsNoSQL(t *testing.T) {
	sqlRE := regexp.MustCompile(`(?i)\b(select\b.*\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|returning\b|order\s+by)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "gorm.io/") || path == "database/sql" || path == "github.com/kifpool/kifpool/internal/store" {
				t.Errorf("%s imports %s", name, path)
			}
		}
		for _, lit := range literals(f) {
			if sqlRE.MatchString(lit) {
				t.Errorf("%s holds SQL: %q", name, lit)
			}
		}
	}
	if checked < 4 {
		t.Fatalf("checked %d files", checked)
	}
}

// literals are the string literals of f.
func literals(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
