package topup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/topup"
)

// TestPlanCallbackData: what reconciliation asks about a payment not
// credited at a gateway whose verify needs the callback's data. SEP
// (a receipt of the token stands in for the callback for an hour): its
// receipt within the hour, whatever the status; past it, a payment whose
// outcome we do not know is reported as beyond the bank's API, a failed
// one (the bank's word) is not. Mellat (only the callback carries the
// sale's reference): its sale when a callback brought the reference;
// without one, an ended payment whose payer never came back is reported,
// one that came back without a sale (the bank's word) and an open one
// (its callback may still come) are not.
func TestPlanCallbackData(t *testing.T) {
	sep := topup.GatewayRules{NeedsCallback: true, ReceiptLife: time.Hour, VerifyDeadline: 30 * time.Minute}
	mellat := topup.GatewayRules{NeedsCallback: true, VerifyDeadline: 20 * time.Minute}
	for _, tt := range []struct {
		name     string
		rules    topup.GatewayRules
		status   topup.Status
		age      time.Duration
		returned bool
		receipt  bool
		ask      topup.CallbackDataAsk
		kind     string
	}{
		{"sep open within the hour", sep, topup.StatusAwaitingPayment, 10 * time.Minute, false, false, topup.AskReceipt, ""},
		{"sep failed within the hour", sep, topup.StatusFailed, 40 * time.Minute, true, false, topup.AskReceipt, ""},
		{"sep under review at the hour exactly", sep, topup.StatusNeedsReview, time.Hour, false, true, topup.AskReceipt, ""},
		{"sep under review past the hour", sep, topup.StatusNeedsReview, time.Hour + time.Second, false, false, topup.AskNothing, topup.KindReceiptExpired},
		{"sep open past the hour", sep, topup.StatusPendingVerification, 2 * time.Hour, false, true, topup.AskNothing, topup.KindReceiptExpired},
		{"sep failed past the hour", sep, topup.StatusFailed, 2 * time.Hour, false, false, topup.AskNothing, ""},
		{"mellat with the callback's reference", mellat, topup.StatusNeedsReview, 3 * time.Hour, true, true, topup.AskSale, ""},
		{"mellat open with the reference", mellat, topup.StatusPendingVerification, 5 * time.Minute, true, true, topup.AskSale, ""},
		{"mellat failed with the reference", mellat, topup.StatusFailed, 5 * time.Hour, true, true, topup.AskSale, ""},
		{"mellat never came back, under review", mellat, topup.StatusNeedsReview, 30 * time.Minute, false, false, topup.AskNothing, topup.KindNoCallback},
		{"mellat never came back, failed", mellat, topup.StatusFailed, 30 * time.Minute, false, false, topup.AskNothing, topup.KindNoCallback},
		{"mellat came back without a sale", mellat, topup.StatusFailed, 30 * time.Minute, true, false, topup.AskNothing, ""},
		{"mellat still open without a callback", mellat, topup.StatusAwaitingPayment, 5 * time.Minute, false, false, topup.AskNothing, ""},
	} {
		p := topup.TopUp{Status: tt.status, CreatedAt: t0.Add(-tt.age)}
		if tt.returned {
			p.ReturnedAt = ptr(p.CreatedAt.Add(time.Minute))
		}
		if tt.receipt {
			p.Receipt = ptr("123456789")
		}
		got := topup.PlanCallbackData(p, t0, tt.rules)
		if got.Ask != tt.ask || got.Kind != tt.kind || (got.Kind != "") != (got.Detail != "") {
			t.Errorf("%s: %+v, want ask %d kind %q (with a detail)", tt.name, got, tt.ask, tt.kind)
		}
	}
}

// TestCallbackDataVerdict: the bank holding a payment paid or verified
// is checked (verify, settle, credit) as the worker would; its definite
// "not paid" is not reported; SEP no longer keeping the receipt is
// checked when a callback brought the RefNum (its verify says what
// happened), else reported; an answer we do not know is reported.
func TestCallbackDataVerdict(t *testing.T) {
	for _, tt := range []struct {
		name    string
		status  gateway.InquiryStatus
		receipt bool
		act     bool
		kind    string
	}{
		{"paid", gateway.InquiryPaid, false, true, ""},
		{"verified", gateway.InquiryVerified, true, true, ""},
		{"in the bank", gateway.InquiryInBank, false, false, ""},
		{"failed", gateway.InquiryFailed, false, false, ""},
		{"reversed", gateway.InquiryReversed, true, false, ""},
		{"gone, with the RefNum", gateway.InquiryGone, true, true, ""},
		{"gone, without it", gateway.InquiryGone, false, false, "unresolved"},
		{"a code we do not know", gateway.InquiryStatus("CODE_44"), true, false, "unresolved"},
	} {
		p := topup.TopUp{Status: topup.StatusNeedsReview}
		if tt.receipt {
			p.Receipt = ptr("123456789")
		}
		act, kind, detail := topup.CallbackDataVerdict(p, gateway.InquiryResult{Status: tt.status})
		if act != tt.act || kind != tt.kind || (kind != "") != (detail != "") || (kind != "" && !strings.Contains(detail, "needs_review here")) {
			t.Errorf("%s: act %v kind %q detail %q, want act %v kind %q", tt.name, act, kind, detail, tt.act, tt.kind)
		}
	}
}
