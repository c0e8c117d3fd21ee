package sep

import (
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/wire"
)

// Its settings (environment variables).
const (
	SettingTerminalID = "SEP_TERMINAL_ID"
	SettingBaseURL    = "SEP_BASE_URL"
)

// SandboxProtocol is the sandbox bank's imitation of SEP's token flow.
const SandboxProtocol = "sep-token"

// SandboxTerminalID is the terminal used with the built-in sandbox bank.
const SandboxTerminalID = "13000001"

// Driver is SEP as a plug-in (see gateway.Driver). From SEP's IPG
// documents (gateways.md §4, gateways-more.md §2.2): the payer is sent by
// an auto-posted form (field Token) and comes back by POST; verify needs
// the callback's RefNum; ResultCode 2 means verified before; verify within
// 30 minutes (then SEP returns the money), reverse within 50; no list of
// unverified payments, a receipt per token for an hour; rials.
func Driver() gateway.Driver {
	return gateway.Driver{
		Name:  Name,
		Label: "Saman (SEP)",
		Capabilities: gateway.Capabilities{
			Redirect:        gateway.RedirectPOSTForm,
			Callback:        gateway.CallbackPOST,
			AlreadyVerified: []gateway.Signal{{Op: opVerify, Code: resultDuplicate}},
			VerifyDeadline:  gateway.Within(30 * time.Minute),
			ReverseWindow:   gateway.Within(50 * time.Minute),
			VerifyData:      gateway.VerifyNeedsCallback,
			// The receipt API names a token's RefNum for an hour after
			// the token, and only before verify or reverse.
			Receipt:        gateway.Within(time.Hour),
			Reconcile:      gateway.ReconcileInquiry,
			Unit:           gateway.UnitRial,
			MinAmountRials: 10_000,
			Settle:         gateway.Window{Kind: gateway.WindowNone},
			// ReverseTransaction returns the whole sale, within 50 minutes
			// of the transaction once verified.
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundReverse},
		},
		ParseCallback: ParseCallback,
		Settings: []gateway.Setting{
			{Env: SettingTerminalID, Required: true,
				Doc:   "the SEP terminal's number (TerminalId), digits",
				Check: wire.TerminalID},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "SEP's host: " + ProductionBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: func(v string) (string, error) { return wire.BaseURL(v, "the terminal id") }},
		},
		URLSetting: SettingBaseURL,
		New: func(s gateway.Settings, d gateway.Deps) (gateway.Gateway, error) {
			return New(Config{TerminalID: s[SettingTerminalID], BaseURL: s[SettingBaseURL], HTTPClient: d.HTTPClient, Logger: d.Logger, Now: d.Now})
		},
		Sandbox: gateway.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingTerminalID: SandboxTerminalID, SettingBaseURL: bankURL}
			},
		},
	}
}

// ParseCallback reads SEP's callback: POST form fields (the query too, for
// SEP's GetMethod variant) Token, State, Status, RefNum (and ResNum,
// TraceNo, RRN, which nothing here trusts). The token is required; RefNum
// is the receipt verify needs, present only when the payer paid. Only
// State=OK or Status=2 with a RefNum claims a payment.
func ParseCallback(query, form func(key string) string, isPost bool) (callback.Params, bool) {
	get := callback.FormFirst(query, form, isPost)
	raw := get("Token")
	if raw == "" && !isPost {
		// Our own result page after the POST (Post/Redirect/Get) names the
		// token as Authority.
		raw = query("Authority")
	}
	token, ok := callback.Token(raw)
	if !ok {
		return callback.Params{}, false
	}
	receipt := callback.Receipt(get("RefNum"))
	paid := receipt != "" && (get("State") == "OK" || get("Status") == "2")
	return callback.Params{Authority: token, Receipt: receipt, ClaimsPaid: paid}, true
}
