// Package zibal is the payout driver of Zibal's platform: a payout from
// the merchant's Zibal wallet to a Sheba (wallet checkout), its inquiry by
// our own id, the wallet's balance, and the "facility" inquiry of whether a
// Sheba belongs to a national code.
//
// The facts (docs/withdrawals.md has the sources and their confidence):
//   - Base https://api.zibal.ir, JSON bodies, "Authorization: Bearer" with
//     the platform's access token, every answer {result, message, data},
//     result 1 meaning success (codes: 2 key not sent, 3 key wrong, 4 no
//     access, 6 a required field missing, 7 IP not allowed, 8 key
//     disabled, 9 minimum amount, 10 wallet not found, 11 amount above
//     the wallet's balance, 12 minimum payout 10,000 rials, 13/15/16 this
//     delay or payout type not allowed, 14 payout request not found,
//     17 instant payout above 50 M toman, 21 invalid Sheba).
//   - Payout: POST /v1/wallet/checkout/plus {id (wallet), amount (rials),
//     bankAccount (Sheba), uniqueCode (our id), checkoutDelay, description}
//     → data {id, predictedCheckoutDate}; a second request of one
//     uniqueCode is answered "این درخواست تسویه قبلا ثبت شده است" (this
//     payout request was registered before). The plain /v1/wallet/checkout
//     takes no id of ours at all; the uniqueCode, the duplicate answer and
//     the inquiry below come from a production integration, not from
//     Zibal's published samples, so the driver does not rely on Zibal's
//     deduplication: its submit is never repeated after an unknown outcome
//     (Capabilities.IdempotentSubmit is false).
//   - checkoutDelay 0 is the next Paya cycle (-1, instant, is not used).
//   - Inquiry: POST /v1/report/checkout/inquire {walletId, uniqueCode} →
//     data {type: "checkoutQueue" (waiting) | "canceledCheckout" | …,
//     details [{checkoutStatus: 0 done, 1 or 2 cancelled, refCode,
//     uniqueCode}]}. Several details may be listed (attempts of one
//     payout); only those of our uniqueCode count, and disagreeing ones
//     say nothing definite.
//   - Balance: POST /v1/wallet/balance {id} → data {withdrawableBalance}.
//   - Ownership: POST /v1/facility/checkIbanWithNationalCode {nationalCode,
//     birthDate, IBAN} → data {matched}; 44 the Sheba does not exist, 45 no
//     upstream provider answered (unknown, never a mismatch), 29 the
//     inquiry credit is spent. birthDate is required but, Zibal says, not
//     used in the match: Kifpool sends it empty.
package zibal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/rail"
)

// Its settings (environment variables).
const (
	SettingToken   = "ZIBAL_PAYOUT_TOKEN" // #nosec G101 -- the name of an environment variable, not its value
	SettingWallet  = "ZIBAL_PAYOUT_WALLET_ID"
	SettingBaseURL = "ZIBAL_PAYOUT_BASE_URL"
)

// ProductionBaseURL is Zibal's API.
const ProductionBaseURL = "https://api.zibal.ir"

// SandboxProtocol is the sandbox bank's imitation.
const SandboxProtocol = "zibal-checkout"

// The sandbox's credentials (any token and wallet of digits work there).
const (
	SandboxToken  = "sandbox-zibal-platform-token" // #nosec G101 -- the sandbox bank's token, which takes any
	SandboxWallet = "1001"
)

// Result codes.
const (
	resultOK                = 1
	resultKeyMissing        = 2
	resultKeyWrong          = 3
	resultNoAccess          = 4
	resultBadCallback       = 5
	resultFieldMissing      = 6
	resultIPNotAllowed      = 7
	resultKeyDisabled       = 8
	resultAmountMin         = 9
	resultWalletMissing     = 10
	resultBalanceShort      = 11
	resultPayoutMin         = 12
	resultDelayRefused      = 13
	resultNotFound          = 14
	resultDelayRefused2     = 15
	resultTypeRefused       = 16
	resultInstantMax        = 17
	resultMerchantOff       = 18
	resultNameMissing       = 20
	resultIBANInvalid       = 21
	resultBeneficiaryExists = 22
	resultBeneficiaryBad    = 23
	resultBeneficiaryOff    = 24
	resultBeneficiaryLocked = 25
	resultRefundRefused     = 26
	resultInquiryCredit     = 29
	resultIBANNotFound      = 44
	resultNoUpstream        = 45
)

// DuplicateMessage is Zibal's answer to a second payout of one
// uniqueCode.
const DuplicateMessage = "این درخواست تسویه قبلا ثبت شده است"

