package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/integrity"
)

// ruleRow is a row of operations.md's table of `kifpool check`'s rules.
var ruleRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")

// TestDocsNameEveryCheckRule: the operator's table of `kifpool check`'s
// rules (docs/operations.md) lists exactly the rules Check runs, in its
// order, and the invariants' reference (docs/design/data-model.md) names
// each: a rule added to internal/integrity without its line in both is
// a rule the operator reading a FAIL cannot look up.
func TestDocsNameEveryCheckRule(t *testing.T) {
	var want []string
	for _, r := range integrity.Rules() {
		want = append(want, r.Name)
	}
	ops := readRepoFile(t, "docs/operations.md")
	start := strings.Index(ops, "| rule | what it checks |")
	if start < 0 {
		t.Fatal("docs/operations.md has no table of kifpool check's rules")
	}
	table, _, _ := strings.Cut(ops[start:], "\n\n")
	var listed []string
	for _, m := range ruleRow.FindAllStringSubmatch(table, -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, want) {
		t.Errorf("docs/operations.md lists the rules\n%v\nkifpool check runs\n%v", listed, want)
	}
	model := readRepoFile(t, "docs/design/data-model.md")
	for _, name := range want {
		if !strings.Contains(model, "`"+name+"`") {
			t.Errorf("docs/design/data-model.md does not name the rule %s under its invariant", name)
		}
	}
}
