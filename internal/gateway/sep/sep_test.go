package sep_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/sep"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/testclock"
)

const callbackURL = "https://wallet.example.ir/payments/abcdefghijklmnopqrstuvwx/return"

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clock is the tests' adjustable clock.
type clock = testclock.Clock

func newBank(t *testing.T) (*sandbank.Bank, *sep.Client, *clock) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	bank := sandbank.New(sandbank.Options{Clock: clk.Now})
	srv := httptest.NewServer(bank.Handler())
	t.Cleanup(srv.Close)
	d := sep.Driver()
	g, err := d.New(d.Sandbox.Settings(srv.URL), gateway.Deps{HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	return bank, g.(*sep.Client), clk
}

func request(t *testing.T, c *sep.Client, amount int64) string {
	t.Helper()
	res, err := c.Request(ctxT(t), gateway.RequestInput{AmountRials: amount, CallbackURL: callbackURL, OrderID: "abcdefghijklmnopqrstuvwx", Description: "top-up"})
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return res.Authority
}

// parse runs the driver's callback parser on the bank's callback request.
func parse(t *testing.T, cb sandbank.CallbackRequest) (string, string, bool) {
	t.Helper()
	if cb.Method != http.MethodPost || cb.URL != callbackURL {
		t.Fatalf("callback %s %s, want POST %s", cb.Method, cb.URL, callbackURL)
	}
	p, ok := sep.ParseCallback(func(string) string { return "" }, func(k string) string { return cb.Form[k] }, true)
	if !ok {
		t.Fatalf("callback %v not parsed", cb.Form)
	}
	return p.Authority, p.Receipt, p.ClaimsPaid
}

// The whole SEP flow against the sandbox bank over HTTP: token, the POST
// form, pay, the POST callback, verify (0), verify again (2: already
// verified, never a failure), the amount and reference as the bank holds
// them.
func TestFlowAgainstSandbank(t *testing.T) {
	bank, c, _ := newBank(t)
	tok := request(t, c, 150_000)
	form := c.PayForm(tok)
	if !strings.HasSuffix(form.Action, sep.PathPay) || len(form.Fields) != 1 || form.Fields[0] != (gateway.FormField{Name: "Token", Value: tok}) {
		t.Fatalf("pay form %+v", form)
	}
	cb, err := bank.Finish(tok, true)
	if err != nil {
		t.Fatal(err)
	}
	gotTok, receipt, claims := parse(t, cb)
	if gotTok != tok || receipt == "" || !claims {
		t.Fatalf("callback parsed as %q %q %v", gotTok, receipt, claims)
	}
	in := gateway.VerifyInput{Authority: tok, AmountRials: 150_000, OrderID: "abcdefghijklmnopqrstuvwx", Receipt: receipt}
	vr, err := c.Verify(ctxT(t), in)
	in.ReceiptConfirmed = true // the token's receipt named it: the payment keeps it as the bank's
	if err != nil || vr.Outcome != gateway.VerifyPaid || vr.Code != 0 {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	p, _ := bank.Payment(tok)
	if vr.RefID != p.RefID || vr.RefID <= 0 || vr.AmountRials != 150_000 || vr.CardPANMasked != p.CardPAN || p.State != sandbank.StateVerified {
		t.Fatalf("verify %+v, bank %+v", vr, p)
	}
	again, err := c.Verify(ctxT(t), in)
	if err != nil || again.Outcome != gateway.VerifyAlreadyVerified || again.Code != 2 || again.RefID != vr.RefID || !again.ReceiptAlone {
		t.Fatalf("second verify: %+v %v", again, err)
	}
	// Another amount than the bank's: never paid to us.
	in.AmountRials = 100_000
	if mm, err := c.Verify(ctxT(t), in); err != nil || mm.Outcome != gateway.VerifyAmountMismatch || mm.RefID != 0 {
		t.Fatalf("verify with another amount: %+v %v", mm, err)
	}
	// After verify the receipt is gone (SEP keeps it only until verify).
	if ir, err := c.Inquire(ctxT(t), tok); err != nil || ir.Status == gateway.InquiryPaid {
		t.Fatalf("receipt after verify: %+v %v", ir, err)
	}
}

// A cancelled payment: the callback carries no RefNum, so there is
// nothing to verify ("not paid" without a call) and the receipt of the
// token says cancelled (FAILED). A payer still on the page: IN_BANK.
func TestCancelAndInBank(t *testing.T) {
	bank, c, _ := newBank(t)
	open := request(t, c, 20_000)
	if ir, err := c.Inquire(ctxT(t), open); err != nil || ir.Status != gateway.InquiryInBank {
		t.Fatalf("receipt of an open token: %+v %v", ir, err)
	}
	tok := request(t, c, 20_000)
	cb, err := bank.Finish(tok, false)
	if err != nil {
		t.Fatal(err)
	}
	_, receipt, claims := parse(t, cb)
	if receipt != "" || claims || cb.Form["State"] != "CanceledByUser" {
		t.Fatalf("cancel callback %v", cb.Form)
	}
	calls := bank.Stats()["sep-verify"].Calls
	vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: tok, AmountRials: 20_000})
	if err != nil || vr.Outcome != gateway.VerifyNotPaid {
		t.Fatalf("verify without RefNum: %+v %v", vr, err)
	}
	if bank.Stats()["sep-verify"].Calls != calls {
		t.Fatal("verify without a RefNum called the bank")
	}
	if ir, err := c.Inquire(ctxT(t), tok); err != nil || ir.Status != gateway.InquiryFailed {
		t.Fatalf("receipt of a cancelled token: %+v %v", ir, err)
	}
}

