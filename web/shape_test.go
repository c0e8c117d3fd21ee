package web_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/web"
)

// web holds the middleware, the page shell and the order of registration;
// the pages live by feature (web/account, web/wallet, web/pay, web/admin,
// web/api), each with its own Deps. A new page is a handler in its
// feature, so web's own dependencies stay few: at most 10 fields in
// web.Deps and 10 Kifpool packages imported.
func TestWebStaysSmall(t *testing.T) {
	if n := reflect.TypeOf(web.Deps{}).NumField(); n > 10 {
		t.Errorf("web.Deps has %d fields, at most 10: what a feature needs goes in its own Deps (web.Features)", n)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	imported := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/kifpool/kifpool/") {
				imported[path] = true
			}
		}
	}
	if len(imported) == 0 {
		t.Fatal("no Kifpool import found: wrong folder?")
	}
	if len(imported) > 10 {
		t.Errorf("web imports %d Kifpool packages, at most 10: %v", len(imported), imported)
	}
}
