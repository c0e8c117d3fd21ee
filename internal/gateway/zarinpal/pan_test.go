package zarinpal

import (
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/gateway"
)

func TestMaskPAN(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unbroken", "6037991234567890", "603799******7890"},
		{"already masked", "628023******8998", "628023******8998"},
		{"ASCII dashes", "6037-9912-3456-7890", "603799******7890"},
		{"spaces", "6037 9912 3456 7890", "603799******7890"},
		{"padded", "  6037 9912 3456 7890  ", "603799******7890"},
		{"spaced dashes", "6037 - 9912 - 3456 - 7890", "603799******7890"},
		{"en dash", "6037–9912–3456–7890", "603799******7890"},
		{"em dash", "6037—9912—3456—7890", "603799******7890"},
		{"non-breaking hyphen", "6037‑9912‑3456‑7890", "603799******7890"},
		{"minus sign", "6037−9912−3456−7890", "603799******7890"},
		{"no-break spaces", "6037\u00a09912\u00a03456\u00a07890", "603799******7890"},
		{"thin spaces and LTR marks", "\u200e6037\u20099912\u20093456\u20097890", "603799******7890"},
		{"dots", "6037.9912.3456.7890", "603799******7890"},
		{"Persian digits", "۶۰۳۷-۹۹۱۲-۳۴۵۶-۷۸۹۰", "603799******7890"},
		{"masked with separators", "6280-23**-****-8998", "628023******8998"},
		{"masked with X", "628023XXXXXX8998", "628023******8998"},
		{"19 digits", "6037 9912 3456 7890 123", "603799*********0123"},
		{"a bank masking too little is masked more", "62802312**348998", "628023******8998"},
		{"empty", "", ""},
		{"too short to be a card", "1234-5678", "1234-5678"},
		{"junk around a card", "card: 6037-9912-3456-7890!", "card: 603799******7890!"},
		{"junk without a card", "n/a", "n/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := maskPAN(tt.in)
			if got != tt.want {
				t.Errorf("maskPAN(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if n := countDigits(got); n > 10 {
				t.Errorf("maskPAN(%q) = %q keeps %d digits", tt.in, got, n)
			}
		})
	}
}

func TestMaskDigitRuns(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unbroken card", "card 6037991234567890 refused", "card 603799******7890 refused"},
		{"dashed card", "card 6037-9912-3456-7890 refused", "card 603799******7890 refused"},
		{"spaced card", "card 6037 9912 3456 7890.", "card 603799******7890."},
		{"en-dashed card", "card 6037–9912–3456–7890", "card 603799******7890"},
		{"ref id is kept", "ref 59421827101", "ref 59421827101"},
		{"date is kept", "at 2020-07-01 17:33:25", "at 2020-07-01 17:33:25"},
		{"amounts are kept", "amount 1,000,000 rials", "amount 1,000,000 rials"},
		{"two short numbers far apart", "1234 and 5678", "1234 and 5678"},
		{"trailing separator", "6037-9912-3456-7890-", "603799******7890-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maskDigitRuns(tt.in); got != tt.want {
				t.Errorf("maskDigitRuns(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func countDigits(s string) int {
	n := 0
	for _, r := range s {
		if _, ok := digitValue(r); ok {
			n++
		}
	}
	return n
}

// The card a verify reports is stored (and so shown) masked whatever its
// separators; a success answer that also reports errors is no success.
func TestVerifyCardAndContradictions(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCard string // with no error
		wantErr  bool   // an unknown outcome (*gateway.TransientError)
	}{
		{name: "dashed card", body: `{"data":{"code":100,"ref_id":7,"card_pan":"6037-9912-3456-7890"},"errors":[]}`, wantCard: "603799******7890"},
		{name: "spaced card", body: `{"data":{"code":100,"ref_id":7,"card_pan":"6037 9912 3456 7890"},"errors":[]}`, wantCard: "603799******7890"},
		{name: "en-dashed card, 101", body: `{"data":{"code":101,"ref_id":7,"card_pan":"6037–9912–3456–7890"},"errors":{}}`, wantCard: "603799******7890"},
		{name: "100 with errors null", body: `{"data":{"code":100,"ref_id":7},"errors":null}`},
		{name: "100 with errors absent", body: `{"data":{"code":100,"ref_id":7}}`},
		{name: "100 with empty errors values", body: `{"data":{"code":100,"ref_id":7},"errors":{"message":"","validations":[]}}`},
		{name: "100 with an error message", body: `{"data":{"code":100,"ref_id":7},"errors":{"message":"Session is not valid"}}`, wantErr: true},
		{name: "100 with validations", body: `{"data":{"code":100,"ref_id":7},"errors":{"validations":[{"amount":"bad"}]}}`, wantErr: true},
		{name: "100 with errors as a list of strings", body: `{"data":{"code":100,"ref_id":7},"errors":["internal"]}`, wantErr: true},
		{name: "100 with errors as a string", body: `{"data":{"code":100,"ref_id":7},"errors":"timeout"}`, wantErr: true},
		{name: "101 with an error code of 101", body: `{"data":{"code":101,"ref_id":7},"errors":{"code":101,"message":"Verified"}}`, wantErr: true},
		{name: "100 only in errors", body: `{"data":[],"errors":{"code":100,"message":"Paid"}}`, wantErr: true},
		{name: "100 with an error code of -51", body: `{"data":{"code":100,"ref_id":7},"errors":{"code":-51}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bank := newBank(t, answerSpec{body: tt.body})
			got, err := bank.client(t).Verify(ctxT(t), gateway.VerifyInput{Authority: prodAuth, AmountRials: 150000})
			if tt.wantErr {
				checkErr(t, err, transient, 0, 200, 0)
				if got != (gateway.VerifyResult{}) {
					t.Errorf("got %+v with an error", got)
				}
				return
			}
			checkErr(t, err, noErr, 0, 0, 0)
			if !got.Settled() || got.RefID != 7 || got.CardPANMasked != tt.wantCard {
				t.Errorf("got %+v, want settled with ref 7 and card %q", got, tt.wantCard)
			}
			if strings.Contains(got.CardPANMasked, "9912") {
				t.Errorf("card %q not masked", got.CardPANMasked)
			}
		})
	}
}
