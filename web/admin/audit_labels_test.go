package admin_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/kifpool/kifpool/internal/i18n"
)

// Every audit action the code can write has a label on the audit page in
// both languages (views/admin shows "admin.action.<action>", and the raw
// name only for a row written by an older version). The actions are read
// from internal/audit's source, so a new one cannot be added without its
// label.
func TestEveryAuditActionHasALabel(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../internal/audit/audit.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Action" {
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				a, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				actions = append(actions, a)
			}
		}
	}
	if len(actions) < 10 {
		t.Fatalf("found %d audit actions in internal/audit (%v): the parse no longer sees them", len(actions), actions)
	}
	for _, a := range actions {
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			if !i18n.Has(l, "admin.action."+a) {
				t.Errorf("audit action %q has no label admin.action.%s in %s", a, a, l)
			}
		}
	}
}
