package sep_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/sep"
)

// FuzzVerifyAnswer: whatever VerifyTransaction answers, verify never
// panics, never credits another amount than ours or without a reference
// being positive, and an error is never also a result.
func FuzzVerifyAnswer(f *testing.F) {
	for _, s := range []string{
		`{"ResultCode":0,"Success":true,"TransactionDetail":{"RRN":"1","RefNum":"R1","OrginalAmount":10000}}`,
		`{"ResultCode":"2"}`, `{"ResultCode":-2}`, `{"ResultCode":0,"Success":false}`, `[]`, `null`, `{"ResultCode":1e309}`,
	} {
		f.Add(s, 200)
	}
	var (
		mu     sync.Mutex
		body   string
		status int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b, st := body, status
		mu.Unlock()
		w.WriteHeader(st)
		_, _ = w.Write([]byte(b))
	}))
	defer srv.Close()
	c, err := sep.New(sep.Config{TerminalID: "1", BaseURL: srv.URL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b string, st int) {
		if st < 200 || st > 599 {
			st = 200
		}
		mu.Lock()
		body, status = b, st
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		vr, err := c.Verify(ctx, gateway.VerifyInput{AmountRials: 10000, Receipt: "R1"})
		if err != nil && vr != (gateway.VerifyResult{}) {
			t.Fatalf("an error with a result: %+v %v", vr, err)
		}
		if vr.Settled() && vr.AmountRials != 0 && vr.AmountRials != 10000 {
			t.Fatalf("paid with another amount: %+v", vr)
		}
	})
}