// A forged RefNum (not the bank's) is "not paid"; SEP's reversal of a
// payment not verified within 30 minutes is a definite refusal (never a
// credit, never "failed" on our side without review).
func TestForgedReceiptAndTooLate(t *testing.T) {
	bank, c, clk := newBank(t)
	tok := request(t, c, 50_000)
	if vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: tok, AmountRials: 50_000, Receipt: "forged-refnum"}); err != nil || vr.Outcome != gateway.VerifyNotPaid {
		t.Fatalf("forged receipt: %+v %v", vr, err)
	}
	cb, err := bank.Finish(tok, true)
	if err != nil {
		t.Fatal(err)
	}
	_, receipt, _ := parse(t, cb)
	clk.Add(31 * time.Minute)
	vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: tok, AmountRials: 50_000, Receipt: receipt, ReceiptConfirmed: true})
	if err != nil || vr.Outcome != gateway.VerifyInvalid || vr.Code != -6 {
		t.Fatalf("verify after 31 minutes: %+v %v", vr, err)
	}
	if p, _ := bank.Payment(tok); p.State != sandbank.StateReversed {
		t.Fatalf("bank state %s, want REVERSED", p.State)
	}
}

// Issue 31 item 1: once SEP no longer keeps a token's receipt (an hour),
// a kept RefNum the bank never confirmed for that token (a callback's
// word: here another payment's fresh sale) is not verified at all
// (VerifyTransaction names no token); a confirmed one is verified on its
// own and the answer says so (ReceiptAlone), so that a fresh success on
// it credits nothing.
func TestLoneReceiptOnlyWhenConfirmed(t *testing.T) {
	bank, c, clk := newBank(t)
	old := request(t, c, 50_000)
	if _, err := bank.Finish(old, false); err != nil {
		t.Fatal(err)
	}
	clk.Add(61 * time.Minute)
	fresh := request(t, c, 50_000)
	cb, err := bank.Finish(fresh, true)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := parse(t, cb)
	calls := bank.Stats()["sep-verify"].Calls
	in := gateway.VerifyInput{Authority: old, AmountRials: 50_000, Receipt: other}
	vr, err := c.Verify(ctxT(t), in)
	if err != nil || vr.Outcome != gateway.VerifyReceiptUnconfirmed || vr.ReceiptAlone {
		t.Fatalf("unconfirmed RefNum of another sale: %+v %v", vr, err)
	}
	if bank.Stats()["sep-verify"].Calls != calls {
		t.Fatal("an unconfirmed RefNum was verified on its own")
	}
	if p, _ := bank.Payment(fresh); p.State == sandbank.StateVerified {
		t.Fatalf("the other sale was verified: %+v", p)
	}
	in.ReceiptConfirmed = true
	if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyPaid || !vr.ReceiptAlone {
		t.Fatalf("confirmed RefNum verified on its own: %+v %v; want paid, ReceiptAlone", vr, err)
	}
}

