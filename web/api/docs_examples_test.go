package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The sample answers in docs/api.md are real answers (issue 29, item 10):
// each JSON line of its session is a TopUp or a Problem of the OpenAPI
// document, the top-ups name their gateway, and one shows payment_form.
func TestDocsExamplesMatchTheSchema(t *testing.T) {
	sp := loadSpec(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	topUps, problems, forms := 0, 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("docs/api.md: a sample answer is not JSON (%v): %s", err, line)
			continue
		}
		schema := "TopUp"
		if _, ok := v["code"]; ok {
			schema = "Problem"
			problems++
		} else {
			topUps++
			if _, ok := v["payment_form"]; ok {
				forms++
			}
		}
		var doc any = v
		if err := sp.doc.Components.Schemas[schema].Value.VisitJSON(doc, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("docs/api.md: a sample %s does not match the schema: %v\n%s", schema, err, line)
		}
	}
	if topUps < 3 || problems < 1 || forms < 1 {
		t.Errorf("docs/api.md shows %d top-ups (%d with payment_form) and %d problems: want the session's answers", topUps, forms, problems)
	}
}
