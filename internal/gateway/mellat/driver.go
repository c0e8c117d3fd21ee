package mellat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/callback"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Its settings (environment variables).
const (
	SettingTerminalID = "MELLAT_TERMINAL_ID"
	SettingUsername   = "MELLAT_USERNAME"
	SettingPassword   = "MELLAT_PASSWORD"
	SettingBaseURL    = "MELLAT_BASE_URL"
)

// SandboxProtocol is the sandbox bank's imitation of Mellat's SOAP service.
const SandboxProtocol = "mellat-soap"

// The credentials used with the built-in sandbox bank.
const (
	SandboxTerminalID = "5000001"
	SandboxUsername   = "kifpool"
	SandboxPassword   = "sandbox-password"
)

// Driver is Mellat as a plug-in (see gateway.Driver). From Mellat's IPG
// document 1.29 (gateways.md §5, gateways-more.md §2.3): the payer is sent
// by an auto-posted form (field RefId) and comes back by POST; verify and
// settle need the callback's SaleReferenceId; 43 means verified before and
// settle's 45 settled before; verify within 20 minutes (then the bank
// returns the money), reversal within 3 hours and before settle; a
// per-sale inquiry; rials; settle is required.
func Driver() gateway.Driver {
	return gateway.Driver{
		Name:  Name,
		Label: "Mellat (Behpardakht)",
		Capabilities: gateway.Capabilities{
			Redirect: gateway.RedirectPOSTForm,
			Callback: gateway.CallbackPOST,
			AlreadyVerified: []gateway.Signal{
				{Op: opVerify, Code: codeAlreadyVerified},
				{Op: opSettle, Code: codeAlreadySettled},
			},
			VerifyDeadline: gateway.Within(20 * time.Minute),
			ReverseWindow:  gateway.Within(3 * time.Hour),
			VerifyData:     gateway.VerifyNeedsCallback,
			// The SaleReferenceId comes with the callback only.
			Receipt:        gateway.Window{Kind: gateway.WindowNone},
			Reconcile:      gateway.ReconcileInquiry,
			Unit:           gateway.UnitRial,
			MinAmountRials: 10_000,
			// Settle right after verify; the bank documents no limit but
			// reversal ends 3 hours after verify, and only before settle.
			Settle: gateway.Within(3 * time.Hour),
			// bpReversalRequest returns the whole sale, within 3 hours of
			// verify and only before settle: a credited top-up is settled,
			// so it can no longer go back this way.
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundReverse, BeforeSettleOnly: true},
		},
		ParseCallback: ParseCallback,
		Settings: []gateway.Setting{
			{Env: SettingTerminalID, Required: true,
				Doc:   "the Mellat terminal's number (terminalId), digits",
				Check: wire.TerminalID},
			{Env: SettingUsername, Required: true,
				Doc:   "the terminal's user name (userName) from Behpardakht",
				Check: checkText},
			{Env: SettingPassword, Required: true, Secret: true,
				Doc:   "the terminal's password (userPassword) from Behpardakht",
				Check: checkText},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "Behpardakht's host: " + ProductionBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: func(v string) (string, error) { return wire.BaseURL(v, "the password") }},
		},
		URLSetting: SettingBaseURL,
		New: func(s gateway.Settings, d gateway.Deps) (gateway.Gateway, error) {
			return New(Config{TerminalID: s[SettingTerminalID], Username: s[SettingUsername], Password: s[SettingPassword],
				BaseURL: s[SettingBaseURL], HTTPClient: d.HTTPClient, Logger: d.Logger, Now: d.Now})
		},
		Sandbox: gateway.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingTerminalID: SandboxTerminalID, SettingUsername: SandboxUsername,
					SettingPassword: SandboxPassword, SettingBaseURL: bankURL}
			},
		},
	}
}

// ParseCallback reads Mellat's callback: POST form fields (the query too)
// RefId, ResCode, SaleOrderId, SaleReferenceId, FinalAmount (and
// CardHolderPan, which nothing here reads). The RefId is required; the
// SaleReferenceId, a positive number, is the receipt verify and settle
// need. Only ResCode 0 with a SaleReferenceId claims a payment. The
// SaleOrderId and FinalAmount are only checked against the payment
// (matchCallback): verify and settle send the order number derived from
// the payment's own id (OrderNumber) and credit our amount.
func ParseCallback(query, form func(key string) string, isPost bool) (callback.Params, bool) {
	get := callback.FormFirst(query, form, isPost)
	raw := get("RefId")
	if raw == "" && !isPost {
		// Our own result page after the POST (Post/Redirect/Get) names the
		// token as Authority.
		raw = query("Authority")
	}
	refID, ok := callback.Token(raw)
	if !ok {
		return callback.Params{}, false
	}
	receipt := strings.TrimSpace(get("SaleReferenceId"))
	if _, ok := saleReference(receipt); !ok {
		receipt = ""
	}
	paid := receipt != "" && strings.TrimSpace(get("ResCode")) == "0"
	p := callback.Params{Authority: refID, Receipt: receipt, ClaimsPaid: paid, Order: strings.TrimSpace(get("SaleOrderId"))}
	if n, err := strconv.ParseInt(strings.TrimSpace(get("FinalAmount")), 10, 64); err == nil && n > 0 {
		p.PaidRials = n
	}
	return p, true
}

// matchCallback refuses a callback that is not of this payment's sale, as
// Mellat's guide requires before any verify: a SaleOrderId other than the
// payment's order number (another sale's reference brought to this
// payment), or a FinalAmount other than ours (the payer paid less, after
// an online discount: crediting our amount would credit money the bank
// never took). Refused, the sale is never verified, and Mellat returns it
// to the payer. A callback naming a sale (a SaleReferenceId) must carry
// both, as Mellat's does: the callback passes through the payer's
// browser, which could otherwise drop the one that refused it. A cancel
// (no sale) may carry neither.
func matchCallback(publicID string, amountRials int64, cb callback.Params) error {
	if cb.Receipt != "" && (cb.Order == "" || cb.PaidRials == 0) {
		return errors.New("mellat callback: a sale without its SaleOrderId or FinalAmount")
	}
	if cb.Order != "" {
		n, err := strconv.ParseInt(cb.Order, 10, 64)
		if err != nil || n != OrderNumber(publicID) {
			return fmt.Errorf("mellat callback: SaleOrderId %q is not this payment's order", usertext.Cut(cb.Order, 40))
		}
	}
	if cb.PaidRials != 0 && cb.PaidRials != amountRials {
		return fmt.Errorf("mellat callback: FinalAmount %d is not the payment's %d rials", cb.PaidRials, amountRials)
	}
	return nil
}

func checkText(v string) (string, error) {
	if strings.ContainsAny(v, "\x00\r\n") || len(v) > 200 {
		return "", errors.New("want one line of at most 200 characters")
	}
	return v, nil
}
