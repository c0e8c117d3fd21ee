package zarinpal

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/sandbank"
)

// refundClient is a driver with the card refund, against srv's bank.
func refundClient(t *testing.T, base string) *Client {
	t.Helper()
	c, err := New(Config{MerchantID: testMerchant, BaseURL: base, HTTPClient: &http.Client{},
		AccessToken: SandboxAccessToken, TerminalID: SandboxTerminalID, GraphQLURL: base + sandboxGraphQLPath})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if c.Ops().Refund == nil || c.Ops().RefundStatus == nil {
		t.Fatal("a client with an access token offers no card refund")
	}
	return c
}

// verifiedPayment requests, pays and verifies a payment of amount at the
// bank, and returns what a card refund is asked with.
func verifiedPayment(t *testing.T, c *Client, bank *sandbank.Bank, amount int64) gateway.RefundInput {
	t.Helper()
	in := requestInput()
	in.AmountRials = amount
	res, err := c.Request(ctxT(t), in)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if _, err := bank.Pay(res.Authority); err != nil {
		t.Fatalf("pay: %v", err)
	}
	vin := gateway.VerifyInput{Authority: res.Authority, AmountRials: amount}
	vr, err := c.Verify(ctxT(t), vin)
	if err != nil || !vr.Settled() {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	return gateway.RefundInput{Payment: vin, RefID: vr.RefID, Reference: "cr_test"}
}

// TestRefundThroughTheSandboxBank: AddRefund refunds part of a verified
// payment, then the rest; the Session's refunded total tells a refund
// made from one not made, and the bank refuses more than is left.
func TestRefundThroughTheSandboxBank(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c := refundClient(t, srv.URL)
	in := verifiedPayment(t, c, bank, 500_000)

	// Before any refund: a refund of 200,000 is not made.
	in.AmountRials = 200_000
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundNotDone || st.RefundedRials != 0 {
		t.Fatalf("status before: %+v %v", st, err)
	}
	res, err := c.Refund(ctxT(t), in)
	if err != nil || res.BankReference == "" || res.Status != "DONE" {
		t.Fatalf("refund: %+v %v", res, err)
	}
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundDone || st.RefundedRials != 200_000 {
		t.Fatalf("status after: %+v %v", st, err)
	}
	p, _ := bank.Payment(in.Payment.Authority)
	if p.RefundedAmount != 200_000 || len(p.Refunds) != 1 || p.Refunds[0].Method != "CARD" ||
		!strings.Contains(p.Refunds[0].Description, "cr_test") {
		t.Fatalf("the bank holds %+v", p)
	}

	// A second refund of more than is left is refused, definitely.
	second := in
	second.RefundedRials, second.AmountRials = 200_000, 300_001
	if _, err := c.Refund(ctxT(t), second); !gateway.IsRejected(err) {
		t.Fatalf("over the rest: %v, want a refusal", err)
	}
	// What differs from our figures is neither made nor not made.
	other := in
	other.RefundedRials, other.AmountRials = 100_000, 50_000
	if st, err := c.RefundStatus(ctxT(t), other); err != nil || st.Outcome != gateway.RefundDiffers {
		t.Fatalf("status of figures the bank does not hold: %+v %v", st, err)
	}
	second.AmountRials = 300_000
	if _, err := c.Refund(ctxT(t), second); err != nil {
		t.Fatalf("the rest: %v", err)
	}
	if p, _ := bank.Payment(in.Payment.Authority); p.RefundedAmount != 500_000 {
		t.Fatalf("refunded %d, want all", p.RefundedAmount)
	}
}

// TestRefundRefusedWithoutACall: what AddRefund would refuse is refused
// here, and a payment the bank does not know is a refund not sent.
func TestRefundRefusedWithoutACall(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c := refundClient(t, srv.URL)
	in := verifiedPayment(t, c, bank, 500_000)

	small := in
	small.AmountRials = MinRefundRials - 1
	if _, err := c.Refund(ctxT(t), small); !gateway.IsRejected(err) {
		t.Fatalf("below the minimum: %v", err)
	}
	unknown := in
	unknown.RefID, unknown.AmountRials = 999_999_999, MinRefundRials
	_, err := c.Refund(ctxT(t), unknown)
	if !errors.Is(err, gateway.ErrRefundNotSent) || gateway.IsRejected(err) {
		t.Fatalf("unknown reference: %v, want not sent", err)
	}
	if st := bank.Stats()["refund"]; st.Calls != 0 {
		t.Fatalf("AddRefund was called %d times", st.Calls)
	}
}

// TestRefundLostAnswer: a refund whose answer is withheld (the bank
// refunded) is an unknown outcome, and the status says it was made.
func TestRefundLostAnswer(t *testing.T) {
	bank := sandbank.New(sandbank.Options{})
	srv := httptest.NewServer(bank.Handler())
	defer srv.Close()
	c := refundClient(t, srv.URL)
	in := verifiedPayment(t, c, bank, 300_000)
	in.AmountRials = 300_000
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"refund": {CommitThenHang: true, HangMS: 50}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Refund(ctxT(t), in)
	if err == nil || gateway.IsRejected(err) || errors.Is(err, gateway.ErrRefundNotSent) {
		t.Fatalf("lost answer: %v, want an unknown outcome", err)
	}
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundDone {
		t.Fatalf("status: %+v %v", st, err)
	}
}

// TestNoRefundWithoutAToken: the card refund needs the access token and
// the terminal, both.
func TestNoRefundWithoutAToken(t *testing.T) {
	c := mustNew(t, "https://payment.zarinpal.com")
	if c.Ops().Refund != nil {
		t.Fatal("a client without a token offers a card refund")
	}
	if _, err := New(Config{MerchantID: testMerchant, BaseURL: "https://payment.zarinpal.com", AccessToken: "x"}); err == nil {
		t.Fatal("a token without a terminal is accepted")
	}
	if _, err := New(Config{MerchantID: testMerchant, BaseURL: "https://payment.zarinpal.com", AccessToken: "x", TerminalID: "1",
		GraphQLURL: "http://next.zarinpal.com/api/v4/graphql/"}); err == nil {
		t.Fatal("the token over plain http is accepted")
	}
}

// TestRefundOutcome is the reading of a session's refunded total.
func TestRefundOutcome(t *testing.T) {
	in := gateway.RefundInput{AmountRials: 30_000, RefundedRials: 20_000}
	for total, want := range map[int64]gateway.RefundOutcome{50_000: gateway.RefundDone, 20_000: gateway.RefundNotDone,
		0: gateway.RefundDiffers, 80_000: gateway.RefundDiffers, 30_000: gateway.RefundDiffers} {
		if got := RefundOutcome(total, in); got != want {
			t.Errorf("total %d: %s, want %s", total, got, want)
		}
	}
}

// TestGraphQLErrors: a validation error or an HTTP 4xx refuses; any
// other error leaves the outcome unknown.
func TestGraphQLErrors(t *testing.T) {
	for _, tt := range []struct {
		name     string
		status   int
		body     string
		rejected bool
	}{
		{"validation", 200, `{"data":null,"errors":[{"message":"bad amount","extensions":{"category":"validation"}}]}`, true},
		{"unauthenticated", 401, `{"errors":[{"message":"Unauthenticated."}]}`, true},
		{"internal", 200, `{"data":{"resource":null},"errors":[{"message":"Internal server error","extensions":{"category":"internal"}}]}`, false},
		{"gateway 502", 502, `<html>bad gateway</html>`, false},
		{"not GraphQL", 200, `{"ok":true}`, false},
		{"no resource", 200, `{"data":{"resource":null}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if strings.Contains(string(body), "Session(") {
					_, _ = w.Write([]byte(`{"data":{"Session":[{"id":"7","status":"VERIFIED","amount":100000}]}}`))
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := New(Config{MerchantID: testMerchant, BaseURL: srv.URL, AccessToken: "t", TerminalID: "1", GraphQLURL: srv.URL + "/graphql/"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Refund(ctxT(t), gateway.RefundInput{RefID: 5, AmountRials: 50_000})
			if err == nil || gateway.IsRejected(err) != tt.rejected || errors.Is(err, gateway.ErrRefundNotSent) {
				t.Fatalf("%v: rejected %v, want %v", err, gateway.IsRejected(err), tt.rejected)
			}
		})
	}
}