// Time-outs and 5xx are outcome unknown (TransientError), never a failure;
// a refused token is a RejectedError.
func TestFaults(t *testing.T) {
	bank, c, _ := newBank(t)
	tok := request(t, c, 50_000)
	cb, _ := bank.Finish(tok, true)
	_, receipt, _ := parse(t, cb)
	in := gateway.VerifyInput{Authority: tok, AmountRials: 50_000, Receipt: receipt, ReceiptConfirmed: true}

	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"sep-verify": {ErrorRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Verify(ctxT(t), in)
	var te *gateway.TransientError
	if !errors.As(err, &te) || te.HTTPStatus != 503 {
		t.Fatalf("5xx verify: %v", err)
	}
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"sep-verify": {CommitThenHang: true, HangMS: 30_000}}}); err != nil {
		t.Fatal(err)
	}
	// Time enough for the bank to commit on a loaded machine, far
	// short of its hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Verify(ctx, in); !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung verify: %v", err)
	}
	bank.ClearFaults()
	// The hung verify committed: the retry hears "already verified".
	if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyAlreadyVerified {
		t.Fatalf("verify after a hang: %+v %v", vr, err)
	}
	_, err = c.Request(ctxT(t), gateway.RequestInput{AmountRials: 5, CallbackURL: callbackURL, OrderID: "x"})
	if !gateway.IsRejected(err) {
		t.Fatalf("token for 5 rials: %v", err)
	}
}

