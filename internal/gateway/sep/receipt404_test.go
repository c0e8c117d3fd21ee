package sep_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/sep"
)

// receipt404Cases are 404s from the receipt API's address. Only SEP's own
// answer (a JSON content type and a JSON object, as the sandbox bank
// answers) says the receipt is gone; a proxy's, load balancer's or web
// server's 404 page, or an empty one, is no word from SEP.
type receipt404Case struct {
	name, contentType, body string
	gone                    bool
}

func receipt404Cases() []receipt404Case {
	return []receipt404Case{
		{"nginx html page", "text/html", "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", false},
		{"empty body", "", "", false},
		{"empty body said to be JSON", "application/json", "", false},
		{"plain text", "text/plain; charset=utf-8", "404 page not found\n", false},
		{"JSON body sent as html", "text/html", `{"error":"receipt not found"}`, false},
		{"JSON content type, html body", "application/json", "<html>404</html>", false},
		{"JSON that is no object", "application/json", `"not found"`, false},
		{"JSON null", "application/json", `null`, false},
		{"SEP's JSON answer", "application/json; charset=utf-8", `{"error":"receipt not found"}` + "\n", true},
		{"SEP's problem details", "application/problem+json", `{"title":"Not Found","status":404}`, true},
	}
}

// receipt404Server answers the receipt API with a 404 of the given form
// and counts VerifyTransaction calls (answered "already verified").
func receipt404Server(t *testing.T, contentType, body string) (*sep.Client, *atomic.Int32) {
	t.Helper()
	var verifies atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case sep.PathReceipt:
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(body))
		case sep.PathVerify:
			verifies.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ResultCode":2,"Success":true,"TransactionDetail":{"RefNum":"R1","RRN":"7","OrginalAmount":10000}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := sep.New(sep.Config{TerminalID: "123", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, &verifies
}

// TestInquireReceipt404: SEP's own 404 is InquiryGone; any other 404 is
// outcome unknown (a TransientError, asked again), never InquiryGone.
func TestInquireReceipt404(t *testing.T) {
	for _, tt := range receipt404Cases() {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := receipt404Server(t, tt.contentType, tt.body)
			res, err := c.Inquire(ctxT(t), "T1")
			if tt.gone {
				if err != nil || res.Status != gateway.InquiryGone || res.Code != http.StatusNotFound {
					t.Fatalf("inquiry %+v %v, want %s (404)", res, err, gateway.InquiryGone)
				}
				return
			}
			var te *gateway.TransientError
			if !errors.As(err, &te) || te.HTTPStatus != http.StatusNotFound || gateway.IsPerPaymentRefusal(err) || gateway.IsRejected(err) {
				t.Fatalf("inquiry %+v %v, want outcome unknown (a TransientError of HTTP 404)", res, err)
			}
			if res.Status == gateway.InquiryGone || res != (gateway.InquiryResult{}) {
				t.Fatalf("inquiry %+v with an error, want no result", res)
			}
		})
	}
}

// TestVerifyReceipt404: only SEP's own 404 lets verify go on as "the
// receipt is gone" (an unconfirmed kept RefNum is VerifyReceiptUnconfirmed,
// a confirmed one is verified alone, none is a refusal for this payment);
// any other 404 is outcome unknown, and VerifyTransaction is not called.
func TestVerifyReceipt404(t *testing.T) {
	inputs := []struct {
		name string
		in   gateway.VerifyInput
	}{
		{"unconfirmed RefNum", gateway.VerifyInput{Authority: "T1", AmountRials: 10000, Receipt: "R1"}},
		{"confirmed RefNum", gateway.VerifyInput{Authority: "T1", AmountRials: 10000, Receipt: "R1", ReceiptConfirmed: true}},
		{"no RefNum", gateway.VerifyInput{Authority: "T1", AmountRials: 10000}},
	}
	for _, tt := range receipt404Cases() {
		for _, vi := range inputs {
			t.Run(tt.name+"/"+vi.name, func(t *testing.T) {
				c, verifies := receipt404Server(t, tt.contentType, tt.body)
				vr, err := c.Verify(ctxT(t), vi.in)
				var te *gateway.TransientError
				if !tt.gone {
					if !errors.As(err, &te) || te.HTTPStatus != http.StatusNotFound || gateway.IsPerPaymentRefusal(err) || gateway.IsRejected(err) {
						t.Fatalf("verify %+v %v, want outcome unknown (a TransientError of HTTP 404, not a refusal)", vr, err)
					}
					if vr != (gateway.VerifyResult{}) {
						t.Fatalf("verify %+v with an error, want no result", vr)
					}
					if n := verifies.Load(); n != 0 {
						t.Fatalf("%d VerifyTransaction calls, want none", n)
					}
					return
				}
				switch {
				case vi.in.Receipt == "":
					if !errors.As(err, &te) || te.HTTPStatus != http.StatusNotFound || !gateway.IsPerPaymentRefusal(err) {
						t.Fatalf("verify %+v %v, want a refusal for this payment (404)", vr, err)
					}
				case !vi.in.ReceiptConfirmed:
					if err != nil || vr.Outcome != gateway.VerifyReceiptUnconfirmed || verifies.Load() != 0 {
						t.Fatalf("verify %+v %v after %d verify calls, want %s and none", vr, err, verifies.Load(), gateway.VerifyReceiptUnconfirmed)
					}
				default:
					if err != nil || vr.Outcome != gateway.VerifyAlreadyVerified || !vr.ReceiptAlone || verifies.Load() != 1 {
						t.Fatalf("verify %+v %v after %d verify calls, want %s alone after one", vr, err, verifies.Load(), gateway.VerifyAlreadyVerified)
					}
				}
			})
		}
	}
}