// isDuplicate reports whether a refusal's message is DuplicateMessage,
// as Zibal may write it: with a tanvin (قبلاً), Arabic yeh or kaf, a
// zero-width non-joiner, or other spacing. Missed, a duplicate would be
// taken for a refusal for good, and the payout Zibal holds failed.
func isDuplicate(message string) bool {
	return strings.Contains(persianKey(message), persianKey(DuplicateMessage))
}

// persianKey is s without spacing, joiners and diacritics, in Persian
// letters: two spellings of one Persian phrase have one key.
func persianKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 'ي' || r == 'ى':
			b.WriteRune('ی')
		case r == 'ك':
			b.WriteRune('ک')
		case r == '\u200c' || r == '\u200d' || r == '\u200f' || unicode.IsSpace(r) || unicode.Is(unicode.Mn, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Driver is Zibal's wallet checkout as a payout plug-in.
func Driver() payout.Driver {
	return payout.Driver{
		Name:  "zibal",
		Label: "Zibal",
		Capabilities: payout.Capabilities{
			IdempotentSubmit: false,
			LateFailure:      false,
			Rails:            []rail.Rail{rail.Paya},
			Reconcile:        payout.ReconcileInquiry,
			Unit:             gateway.UnitRial,
			MinAmountRials:   10_000,
		},
		Settings: []gateway.Setting{
			{Env: SettingToken, Required: true, Secret: true,
				Doc:   "the Zibal platform's access token (Bearer) that may pay out of the wallet",
				Check: checkToken},
			{Env: SettingWallet, Required: true,
				Doc:   "the id of the Zibal wallet payouts are paid from (digits)",
				Check: checkWallet},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "Zibal's API base: " + ProductionBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: func(v string) (string, error) { return wire.BaseURL(v, "the access token") }},
		},
		New: func(s gateway.Settings, d payout.Deps) (payout.Provider, error) {
			return New(Config{Token: s[SettingToken], Wallet: s[SettingWallet], BaseURL: s[SettingBaseURL],
				HTTPClient: d.HTTPClient, Logger: d.Logger, Now: d.Now})
		},
		Sandbox: payout.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingToken: SandboxToken, SettingWallet: SandboxWallet, SettingBaseURL: bankURL}
			},
		},
	}
}

func checkToken(v string) (string, error) {
	v = strings.TrimSpace(v)
	if len(v) < 8 || len(v) > 512 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", errors.New("want the access token from Zibal's panel (8 to 512 visible characters)")
	}
	return v, nil
}

func checkWallet(v string) (string, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
		return "", errors.New("want the wallet's id, a positive number")
	}
	return v, nil
}

// Config is what a Client is built with.
type Config struct {
	Token, Wallet, BaseURL string
	HTTPClient             *http.Client
	Logger                 *slog.Logger
	Now                    func() time.Time
}

// Client talks to Zibal's platform.
type Client struct {
	token   string
	wallet  int64
	baseURL string
	hc      *http.Client
	log     *slog.Logger
	now     func() time.Time
}

var _ payout.Provider = (*Client)(nil)

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	tok, err := checkToken(cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("zibal payout: token: %w", err)
	}
	w, err := checkWallet(cfg.Wallet)
	if err != nil {
		return nil, fmt.Errorf("zibal payout: wallet: %w", err)
	}
	base, err := wire.BaseURL(cfg.BaseURL, "the access token")
	if err != nil {
		return nil, fmt.Errorf("zibal payout: base URL: %w", err)
	}
	wallet, _ := strconv.ParseInt(w, 10, 64)
	c := &Client{token: tok, wallet: wallet, baseURL: base, hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Name returns "zibal".
func (c *Client) Name() string { return "zibal" }

// Ops: the ownership inquiry and the balance; no list (reconciliation
// asks about each payout).
func (c *Client) Ops() payout.Ops {
	return payout.Ops{CheckOwner: c.checkOwner, Balance: c.balance}
}

// reply is a decoded answer.
type reply struct {
	Result  json.RawMessage `json:"result"`
	Message json.RawMessage `json:"message"`
	Data    json.RawMessage `json:"data"`
	result  int
	message string
}

// Submit sends one payout (never retried by the driver).
func (c *Client) Submit(ctx context.Context, o payout.Order) (payout.Submitted, error) {
	if o.Rail != rail.Paya {
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, false, 0, "zibal pays out by Paya only, not "+string(o.Rail))
	}
	body := map[string]any{"id": c.wallet, "amount": o.AmountRials, "bankAccount": o.Sheba, "uniqueCode": o.ID,
		"checkoutDelay": 0, "description": o.Description}
	r, err := c.post(ctx, payout.OpSubmit, "/v1/wallet/checkout/plus", body)
	if err != nil {
		return payout.Submitted{}, err
	}
	if r.result == resultOK {
		var d struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(r.Data, &d)
		return payout.Submitted{Ref: wire.Clean(wire.FlexString(d.ID), 64)}, nil
	}
	switch {
	case isDuplicate(r.message):
		return payout.Submitted{Duplicate: true}, nil
	case forNow(r.result):
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, true, r.result, r.message)
	case forGood(r.result):
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, false, r.result, r.message)
	}
	// A result this driver does not know (a new code, an internal error
	// answered 200): nothing says the payout was not taken. Its outcome
	// is unknown, and it is asked about, never failed on this word.
	return payout.Submitted{}, &gateway.TransientError{Op: payout.OpSubmit,
		Err: fmt.Errorf("result %d (%s), not one known to refuse: outcome unknown", r.result, wire.Clean(r.message, 120))}
}

