package web_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fiberFormValue is a call of Fiber's Ctx.FormValue, which reads the query
// string before the form's body.
var fiberFormValue = regexp.MustCompile(`\bc\.FormValue\(`)

// The handlers read a form's fields from its body alone (seam's
// FormValue): Fiber's c.FormValue takes a field from the query string
// first, so that a form posted to an address carrying "?to=…&amount=…"
// sent what the query said, not what the person confirmed
// (web/wallet's TestTransferReadsTheFormNotTheQuery). The one exception
// is the bank's return, which comes as a GET or a POST.
func TestHandlersReadFormsFromTheBody(t *testing.T) {
	allowed := map[string]bool{"pay/return.go": true}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		checked++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if fiberFormValue.Match(src) && !allowed[filepath.ToSlash(path)] {
			t.Errorf("%s reads a form field with c.FormValue (the query string first): use h.FormValue", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 30 {
		t.Fatalf("only %d files checked: wrong root?", checked)
	}
}
