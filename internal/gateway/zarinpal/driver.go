package zarinpal

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
)

// Its settings (environment variables).
const (
	SettingMerchantID = "ZARINPAL_MERCHANT_ID"
	SettingBaseURL    = "ZARINPAL_BASE_URL"
	SettingPageLife   = "ZARINPAL_PAGE_LIFETIME"
	// The card refund's (Zarinpal's GraphQL API): optional, both or
	// neither of the token and the terminal.
	SettingAccessToken = "ZARINPAL_ACCESS_TOKEN" // #nosec G101 -- the variable's name, not a credential
	SettingTerminalID  = "ZARINPAL_TERMINAL_ID"
	SettingGraphQLURL  = "ZARINPAL_GRAPHQL_URL"
)

// DefaultPageLifetime is how long Zarinpal's payment page is taken to
// wait for the payer (not documented by Zarinpal; the sandbox bank's
// sandbank.DefaultAuthorityTTL is the same).
const DefaultPageLifetime = 15 * time.Minute

// SandboxMerchantID is the merchant id used with the built-in sandbox bank.
const SandboxMerchantID = "00000000-0000-4000-8000-000000000000"

// SandboxProtocol is the sandbox bank's imitation of Zarinpal v4.
const SandboxProtocol = "zarinpal-v4"

// Driver is Zarinpal REST v4 as a plug-in (see gateway.Driver). The
// capabilities are from Zarinpal's documentation and the field notes:
// GET redirect to StartPay, GET callback (Authority, Status), 101 on a
// repeated verify, reversal within 30 minutes, no documented verify
// deadline (the worker's WORKER_AUTHORITY_LIFETIME stands in), a list of
// unverified payments and a per-payment inquiry, rials on the wire.
func Driver() gateway.Driver {
	return gateway.Driver{
		Name:  "zarinpal",
		Label: "Zarinpal",
		Capabilities: gateway.Capabilities{
			Redirect:        gateway.RedirectGET,
			Callback:        gateway.CallbackGET,
			AlreadyVerified: []gateway.Signal{{Op: opVerify, Code: codeAlreadyVerified}},
			VerifyDeadline:  gateway.Window{Kind: gateway.WindowUnknown},
			ReverseWindow:   gateway.Within(30 * time.Minute),
			Settle:          gateway.Window{Kind: gateway.WindowNone},
			VerifyData:      gateway.VerifyWithoutCallback,
			Reconcile:       gateway.ReconcileList | gateway.ReconcileInquiry,
			Unit:            gateway.UnitRial,
			MinAmountRials:  10_000, // 1,000 tomans
			// AddRefund (GraphQL, an access token): part or all of a
			// payment, at least 20,000 rials, no idempotency key.
			CardRefund: gateway.CardRefund{Method: gateway.CardRefundAPI, MinAmountRials: MinRefundRials, Partial: true},
		},
		ParseCallback: ParseCallback,
		Settings: []gateway.Setting{
			{Env: SettingMerchantID, Required: true, Secret: true,
				Doc:   "the terminal's merchant id from Zarinpal's panel, a 36-character UUID",
				Check: checkMerchantID},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "Zarinpal's API base: " + ProductionBaseURL + ", " + SandboxBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: checkBaseURL},
			{Env: SettingPageLife, Default: "15m",
				Doc:   "how long Zarinpal's payment page waits for the payer (Zarinpal does not document it); a payment it calls not paid after the payer had the page this long is shown as \"the time ran out\", sooner as cancelled; 0 does not tell them apart",
				Check: checkPageLifetime},
			{Env: SettingAccessToken, Secret: true, With: SettingTerminalID,
				Doc:   "the access token (OAuth, from Zarinpal's panel) of its GraphQL API, with ZARINPAL_TERMINAL_ID: admins may then refund a top-up to the card (AddRefund); unset, Zarinpal top-ups cannot go back to the card",
				Check: checkAccessToken},
			{Env: SettingTerminalID, With: SettingAccessToken,
				Doc:   "the terminal's number in Zarinpal's GraphQL API (terminal_id), digits; with ZARINPAL_ACCESS_TOKEN",
				Check: wire.TerminalID},
			{Env: SettingGraphQLURL, Default: DefaultGraphQLURL,
				Doc:   "Zarinpal's GraphQL endpoint (the card refund's), or a standalone sandbox bank's " + sandboxGraphQLPath + " on this machine (http allowed on loopback only)",
				Check: CheckGraphQLURL},
		},
		URLSetting: SettingBaseURL,
		New: func(s gateway.Settings, d gateway.Deps) (gateway.Gateway, error) {
			life, err := checkPageLifetime(s[SettingPageLife])
			if err != nil {
				return nil, fmt.Errorf("zarinpal: %s: %w", SettingPageLife, err)
			}
			d0, _ := time.ParseDuration(life)
			return New(Config{MerchantID: s[SettingMerchantID], BaseURL: s[SettingBaseURL], HTTPClient: d.HTTPClient, Logger: d.Logger,
				PageLifetime: d0, Now: d.Now, AccessToken: s[SettingAccessToken], TerminalID: s[SettingTerminalID],
				GraphQLURL: s[SettingGraphQLURL]})
		},
		Sandbox: gateway.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingMerchantID: SandboxMerchantID, SettingBaseURL: bankURL,
					SettingPageLife: "15m", SettingAccessToken: SandboxAccessToken, SettingTerminalID: SandboxTerminalID,
					SettingGraphQLURL: strings.TrimRight(bankURL, "/") + sandboxGraphQLPath}
			},
		},
	}
}

func checkMerchantID(v string) (string, error) {
	v = strings.ToLower(v)
	if !isUUID(v) {
		return "", errors.New("want a 36-character UUID (8-4-4-4-12 hex digits)")
	}
	return v, nil
}

// checkPageLifetime accepts a Go duration from 0 to 24h ("" is the
// default); it returns the duration's canonical text.
func checkPageLifetime(v string) (string, error) {
	if v == "" {
		return DefaultPageLifetime.String(), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 24*time.Hour {
		return "", fmt.Errorf("want a duration from 0 to 24h, such as 15m, got %q", v)
	}
	return d.String(), nil
}

func checkBaseURL(v string) (string, error) {
	v = strings.TrimRight(v, "/")
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an absolute http(s) URL, got %q", v)
	}
	if u.Scheme != "https" && !loopback(u.Hostname()) {
		// The merchant id travels in every call: only over TLS, except
		// to a bank on this machine (a standalone sandbox bank).
		return "", fmt.Errorf("must be https:// (the merchant id travels in every call) unless it is a loopback address, got %q", v)
	}
	return v, nil
}

// loopback reports whether a host name or address is this machine only.
func loopback(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