// forNow sorts a refused payout: Zibal's own state (our access, the
// wallet, its balance, what the account may do, the merchant itself)
// refuses it for now; forGood, the payout's own data (amount, Sheba, the
// beneficiary, …).
func forNow(result int) bool {
	switch result {
	case resultKeyMissing, resultKeyWrong, resultNoAccess, resultIPNotAllowed, resultKeyDisabled, resultWalletMissing,
		resultBalanceShort, resultDelayRefused, resultDelayRefused2, resultTypeRefused, resultMerchantOff:
		return true
	}
	return false
}

// forGood: the result codes that refuse the payout's own data, which
// sending it again cannot change (reference: Zibal's platform codes).
func forGood(result int) bool {
	switch result {
	case resultBadCallback, resultFieldMissing, resultAmountMin, resultPayoutMin, resultInstantMax, resultNameMissing,
		resultIBANInvalid, resultBeneficiaryExists, resultBeneficiaryBad, resultBeneficiaryOff, resultBeneficiaryLocked,
		resultRefundRefused, resultIBANNotFound:
		return true
	}
	return false
}

// Status asks about the payout of our id.
func (c *Client) Status(ctx context.Context, id string) (payout.Status, error) {
	r, err := c.post(ctx, payout.OpStatus, "/v1/report/checkout/inquire", map[string]any{"walletId": c.wallet, "uniqueCode": id})
	if err != nil {
		return payout.Status{}, err
	}
	switch r.result {
	case resultOK:
	case resultNotFound:
		return payout.Status{State: payout.StateNotFound, Raw: "not_found"}, nil
	default:
		// The inquiry itself refused (our access): nothing said about
		// the payout.
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, Err: payout.Refused(payout.OpStatus, true, r.result, r.message)}
	}
	var d struct {
		Type    string   `json:"type"`
		Details []detail `json:"details"`
	}
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, Err: fmt.Errorf("undecodable inquiry: %w", err)}
	}
	st, err := judge(id, d.Type, d.Details)
	if err != nil {
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, Err: err}
	}
	return st, nil
}

// detail is one attempt of the inquiry's details.
type detail struct {
	UniqueCode     json.RawMessage `json:"uniqueCode"`
	CheckoutStatus json.RawMessage `json:"checkoutStatus"`
	RefCode        json.RawMessage `json:"refCode"`
	Amount         json.RawMessage `json:"amount"`
}

// status is what one detail says.
func (det detail) status() payout.Status {
	st := payout.Status{Ref: wire.Clean(wire.FlexString(det.RefCode), 64)}
	st.AmountRials, _ = wire.FlexInt(det.Amount)
	code, known := wire.FlexInt(det.CheckoutStatus)
	switch {
	case !known:
		st.State = payout.StateInProgress
	case code == 0:
		st.State, st.Raw = payout.StateTransferred, "checkoutStatus 0"
	case code == 1 || code == 2:
		st.State, st.Raw = payout.StateFailed, "checkoutStatus "+strconv.FormatInt(code, 10)
	default:
		st.State, st.Raw = payout.StateInProgress, "checkoutStatus "+strconv.FormatInt(code, 10)
	}
	return st
}

