package topup_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/topup"
)

// diagramEdges reads the "from ──…──▶ to" edges of a state diagram out of
// a document.
func diagramEdges(t *testing.T, path, startMarker, endMarker string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if startMarker != "" {
		i := strings.Index(text, startMarker)
		if i < 0 {
			t.Fatalf("%s: no %q", path, startMarker)
		}
		text = text[i:]
		if j := strings.Index(text, endMarker); j > 0 {
			text = text[:j]
		}
	}
	re := regexp.MustCompile(`([a-z_]+) ─[^▶\n]*▶ ([a-z_]+)`)
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		seen[m[1]+" → "+m[2]] = true
	}
	var out []string
	for e := range seen {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

func tableEdges() []string {
	var out []string
	for _, e := range topup.Transitions() {
		out = append(out, string(e.From)+" → "+string(e.To))
	}
	sort.Strings(out)
	return out
}

// The diagrams in the package doc, in machine.go and in
// docs/design/state-machine.md
// draw exactly the edges of the transition table: they cannot drift.
func TestDiagramsMatchTheTransitionTable(t *testing.T) {
	want := tableEdges()
	for _, d := range []struct{ path, start, end string }{
		{"topup.go", "// Package topup", "package topup"},
		{"machine.go", "// The state machine.", "// edge is one allowed"},
		{"../../docs/design/state-machine.md", "<!-- state-machine -->", "<!-- /state-machine -->"},
	} {
		got := diagramEdges(t, d.path, d.start, d.end)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s draws\n  %s\nthe table has\n  %s", d.path, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// The table's rules: only bank-verified credits may be taken without the
// lease; failed needs the bank's word or a deadline or a person, never a
// callback's claim; nothing leaves credited.
func TestTransitionTableRules(t *testing.T) {
	for _, e := range topup.Transitions() {
		if e.From == topup.StatusCredited {
			t.Errorf("an edge leaves credited: %s → %s", e.From, e.To)
		}
		if len(e.Actors) == 0 {
			t.Errorf("%s → %s: nobody may take it", e.From, e.To)
		}
		open := e.From == topup.StatusAwaitingPayment || e.From == topup.StatusPendingVerification || e.From == topup.StatusSettling
		if open && e.To != topup.StatusCredited && !e.Lease {
			t.Errorf("%s → %s leaves an open payment without the lease", e.From, e.To)
		}
		if e.To == topup.StatusCredited {
			for _, a := range e.Actors {
				if a == topup.ActorSubmit {
					t.Errorf("%s → credited by submit: only a verify credits", e.From)
				}
			}
		}
	}
}