// Answers are read leniently: numbers as strings, missing detail, a
// ResultCode 0 that says Success false is no success.
func TestVerifyDecoding(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		outcome    gateway.VerifyOutcome
		ref        int64
		transient  bool
	}{
		{"strings", `{"ResultCode":"0","Success":"true","TransactionDetail":{"RRN":"14411779380","RefNum":"R1","OrginalAmount":"10000","MaskedPan":"621986****1234"}}`, 200, gateway.VerifyPaid, 14411779380, false},
		// The cycling 6-digit trace number is never the bank reference on
		// its own (issue 31): no RRN, no reference (review, no_ref_id).
		{"trace number only", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R1","StraceNo":"123456","OrginalAmount":10000}}`, 200, gateway.VerifyPaid, 0, false},
		{"RRN and trace number", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R1","RRN":"14411779381","StraceNo":"123456","OrginalAmount":10000}}`, 200, gateway.VerifyPaid, 14411779381, false},
		{"the card paid our amount", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R1","RRN":"7","OrginalAmount":10000,"AffectiveAmount":10000}}`, 200, gateway.VerifyPaid, 7, false},
		// An online discount: the card paid less than our amount.
		{"the card paid less", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R1","RRN":"7","OrginalAmount":10000,"AffectiveAmount":"9000"}}`, 200, gateway.VerifyAmountMismatch, 0, false},
		{"the card paid our amount and a fee", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R1","RRN":"7","OrginalAmount":10000,"AffectiveAmount":10500}}`, 200, gateway.VerifyPaid, 7, false},
		{"duplicate without detail", `{"ResultCode":2,"ResultDescription":"تکراری"}`, 200, gateway.VerifyAlreadyVerified, 0, false},
		{"success false", `{"ResultCode":0,"Success":false}`, 200, "", 0, true},
		{"other receipt", `{"ResultCode":0,"Success":true,"TransactionDetail":{"RefNum":"R2","RRN":"5","OrginalAmount":10000}}`, 200, "", 0, true},
		{"not found", `{"ResultCode":-2}`, 200, gateway.VerifyNotPaid, 0, false},
		// Our terminal or address refused: nothing known of the sale.
		{"terminal", `{"ResultCode":-105}`, 200, "", 0, true},
		{"address refused", `{"ResultCode":-106}`, 200, "", 0, true},
		{"terminal unknown", `{"ResultCode":-104}`, 200, "", 0, true},
		{"address refused (-18)", `{"ResultCode":-18}`, 200, "", 0, true},
		{"a code not in the table", `{"ResultCode":-77}`, 200, "", 0, true},
		{"sep timeout", `{"ResultCode":-9998}`, 200, "", 0, true},
		{"html", `<html>bad gateway</html>`, 502, "", 0, true},
		{"no code", `{"Success":true}`, 200, "", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == sep.PathReceipt {
					// The token's receipt names R1: the verify is asked.
					_, _ = w.Write([]byte(`{"State":2,"RefNum":"R1"}`))
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := sep.New(sep.Config{TerminalID: "123", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: "T1", AmountRials: 10000, Receipt: "R1"})
			var te *gateway.TransientError
			if tt.transient != errors.As(err, &te) || (!tt.transient && err != nil) {
				t.Fatalf("err %v, want transient=%v", err, tt.transient)
			}
			if vr.Outcome != tt.outcome || vr.RefID != tt.ref {
				t.Fatalf("%+v, want %s ref %d", vr, tt.outcome, tt.ref)
			}
		})
	}
}

// A reversal's answer: only 0 is made and only a definite code a
// refusal; SEP's time-out, its exception and "already reversed" are
// unknown (a card refund taken as refused gives the money back to the
// wallet while the card may have it).
func TestReverseDecoding(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		status     int
		refused    bool
		unknown    bool
	}{
		{"made", `{"ResultCode":0,"Success":true}`, 200, false, false},
		{"made as a string", `{"ResultCode":"0"}`, 200, false, false},
		{"sep time-out", `{"ResultCode":-9998}`, 200, false, true},
		{"sep exception", `{"ResultCode":"-9999","ResultDescription":"exception"}`, 200, false, true},
		{"already reversed", `{"ResultCode":5}`, 200, false, true},
		{"too late", `{"ResultCode":-6}`, 200, true, false},
		{"not found", `{"ResultCode":-2}`, 200, true, false},
		{"terminal", `{"ResultCode":-105}`, 200, true, false},
		{"a code not in the table", `{"ResultCode":-77}`, 200, false, true},
		{"html", `<html>bad gateway</html>`, 502, false, true},
		{"no code", `{"Success":true}`, 200, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := sep.New(sep.Config{TerminalID: "123", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			in := gateway.VerifyInput{Authority: "T1", AmountRials: 10000, Receipt: "R1"}
			_, err = c.Refund(ctxT(t), gateway.RefundInput{Payment: in, AmountRials: 10000, Reference: "cr_x"})
			var te *gateway.TransientError
			switch {
			case tt.refused != gateway.IsRejected(err):
				t.Fatalf("err %v, want refused=%v", err, tt.refused)
			case tt.unknown != errors.As(err, &te):
				t.Fatalf("err %v, want unknown=%v", err, tt.unknown)
			case !tt.refused && !tt.unknown && err != nil:
				t.Fatalf("err %v, want made", err)
			}
		})
	}
}

// The callback parser: the token is required; a RefNum claims a payment
// only with State OK; GET (SEP's GetMethod) works too.
func TestParseCallback(t *testing.T) {
	form := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := func(string) string { return "" }
	if _, ok := sep.ParseCallback(none, form(map[string]string{"RefNum": "R"}), true); ok {
		t.Fatal("a callback without Token parsed")
	}
	p, ok := sep.ParseCallback(none, form(map[string]string{"Token": "T1", "RefNum": "R", "State": "OK", "Status": "2"}), true)
	if !ok || p.Authority != "T1" || p.Receipt != "R" || !p.ClaimsPaid {
		t.Fatalf("%+v %v", p, ok)
	}
	p, ok = sep.ParseCallback(form(map[string]string{"Token": "T1", "RefNum": "bad refnum", "State": "OK"}), none, false)
	if !ok || p.Receipt != "" || p.ClaimsPaid {
		t.Fatalf("malformed receipt: %+v %v", p, ok)
	}
}

// The driver's entry is complete and its settings are checked.
func TestDriverEntry(t *testing.T) {
	d := sep.Driver()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if _, errs := d.Read(func(k string) string { return map[string]string{sep.SettingTerminalID: "12ab"}[k] }); len(errs) == 0 {
		t.Fatal("a terminal id with letters was accepted")
	}
	s, errs := d.Read(func(k string) string {
		return map[string]string{sep.SettingTerminalID: "12345", sep.SettingBaseURL: "http://sep.example.ir"}[k]
	})
	if len(errs) == 0 {
		t.Fatalf("http to a remote host accepted: %v", s)
	}
}

// A payer who paid but whose browser never came back (no RefNum kept):
// verify asks the token's receipt, which names the RefNum, and verifies
// it; after verify SEP no longer keeps the receipt (outcome unknown, not
// "not paid").
func TestVerifyWithoutCallback(t *testing.T) {
	bank, c, _ := newBank(t)
	tok := request(t, c, 70_000)
	if _, err := bank.Finish(tok, true); err != nil {
		t.Fatal(err)
	}
	in := gateway.VerifyInput{Authority: tok, AmountRials: 70_000}
	vr, err := c.Verify(ctxT(t), in)
	p, _ := bank.Payment(tok)
	if err != nil || vr.Outcome != gateway.VerifyPaid || vr.RefID != p.RefID || vr.AmountRials != 70_000 || p.State != sandbank.StateVerified {
		t.Fatalf("verify without the callback: %+v %v; bank %+v", vr, err, p)
	}
	var te *gateway.TransientError
	if _, err := c.Verify(ctxT(t), in); !errors.As(err, &te) || te.HTTPStatus != 404 || !gateway.IsPerPaymentRefusal(err) {
		t.Fatalf("second verify without a RefNum: %v, want outcome unknown (404), a refusal for this payment (not the breaker's)", err)
	}
}

// TestNotPaidCause: a token's receipt that says not paid tells a cancel
// (CanceledByUser) from a page that timed out: a failed token whose
// payer had the page for SEP's 20-minute token lifetime (the sandbox
// bank's page expired); a failed one sooner is not said to be either.
// Decide turns the expired one, once the inquiry confirms it failed,
// into "the time ran out" (bank_expired).
func TestNotPaidCause(t *testing.T) {
	bank, c, _ := newBank(t)
	cancelled, expired := request(t, c, 20_000), request(t, c, 20_000)
	if _, err := bank.Cancel(cancelled); err != nil {
		t.Fatal(err)
	}
	if _, err := bank.Expire(expired); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		token string
		page  time.Duration
		want  gateway.NotPaidCause
	}{
		{"cancelled", cancelled, 2 * time.Minute, gateway.NotPaidCancelled},
		{"cancelled after a long page", cancelled, 25 * time.Minute, gateway.NotPaidCancelled},
		{"timed out", expired, 20 * time.Minute, gateway.NotPaidExpired},
		{"failed sooner", expired, 19 * time.Minute, gateway.NotPaidUnknown},
	} {
		vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: tt.token, AmountRials: 20_000, PageTime: tt.page})
		if err != nil || vr.Outcome != gateway.VerifyNotPaid || vr.NotPaid != tt.want {
			t.Errorf("%s: %+v %v, want not paid (%q)", tt.name, vr, err, tt.want)
		}
		if ir, err := c.Inquire(ctxT(t), tt.token); err != nil || ir.Status != gateway.InquiryFailed {
			t.Errorf("%s: inquiry %+v %v", tt.name, ir, err)
		}
	}
}

// Verify takes a RefNum only when SEP's receipt of our token names it:
// VerifyTransaction names no token, so a callback carrying another
// payment's RefNum (paid, not yet verified, the same amount) must not
// verify that sale for ours, and a RefNum the callback made up must not
// hide our token's own. Each row: which token is verified with which
// RefNum, the outcome, and which sales the bank then holds verified.
func TestVerifyTakesOnlyTheTokensRefNum(t *testing.T) {
	for _, tt := range []struct {
		name string
		// verify the token ours with the RefNum of receipt ("ours",
		// "other", or a literal); payOurs pays our token first.
		payOurs      bool
		receipt      string
		outcome      gateway.VerifyOutcome
		oursVerified bool
	}{
		{"our own RefNum", true, "ours", gateway.VerifyPaid, true},
		{"another payment's RefNum, ours unpaid", false, "other", gateway.VerifyNotPaid, false},
		{"another payment's RefNum, ours paid", true, "other", gateway.VerifyPaid, true},
		{"a made-up RefNum, ours paid", true, "made-up-refnum-0123456789", gateway.VerifyPaid, true},
		{"a made-up RefNum, ours unpaid", false, "made-up-refnum-0123456789", gateway.VerifyNotPaid, false},
		{"no RefNum, ours paid", true, "", gateway.VerifyPaid, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bank, c, _ := newBank(t)
			ours, other := request(t, c, 60_000), request(t, c, 60_000)
			cbOther, err := bank.Finish(other, true)
			if err != nil {
				t.Fatal(err)
			}
			_, otherRef, _ := parse(t, cbOther)
			var oursRef string
			if tt.payOurs {
				cb, err := bank.Finish(ours, true)
				if err != nil {
					t.Fatal(err)
				}
				_, oursRef, _ = parse(t, cb)
			}
			receipt := map[string]string{"ours": oursRef, "other": otherRef}[tt.receipt]
			if _, named := map[string]bool{"ours": true, "other": true}[tt.receipt]; !named {
				receipt = tt.receipt
			}
			vr, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: ours, AmountRials: 60_000, Receipt: receipt})
			if err != nil || vr.Outcome != tt.outcome {
				t.Fatalf("verify: %+v %v, want %s", vr, err, tt.outcome)
			}
			po, _ := bank.Payment(ours)
			if got := po.State == sandbank.StateVerified; got != tt.oursVerified {
				t.Fatalf("our sale %s, want verified=%v", po.State, tt.oursVerified)
			}
			if tt.oursVerified && (vr.RefID != po.RefID || vr.RefID <= 0) {
				t.Fatalf("verified reference %d, our sale's %d", vr.RefID, po.RefID)
			}
			if p, _ := bank.Payment(other); p.State != sandbank.StatePaid {
				t.Fatalf("the other payment's sale is %s, want still PAID (never verified for ours)", p.State)
			}
		})
	}
}

