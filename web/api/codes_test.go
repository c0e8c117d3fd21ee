package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// The codes the server can answer with are exactly the ones the OpenAPI
// document promises, each with a valid problem status.
func TestProblemCodesMatchTheDocument(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	documented := doc.Components.Schemas.Problem.Properties.Code.Enum
	var served []string
	for code, info := range codeInfo {
		served = append(served, string(code))
		if info.status < 400 || info.status > 599 || http.StatusText(info.status) == "" || info.title == "" {
			t.Errorf("code %s: status %d title %q", code, info.status, info.title)
		}
		p := newProblem(code, "")
		if p.Type != "urn:kifpool:problem:"+string(code) || p.Status != info.status {
			t.Errorf("problem %+v", p)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("codes served %v, documented %v", served, documented)
	}
}
