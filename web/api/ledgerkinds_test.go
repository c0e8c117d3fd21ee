package api_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/web/api"
)

// The kinds GET /api/v1/wallet/ledger may answer with are exactly the
// ones the OpenAPI document promises: every kind the ledger may write
// (not the reserved release, which Validate refuses).
func TestLedgerKindsMatchTheDocument(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				LedgerEntry struct {
					Properties struct {
						Kind struct {
							Enum []string `json:"enum"`
						} `json:"kind"`
					} `json:"properties"`
				} `json:"LedgerEntry"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	documented := doc.Components.Schemas.LedgerEntry.Properties.Kind.Enum
	var written []string
	for _, k := range ledger.Kinds() {
		if k.Written() {
			written = append(written, string(k))
		}
	}
	slices.Sort(written)
	slices.Sort(documented)
	if len(written) == 0 || !slices.Equal(written, documented) {
		t.Fatalf("kinds the ledger writes %v, documented %v", written, documented)
	}
}
