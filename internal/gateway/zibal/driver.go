package zibal

import (
	"errors"
	"strings"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/wire"
)

// Its settings (environment variables).
const (
	SettingMerchant = "ZIBAL_MERCHANT"
	SettingBaseURL  = "ZIBAL_BASE_URL"
)

// SandboxProtocol is the sandbox bank's imitation of Zibal (its
// sandbank.ProtocolZibal).
const SandboxProtocol = "zibal-v1"

// Driver is Zibal IPG v1 as a plug-in (see gateway.Driver). From Zibal's
// documentation and the field notes: GET redirect to /start/{trackId},
// GET callback (trackId, success, status, orderId), 201 on a repeated
// verify, no documented verify deadline, no reversal, no settle, a
// per-payment inquiry and no list, rials on the wire, amounts above
// 1,000 rials.
func Driver() gateway.Driver {
	return gateway.Driver{
		Name:  "zibal",
		Label: "Zibal",
		Capabilities: gateway.Capabilities{
			Redirect:        gateway.RedirectGET,
			Callback:        gateway.CallbackGET,
			AlreadyVerified: []gateway.Signal{{Op: opVerify, Code: resultAlreadyVerified}},
			VerifyDeadline:  gateway.Window{Kind: gateway.WindowUnknown},
			ReverseWindow:   gateway.Window{Kind: gateway.WindowNone},
			Settle:          gateway.Window{Kind: gateway.WindowNone},
			VerifyData:      gateway.VerifyWithoutCallback,
			Reconcile:       gateway.ReconcileInquiry,
			Unit:            gateway.UnitRial,
			MinAmountRials:  1_010, // above 1,000 rials, in whole tomans
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundNone,
				Why: "Zibal cannot reverse a payment, and its refund API (its code 26, \"refund not possible\", says one exists) is not documented where we could confirm it"},
		},
		ParseCallback: ParseCallback,
		Settings: []gateway.Setting{
			{Env: SettingMerchant, Required: true, Secret: true,
				Doc:   "the merchant id from Zibal's panel (`zibal` is Zibal's sandbox merchant)",
				Check: checkMerchant},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "Zibal's API and payment page base: " + ProductionBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: func(v string) (string, error) { return wire.BaseURL(v, "the merchant id") }},
		},
		URLSetting: SettingBaseURL,
		New: func(s gateway.Settings, d gateway.Deps) (gateway.Gateway, error) {
			return New(Config{Merchant: s[SettingMerchant], BaseURL: s[SettingBaseURL], HTTPClient: d.HTTPClient, Logger: d.Logger, Now: d.Now})
		},
		Sandbox: gateway.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingMerchant: SandboxMerchant, SettingBaseURL: bankURL}
			},
		},
	}
}

// checkMerchant accepts 1 to 64 letters and digits.
func checkMerchant(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 {
		return "", errors.New("want the merchant id from Zibal's panel (1 to 64 letters and digits)")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return "", errors.New("want letters and digits only")
		}
	}
	return v, nil
}

// ParseCallback reads Zibal's callback: GET ?trackId=&success=&status=
// &orderId= (a POST's form is read too). The trackId must be a positive
// number; success=1 with status=2 (paid, not verified) or 1 (verified)
// is the claim of payment. Hints only: the trackId must equal the
// payment's own, and only verify decides.
func ParseCallback(query, form func(string) string, isPost bool) (callback.Params, bool) {
	get := callback.QueryFirst(query, form, isPost)
	tok, ok := callback.Token(strings.TrimSpace(get("trackId")))
	if !ok {
		return callback.Params{}, false
	}
	if _, err := trackID(tok); err != nil {
		return callback.Params{}, false
	}
	st := get("status")
	return callback.Params{Authority: tok, ClaimsPaid: get("success") == "1" && (st == "2" || st == "1")}, true
}
