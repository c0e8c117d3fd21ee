package zarinpal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
)

// TestCodeClassification is the driver's whole code table: for each code,
// what verify answers and what the other operations answer. "refusal" is
// an unknown outcome (a *gateway.TransientError) that is a refusal about
// one payment (gateway.IsPerPaymentRefusal): it never counts toward the
// breaker and never fails a payment.
func TestCodeClassification(t *testing.T) {
	tests := []struct {
		code   int
		verify string // a VerifyOutcome, or an error kind
		others string // request, inquiry, unverified
	}{
		{-9, "invalid", "rejected"},
		// Our terminal refused (-10, -11, -15, -16, -17): a verify
		// learns nothing of the payment, so its outcome stays unknown.
		{-10, "transient", "rejected"},
		{-11, "transient", "rejected"},
		{-12, "refusal", "refusal"},
		{-15, "transient", "rejected"},
		{-16, "transient", "rejected"},
		{-17, "transient", "rejected"},
		{-50, "amount_mismatch", "rejected"},
		{-51, "not_paid", "rejected"},
		{-52, "transient", "transient"},
		{-53, "invalid", "rejected"},
		{-54, "invalid", "rejected"},
		{-55, "invalid", "rejected"},
		{102, "transient", "transient"},
	}
	for _, tt := range tests {
		body := fmt.Sprintf(`{"data":[],"errors":{"code":%d,"message":"m"}}`, tt.code)
		if tt.code > 0 {
			body = fmt.Sprintf(`{"data":{"code":%d,"message":"m"},"errors":[]}`, tt.code)
		}
		for op, run := range operations() {
			t.Run(fmt.Sprintf("%d/%s", tt.code, op), func(t *testing.T) {
				bank := newBank(t, answerSpec{body: body})
				want := tt.others
				var got string
				if op == "verify" {
					want = tt.verify
					vr, err := bank.client(t).Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000})
					got = kindOf(err)
					if err == nil {
						got = string(vr.Outcome)
						if vr.Code != tt.code {
							t.Errorf("result code %d, want %d", vr.Code, tt.code)
						}
					}
				} else {
					got = kindOf(run(ctxT(t), bank.client(t)))
				}
				if got != want {
					t.Errorf("code %d on %s: got %s, want %s", tt.code, op, got, want)
				}
			})
		}
	}
}

// kindOf names an error's class for TestCodeClassification.
func kindOf(err error) string {
	var te *gateway.TransientError
	var re *gateway.RejectedError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &re):
		return "rejected"
	case gateway.IsPerPaymentRefusal(err) && errors.As(err, &te):
		return "refusal"
	case errors.As(err, &te):
		return "transient"
	}
	return fmt.Sprintf("untyped %T", err)
}

// An HTTP 429 is the bank (or a proxy in front of it) limiting the whole
// terminal, whatever its body says: a transient error, not a refusal about
// one payment (the resilient caller retries it and keeps it out of the
// breaker's counts).
func TestHTTP429IsNotAPerPaymentRefusal(t *testing.T) {
	bank := newBank(t, answerSpec{status: 429, body: `{"data":[],"errors":{"code":-12,"message":"Too many attempts"}}`})
	_, err := bank.client(t).Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000})
	if got := kindOf(err); got != "transient" {
		t.Fatalf("429 with -12: got %s (%v), want transient", got, err)
	}
}