// judge reads an inquiry's type and details about the payout of our id.
// Only the details of our uniqueCode count (one without a uniqueCode is
// taken as ours: the inquiry asked by it). Zibal may list several
// attempts of one payout (a cancelled one, then one paid): when the
// details that count, or they and a "canceledCheckout" type, disagree,
// or when no detail is ours, nothing definite is said, and judge returns
// an error: the outcome is unknown and asked again, never failed.
func judge(id, typ string, details []detail) (payout.Status, error) {
	var ours []payout.Status
	for _, det := range details {
		if code := wire.FlexString(det.UniqueCode); code != "" && code != id {
			continue
		}
		ours = append(ours, det.status())
	}
	if len(details) > 0 && len(ours) == 0 {
		return payout.Status{}, fmt.Errorf("inquiry of %q (%s) lists %d details, none of that uniqueCode: outcome unknown",
			id, wire.Clean(typ, 40), len(details))
	}
	for _, o := range ours {
		if o.State != ours[0].State {
			return payout.Status{}, fmt.Errorf("inquiry of %q (%s): its details disagree (%s, %s): outcome unknown",
				id, wire.Clean(typ, 40), ours[0].State, o.State)
		}
	}
	raw := payout.Status{Raw: wire.Clean(typ, 40)}
	switch typ {
	case "canceledCheckout":
		if len(ours) > 0 && ours[0].State != payout.StateFailed {
			return payout.Status{}, fmt.Errorf("inquiry of %q: canceledCheckout, and a detail %s: outcome unknown", id, ours[0].State)
		}
		raw.State = payout.StateFailed
		return raw, nil
	case "checkoutQueue":
		raw.State = payout.StateInProgress
		return raw, nil
	}
	if len(ours) == 0 {
		raw.State = payout.StateInProgress
		return raw, nil
	}
	return ours[0], nil
}

// checkOwner asks whether sheba belongs to nationalCode.
func (c *Client) checkOwner(ctx context.Context, sheba, nationalCode string) (payout.Ownership, error) {
	r, err := c.post(ctx, payout.OpCheckOwner, "/v1/facility/checkIbanWithNationalCode",
		map[string]any{"nationalCode": nationalCode, "birthDate": "", "IBAN": sheba})
	if err != nil {
		return payout.OwnerUnknown, err
	}
	switch r.result {
	case resultOK:
		var d struct {
			Matched *bool `json:"matched"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil || d.Matched == nil {
			return payout.OwnerUnknown, &gateway.TransientError{Op: payout.OpCheckOwner, Err: errors.New("an answer without matched")}
		}
		if *d.Matched {
			return payout.OwnerMatch, nil
		}
		return payout.OwnerMismatch, nil
	case resultIBANNotFound:
		return payout.OwnerMismatch, nil
	case resultNoUpstream, resultInquiryCredit, resultFieldMissing:
		// No upstream provider answered, no inquiry credit left, the
		// input refused: nothing said either way.
	}
	// Those, and any other code (our access): unknown, for a person.
	c.log.WarnContext(ctx, "zibal ownership inquiry: no answer either way", "result", r.result, "message", r.message)
	return payout.OwnerUnknown, nil
}

// balance is what the wallet may still pay out.
func (c *Client) balance(ctx context.Context) (int64, error) {
	r, err := c.post(ctx, payout.OpBalance, "/v1/wallet/balance", map[string]any{"id": c.wallet})
	if err != nil {
		return 0, err
	}
	if r.result != resultOK {
		return 0, &gateway.TransientError{Op: payout.OpBalance, Err: payout.Refused(payout.OpBalance, true, r.result, r.message)}
	}
	var d struct {
		Withdrawable json.RawMessage `json:"withdrawableBalance"`
	}
	_ = json.Unmarshal(r.Data, &d)
	n, ok := wire.FlexInt(d.Withdrawable)
	if !ok {
		return 0, &gateway.TransientError{Op: payout.OpBalance, Err: errors.New("an answer without withdrawableBalance")}
	}
	return n, nil
}

// post sends one call and decodes the answer: transport errors, 408, 429,
// 5xx and an answer without a result are *gateway.TransientError.
func (c *Client) post(ctx context.Context, op, path string, body any) (reply, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return reply{}, fmt.Errorf("encode body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(payload))
	if err != nil {
		return reply{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	start := time.Now()
	status, header, raw, err := wire.Do(c.hc, req)
	if err != nil {
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: wire.WithContextErr(ctx, err)}
		c.logCall(ctx, op, status, 0, start, err)
		return reply{}, err
	}
	var r reply
	derr := json.Unmarshal(raw, &r)
	code, known := wire.FlexInt(r.Result)
	switch {
	case wire.Retryable(status):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(header.Get("Retry-After"), c.now()),
			Err: fmt.Errorf("HTTP %d", status)}
	case derr != nil || !known:
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %s", wire.Clean(string(raw), 120))}
	}
	r.result, r.message = int(code), wire.Clean(wire.FlexString(r.Message), 200)
	c.logCall(ctx, op, status, r.result, start, err)
	return r, err
}

// logCall records one call; the token and the bodies (a Sheba, a national
// code) are never logged.
func (c *Client) logCall(ctx context.Context, op string, status, result int, start time.Time, err error) {
	attrs := []slog.Attr{slog.String("provider", "zibal"), slog.String("op", op), slog.Int("http_status", status),
		slog.Int("result", result), slog.Duration("elapsed", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
		c.log.LogAttrs(ctx, slog.LevelWarn, "zibal payout call", attrs...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "zibal payout call", attrs...)
}
