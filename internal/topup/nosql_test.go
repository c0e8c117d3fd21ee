package topup_test

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

// The topup package decides and orchestrates; SQL lives in its store
// (internal/topup/sqlstore). Its code holds no SQL string, no column
// map (map[string]any keyed by column names), no GORM tag or table name,
// and imports neither GORM, database/sql nor the store.
func TestTopUpHoldsNoSQL(t *testing.T) {
	sqlRE := regexp.MustCompile(`(?i)\b(select\b.*\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|where\b.*[=?]|is\s+null|returning\b|order\s+by|group\s+by|\w+\s*(=|<|>|<=|>=|\bin)\s*\?)`)
	columnRE := regexp.MustCompile(`^[a-z]+(_[a-z]+)+$`)
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
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "gorm.io/") || path == "database/sql" || path == "github.com/kifpool/kifpool/internal/store" {
				t.Errorf("%s imports %s", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				if sqlRE.MatchString(s) {
					t.Errorf("%s: an SQL string: %q", fset.Position(n.Pos()), s)
				}
			case *ast.CompositeLit:
				m, ok := n.Type.(*ast.MapType)
				if !ok {
					return true
				}
				if k, ok := m.Key.(*ast.Ident); !ok || k.Name != "string" {
					return true
				}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if lit, ok := kv.Key.(*ast.BasicLit); ok {
						if s, err := strconv.Unquote(lit.Value); err == nil && columnRE.MatchString(s) {
							t.Errorf("%s: a column map (key %q)", fset.Position(lit.Pos()), s)
						}
					}
				}
			case *ast.Field:
				if n.Tag != nil && strings.Contains(n.Tag.Value, "gorm:") {
					t.Errorf("%s: a GORM tag %s", fset.Position(n.Pos()), n.Tag.Value)
				}
			case *ast.FuncDecl:
				if n.Name.Name == "TableName" {
					t.Errorf("%s: a table name", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("only %d files checked", checked)
	}
}