// The token's receipt unreachable: outcome unknown, and the kept RefNum
// is not verified blind.
func TestVerifyReceiptUnavailable(t *testing.T) {
	bank, c, _ := newBank(t)
	tok := request(t, c, 50_000)
	cb, _ := bank.Finish(tok, true)
	_, receipt, _ := parse(t, cb)
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"sep-inquiry": {ErrorRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	calls := bank.Stats()["sep-verify"].Calls
	_, err := c.Verify(ctxT(t), gateway.VerifyInput{Authority: tok, AmountRials: 50_000, Receipt: receipt})
	var te *gateway.TransientError
	if !errors.As(err, &te) {
		t.Fatalf("verify with the receipt API down: %v, want outcome unknown", err)
	}
	if p, _ := bank.Payment(tok); p.State != sandbank.StatePaid || bank.Stats()["sep-verify"].Calls != calls {
		t.Fatalf("bank %s after %d verify calls, want PAID and none", p.State, bank.Stats()["sep-verify"].Calls-calls)
	}
}

// The card refund of a SEP payment: a reversal of the whole sale within
// 50 minutes, refused for part of it or later; its status (a verify of the
// RefNum) tells a reversal made (5) from one not made (2).
func TestRefundIsAReversal(t *testing.T) {
	bank, c, clk := newBank(t)
	paid := func(amount int64) gateway.RefundInput {
		tok := request(t, c, amount)
		cb, err := bank.Finish(tok, true)
		if err != nil {
			t.Fatal(err)
		}
		_, receipt, _ := parse(t, cb)
		in := gateway.VerifyInput{Authority: tok, AmountRials: amount, OrderID: "abcdefghijklmnopqrstuvwx", Receipt: receipt}
		if vr, err := c.Verify(ctxT(t), in); err != nil || vr.Outcome != gateway.VerifyPaid {
			t.Fatalf("verify: %+v %v", vr, err)
		}
		in.ReceiptConfirmed = true
		return gateway.RefundInput{Payment: in, AmountRials: amount, Reference: "cr_x"}
	}
	in := paid(150_000)
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundNotDone || st.Code != 2 {
		t.Fatalf("status before: %+v %v", st, err)
	}
	part := in
	part.AmountRials = 100_000
	if _, err := c.Refund(ctxT(t), part); !gateway.IsRejected(err) {
		t.Fatalf("part of a sale: %v, want refused", err)
	}
	if res, err := c.Refund(ctxT(t), in); err != nil || res.BankReference != in.Payment.Receipt {
		t.Fatalf("refund: %+v %v", res, err)
	}
	if p, _ := bank.Payment(in.Payment.Authority); p.State != sandbank.StateReversed {
		t.Fatalf("bank holds %s", p.State)
	}
	if st, err := c.RefundStatus(ctxT(t), in); err != nil || st.Outcome != gateway.RefundDone || st.Code != 5 {
		t.Fatalf("status after: %+v %v", st, err)
	}
	// A second reversal is not made (5, already reversed), nor taken as
	// a refusal: unknown, and the status says it is reversed.
	calls := bank.Stats()["sep-reverse"].Calls
	if _, err := c.Refund(ctxT(t), in); err == nil || gateway.IsRejected(err) {
		t.Fatalf("second reversal: %v, want outcome unknown", err)
	}
	if p, _ := bank.Payment(in.Payment.Authority); p.State != sandbank.StateReversed || bank.Stats()["sep-reverse"].Calls != calls+1 {
		t.Fatalf("bank holds %s after a second reversal", p.State)
	}
	// Past the window: refused by the bank.
	late := paid(80_000)
	clk.Add(51 * time.Minute)
	if _, err := c.Refund(ctxT(t), late); !gateway.IsRejected(err) {
		t.Fatalf("after 50 minutes: %v", err)
	}
	// A lost answer: unknown, and the status says it was made.
	lost := paid(60_000)
	if err := bank.SetFaults(sandbank.Faults{Ops: map[string]sandbank.OpFaults{"sep-reverse": {CommitThenHang: true, HangMS: 50}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refund(ctxT(t), lost); err == nil || gateway.IsRejected(err) {
		t.Fatalf("lost answer: %v, want unknown", err)
	}
	if st, err := c.RefundStatus(ctxT(t), lost); err != nil || st.Outcome != gateway.RefundDone {
		t.Fatalf("status of the lost one: %+v %v", st, err)
	}
}
