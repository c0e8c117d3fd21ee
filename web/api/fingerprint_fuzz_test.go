package api

import (
	"encoding/json"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// FuzzTopUpFingerprint: a body the API accepts means exactly what it
// parsed to. Two accepted bodies have one fingerprint exactly when they
// parse to the same request, and an accepted body written again (another
// key order, spacing, escapes) keeps its fingerprint.
func FuzzTopUpFingerprint(f *testing.F) {
	for _, pair := range [][2]string{
		{`{"amount_rials": 100000, "AMOUNT_RIALS": 200000}`, `{"AMOUNT_RIALS": 200000, "amount_rials": 100000}`},
		{`{"amount_rials": 100000, "description": "x"}`, `{"description":"x","amount_rials":100000}`},
		{`{"amount_rials": 100000, "amount_rials": 200000}`, `{"amount_rials": 200000}`},
		{`{"amount_rials": 100000, "description": null}`, `{"amount_rials": 100000}`},
		{`{"amount_rials": 100000, "description": ""}`, `{"amount_rials": 100000}`},
		{`{"amount_rials": "100000"}`, `{"amount_rials": 1e5}`},
		{`{"description": "\u00e9"}`, `{"description": "é"}`},
	} {
		f.Add([]byte(pair[0]), []byte(pair[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, errA := parseTopUpRequest(a)
		rb, errB := parseTopUpRequest(b)
		for _, tc := range []struct {
			body []byte
			r    topUpRequest
			err  error
		}{{a, ra, errA}, {b, rb, errB}} {
			if tc.err != nil {
				continue
			}
			// Re-encoded in another order, it is the same request.
			fields := map[string]any{}
			if tc.r.Description != nil {
				fields["description"] = *tc.r.Description
			}
			if tc.r.AmountRials != nil {
				fields["amount_rials"] = *tc.r.AmountRials
			}
			again, err := json.Marshal(fields)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := parseTopUpRequest(again)
			if err != nil {
				t.Fatalf("%q parsed, but its re-encoding %q did not: %v", tc.body, again, err)
			}
			if tc.r.fingerprint("POST", routes.APITopUps) != r2.fingerprint("POST", routes.APITopUps) {
				t.Fatalf("%q and its re-encoding %q have two fingerprints", tc.body, again)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		same := equalPtr(ra.AmountRials, rb.AmountRials) && equalPtr(ra.Description, rb.Description)
		if fpSame := ra.fingerprint("POST", "/p") == rb.fingerprint("POST", "/p"); fpSame != same {
			t.Fatalf("%q and %q: same fingerprint %v, same request %v", a, b, fpSame, same)
		}
	})
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
