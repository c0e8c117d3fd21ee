// Package jibit is the payout driver of Jibit's Transferor ("پرداخت‌یار").
//
// The facts (Jibit Transferor REST API V2.1 and production integrations;
// docs/withdrawals.md has the sources and their confidence):
//   - Base https://napi.jibit.ir/trf; access is limited to registered IP
//     addresses. POST /v2/tokens/generate {apiKey, secretKey} →
//     {accessToken (24 h), refreshToken (48 h)}; POST /v2/tokens/refresh
//     {refreshToken} gives new ones; calls carry "Authorization: Bearer".
//   - Errors are 4xx or 5xx with {"fingerprint", "errors": [{"code",
//     "message"}]}.
//   - POST /v2/transfers {batchID, submissionMode: "TRANSFER", transfers:
//     [{transferID, transferMode: "NORMAL" | "ACH" | "RTGS", destination
//     (Sheba), destinationFirstName, destinationLastName, amount, currency:
//     "RIALS" | "TOMAN", description, paymentID?, cancellable}]} →
//     {submittedCount}; submittedCount 0: the submission failed. The same
//     transferID again is refused with transfer.already_exists: one
//     payout per id, so a submit may be repeated safely.
//   - GET /v2/transfers?transferID= → {transfers: [{state, transferMode,
//     bankTransferID, amount, currency}]}; states INITIALIZED, IN_PROGRESS,
//     TRANSFERRED, FAILED, CANCELLING, CANCELLED and MANUALLY_FAILED: a
//     payout that had looked transferred, failed by hand, its money back.
//   - GET /v2/transfers/filter?from=&to=&page=&size= → {elements: […]}.
//   - GET /v2/balances → {balances: [{balanceType, amount}]}; STL is what
//     may be paid out.
//
// Kifpool sends rials (currency RIALS), ACH for Paya and RTGS for Satna,
// never cancellable, and its withdrawal's public id as transferID and
// batchID. The destination's names are not sent: Kifpool does not collect
// them, and whether Jibit requires them is not confirmed.
package jibit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/wire"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/rail"
)

// Its settings.
const (
	SettingAPIKey    = "JIBIT_API_KEY"    // #nosec G101 -- the name of an environment variable, not its value
	SettingSecretKey = "JIBIT_SECRET_KEY" // #nosec G101 -- the name of an environment variable, not its value
	SettingBaseURL   = "JIBIT_BASE_URL"
)

// ProductionBaseURL is the Transferor's API.
const ProductionBaseURL = "https://napi.jibit.ir/trf"

// SandboxProtocol is the sandbox bank's imitation.
const SandboxProtocol = "jibit-transferor"

// The sandbox's keys.
const (
	SandboxAPIKey    = "sandbox-jibit-api-key"    // #nosec G101 -- the sandbox bank's key, which takes any
	SandboxSecretKey = "sandbox-jibit-secret-key" // #nosec G101 -- the sandbox bank's key, which takes any
)

// Error codes with a meaning of their own.
const (
	CodeAlreadyExists = "transfer.already_exists"
)

// The transfer states.
const (
	StateInitialized    = "INITIALIZED"
	StateInProgress     = "IN_PROGRESS"
	StateTransferred    = "TRANSFERRED"
	StateFailed         = "FAILED"
	StateCancelling     = "CANCELLING"
	StateCancelled      = "CANCELLED"
	StateManuallyFailed = "MANUALLY_FAILED"
)

// Driver is the Transferor as a payout plug-in.
func Driver() payout.Driver {
	return payout.Driver{
		Name:  "jibit",
		Label: "Jibit",
		Capabilities: payout.Capabilities{
			IdempotentSubmit: true,
			LateFailure:      true,
			Rails:            []rail.Rail{rail.Paya, rail.Satna},
			Reconcile:        payout.ReconcileList,
			Unit:             gateway.UnitRial,
			MinAmountRials:   10_000,
		},
		Settings: []gateway.Setting{
			{Env: SettingAPIKey, Required: true, Secret: true,
				Doc: "the Transferor's API key", Check: checkKey},
			{Env: SettingSecretKey, Required: true, Secret: true,
				Doc: "the Transferor's secret key", Check: checkKey},
			{Env: SettingBaseURL, Default: ProductionBaseURL,
				Doc:   "the Transferor's API base: " + ProductionBaseURL + ", or a standalone sandbox bank on this machine (http allowed on loopback only)",
				Check: func(v string) (string, error) { return wire.BaseURL(v, "the access token") }},
		},
		New: func(s gateway.Settings, d payout.Deps) (payout.Provider, error) {
			return New(Config{APIKey: s[SettingAPIKey], SecretKey: s[SettingSecretKey], BaseURL: s[SettingBaseURL],
				HTTPClient: d.HTTPClient, Logger: d.Logger, Now: d.Now})
		},
		Sandbox: payout.Sandbox{
			Protocol: SandboxProtocol,
			Settings: func(bankURL string) gateway.Settings {
				return gateway.Settings{SettingAPIKey: SandboxAPIKey, SettingSecretKey: SandboxSecretKey, SettingBaseURL: bankURL + "/trf"}
			},
		},
	}
}

func checkKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if len(v) < 8 || len(v) > 512 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", errors.New("want the key from Jibit's panel (8 to 512 visible characters)")
	}
	return v, nil
}

// Config is what a Client is built with.
type Config struct {
	APIKey, SecretKey, BaseURL string
	HTTPClient                 *http.Client
	Logger                     *slog.Logger
	Now                        func() time.Time
}

// Client talks to the Transferor. Safe for concurrent use: its tokens
// are shared by every call.
type Client struct {
	apiKey, secretKey string
	baseURL           string
	hc                *http.Client
	log               *slog.Logger
	now               func() time.Time

	mu                     sync.Mutex
	access, refresh        string
	accessUntil, refreshTo time.Time
}

var _ payout.Provider = (*Client)(nil)

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	k, err := checkKey(cfg.APIKey)
	if err != nil {
		return nil, fmt.Errorf("jibit: api key: %w", err)
	}
	s, err := checkKey(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("jibit: secret key: %w", err)
	}
	base, err := wire.BaseURL(cfg.BaseURL, "the access token")
	if err != nil {
		return nil, fmt.Errorf("jibit: base URL: %w", err)
	}
	c := &Client{apiKey: k, secretKey: s, baseURL: base, hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Name returns "jibit".
func (c *Client) Name() string { return "jibit" }

// Ops: the list and the balance; the Transferor has no ownership inquiry.
func (c *Client) Ops() payout.Ops { return payout.Ops{List: c.list, Balance: c.balance} }

// transfer is one transfer as the API shows it.
type transfer struct {
	TransferID     string          `json:"transferID"`
	State          string          `json:"state"`
	TransferMode   string          `json:"transferMode"`
	BankTransferID *string         `json:"bankTransferID"`
	Amount         json.RawMessage `json:"amount"`
	Currency       string          `json:"currency"`
	CreatedAt      string          `json:"createdAt"`
}

func (t transfer) rials() int64 {
	n, _ := wire.FlexInt(t.Amount)
	if strings.EqualFold(t.Currency, "TOMAN") {
		return n * 10
	}
	return n
}

// Submit sends one transfer. Repeating it is safe: a second submit of the
// transferID is transfer.already_exists, answered as a duplicate.
func (c *Client) Submit(ctx context.Context, o payout.Order) (payout.Submitted, error) {
	mode := ""
	switch o.Rail {
	case rail.Paya:
		mode = "ACH"
	case rail.Satna:
		mode = "RTGS"
	default:
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, false, 0, "jibit: no transfer mode for rail "+string(o.Rail))
	}
	body := map[string]any{"batchID": o.ID, "submissionMode": "TRANSFER", "transfers": []map[string]any{{
		"transferID": o.ID, "transferMode": mode, "destination": o.Sheba, "amount": o.AmountRials, "currency": "RIALS",
		"description": o.Description, "cancellable": false,
	}}}
	var out struct {
		SubmittedCount *int `json:"submittedCount"`
	}
	ans, err := c.call(ctx, payout.OpSubmit, http.MethodPost, "/v2/transfers", body, &out)
	if err != nil {
		return payout.Submitted{}, err
	}
	if ans.status >= 400 {
		if ans.code == "" {
			// A 4xx without Jibit's error body (a proxy's, a firewall's)
			// is not Jibit's word on the transfer: the request may have
			// reached Jibit and been taken. Its outcome is unknown: the
			// worker asks Status, and sends it again under the same
			// transferID only as a resend (one transfer per id).
			return payout.Submitted{}, &gateway.TransientError{Op: payout.OpSubmit, HTTPStatus: ans.status,
				Err: fmt.Errorf("HTTP %d without Jibit's error body: outcome unknown", ans.status)}
		}
		if ans.code == CodeAlreadyExists {
			return payout.Submitted{Duplicate: true}, nil
		}
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, refusedForNow(ans), ans.status, ans.code+": "+ans.message)
	}
	if out.SubmittedCount == nil {
		return payout.Submitted{}, &gateway.TransientError{Op: payout.OpSubmit, HTTPStatus: ans.status, Err: errors.New("an answer without submittedCount")}
	}
	if *out.SubmittedCount == 0 {
		return payout.Submitted{}, payout.Refused(payout.OpSubmit, false, ans.status, "submittedCount 0: the submission failed")
	}
	return payout.Submitted{}, nil
}

// refusedForNow sorts a refusal: our access (a token, an IP, the source
// bank) or the balance refuse it for now; the transfer's own data for
// good. The words are whole parts of the code, between dots and
// underscores ("transfers.0.source_bank.not_supported", "balances.
// not_enough"): "ip" inside "description" or "recipient" is not one.
func refusedForNow(a answer) bool {
	if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
		return true
	}
	return forNowCode.MatchString(strings.ToLower(a.code))
}

// forNowCode matches the refusals that are about our access or balance.
var forNowCode = regexp.MustCompile(`(^|[._])(balances?|source_bank|token|ip|access|forbidden)($|[._])`)

// Status asks about the transfer of our id. "Not found" is Jibit's own
// word only: its list answered with no transfer, or a 404 carrying its
// error body. A 404 without one (a proxy's, a maintenance page) or an
// answer without the list says nothing of the payout: an error, asked
// again. Taken as "not found", it would move a payout the provider holds
// to review as a contradiction.
func (c *Client) Status(ctx context.Context, id string) (payout.Status, error) {
	var out struct {
		Transfers *[]transfer `json:"transfers"`
	}
	ans, err := c.call(ctx, payout.OpStatus, http.MethodGet, "/v2/transfers?transferID="+url.QueryEscape(id), nil, &out)
	if err != nil {
		return payout.Status{}, err
	}
	switch {
	case ans.status == http.StatusNotFound && ans.code != "":
		return payout.Status{State: payout.StateNotFound, Raw: "not_found"}, nil
	case ans.status >= 400:
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, HTTPStatus: ans.status, Err: errors.New(ans.code + ": " + ans.message)}
	case out.Transfers == nil:
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, HTTPStatus: ans.status, Err: errors.New("an answer without transfers")}
	case len(*out.Transfers) == 0:
		return payout.Status{State: payout.StateNotFound, Raw: "not_found"}, nil
	}
	// Ours only: another transfer's word (a filter ignored, a prefix
	// matched) must never pay or fail this one.
	i := slices.IndexFunc(*out.Transfers, func(t transfer) bool { return t.TransferID == id })
	if i < 0 {
		return payout.Status{}, &gateway.TransientError{Op: payout.OpStatus, HTTPStatus: ans.status,
			Err: fmt.Errorf("an answer of %d transfers, none of our id", len(*out.Transfers))}
	}
	t := (*out.Transfers)[i]
	st := payout.Status{State: stateOf(t.State), Raw: wire.Clean(t.State, 40), AmountRials: t.rials()}
	if t.BankTransferID != nil {
		st.Ref = wire.Clean(*t.BankTransferID, 64)
	}
	return st, nil
}

// stateOf maps a transfer's state. CANCELLING is not yet cancelled, and
// an unknown state says nothing final: both are in progress.
func stateOf(s string) payout.State {
	switch s {
	case StateTransferred:
		return payout.StateTransferred
	case StateFailed, StateCancelled:
		return payout.StateFailed
	case StateManuallyFailed:
		return payout.StateReturned
	}
	return payout.StateInProgress
}

// list pages through the transfers made between from and to.
func (c *Client) list(ctx context.Context, from, to time.Time) ([]payout.Listed, error) {
	const size = 100
	var all []payout.Listed
	for page := 0; page < 1000; page++ {
		q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {to.UTC().Format(time.RFC3339)},
			"page": {strconv.Itoa(page)}, "size": {strconv.Itoa(size)}}
		var out struct {
			Elements []transfer `json:"elements"`
		}
		ans, err := c.call(ctx, payout.OpList, http.MethodGet, "/v2/transfers/filter?"+q.Encode(), nil, &out)
		if err != nil {
			return nil, err
		}
		if ans.status >= 400 {
			return nil, &gateway.TransientError{Op: payout.OpList, HTTPStatus: ans.status, Err: errors.New(ans.code + ": " + ans.message)}
		}
		for _, t := range out.Elements {
			at, _ := time.Parse(time.RFC3339, t.CreatedAt)
			all = append(all, payout.Listed{ID: t.TransferID, AmountRials: t.rials(), State: stateOf(t.State), Raw: wire.Clean(t.State, 40), At: at})
		}
		if len(out.Elements) < size {
			return all, nil
		}
	}
	return nil, &gateway.TransientError{Op: payout.OpList, Err: errors.New("more than 1000 pages")}
}

// balance is the settleable (STL) balance.
func (c *Client) balance(ctx context.Context) (int64, error) {
	var out struct {
		Balances []struct {
			BalanceType string          `json:"balanceType"`
			Amount      json.RawMessage `json:"amount"`
		} `json:"balances"`
	}
	ans, err := c.call(ctx, payout.OpBalance, http.MethodGet, "/v2/balances", nil, &out)
	if err != nil {
		return 0, err
	}
	if ans.status >= 400 {
		return 0, &gateway.TransientError{Op: payout.OpBalance, HTTPStatus: ans.status, Err: errors.New(ans.code)}
	}
	for _, b := range out.Balances {
		if b.BalanceType == "STL" {
			n, _ := wire.FlexInt(b.Amount)
			return n, nil
		}
	}
	return 0, nil
}

// answer is a decoded 2xx or 4xx answer (5xx and transport errors are
// errors).
type answer struct {
	status        int
	code, message string
}

// call makes one authenticated call: a token is generated or refreshed
// when needed, and a 401 (a token the Transferor no longer takes) is
// answered by a new token and the call made once more (a 401 call did
// nothing). 4xx answers are returned with their first error's code;
// transport errors, 408, 429, 5xx and undecodable 2xx answers are
// *gateway.TransientError. A 401 without Jibit's error body (a proxy's)
// is not Jibit's word that the call did nothing: a read is made again,
// a submit is not (the answer is returned, its outcome unknown), since
// a refusal of the second submit, or of a new token, would be taken as
// the word on a transfer the first one may have made.
func (c *Client) call(ctx context.Context, op, method, path string, body, out any) (answer, error) {
	for attempt := 0; ; attempt++ {
		tok, err := c.token(ctx, op, attempt > 0)
		if err != nil {
			return answer{}, err
		}
		ans, err := c.do(ctx, op, method, path, tok, body, out)
		if err == nil && ans.status == http.StatusUnauthorized && attempt == 0 && (ans.code != "" || method == http.MethodGet) {
			continue
		}
		return ans, err
	}
}

// token is a live access token: the one kept, refreshed, or generated.
func (c *Client) token(ctx context.Context, op string, fresh bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !fresh && c.access != "" && now.Before(c.accessUntil) {
		return c.access, nil
	}
	var out struct {
		AccessToken  string `json:"accessToken"`
		RefreshToken string `json:"refreshToken"`
	}
	var ans answer
	var err error
	if c.refresh != "" && now.Before(c.refreshTo) && !fresh {
		ans, err = c.do(ctx, op, http.MethodPost, "/v2/tokens/refresh", "", map[string]string{"refreshToken": c.refresh}, &out)
	}
	if err != nil || out.AccessToken == "" {
		ans, err = c.do(ctx, op, http.MethodPost, "/v2/tokens/generate", "", map[string]string{"apiKey": c.apiKey, "secretKey": c.secretKey}, &out)
	}
	if err != nil {
		return "", err
	}
	if ans.status >= 400 || out.AccessToken == "" {
		// Our keys refused: nothing any call can do until an operator
		// fixes them. A submit refused so took nothing.
		c.access, c.refresh = "", ""
		return "", payout.Refused(op, true, ans.status, "token refused: "+ans.code+": "+ans.message)
	}
	// The published lifetimes are 24 h and 48 h: renewed an hour early.
	c.access, c.accessUntil = out.AccessToken, now.Add(23*time.Hour)
	c.refresh, c.refreshTo = out.RefreshToken, now.Add(47*time.Hour)
	return c.access, nil
}

// do sends one request.
func (c *Client) do(ctx context.Context, op, method, path, tok string, body, out any) (answer, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, fmt.Errorf("encode body: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, c.baseURL+path, rd)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, c.baseURL+path, nil)
	}
	if err != nil {
		return answer{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	start := time.Now()
	status, header, raw, err := wire.Do(c.hc, req)
	if err != nil {
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: wire.WithContextErr(ctx, err)}
		c.logCall(ctx, op, path, status, "", start, err)
		return answer{}, err
	}
	ans := answer{status: status}
	switch {
	case wire.Retryable(status):
		err = &gateway.TransientError{Op: op, HTTPStatus: status, RetryAfter: wire.RetryAfter(header.Get("Retry-After"), c.now()),
			Err: fmt.Errorf("HTTP %d", status)}
	case status >= 400:
		var e struct {
			Errors []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"errors"`
		}
		if json.Unmarshal(raw, &e) == nil && len(e.Errors) > 0 {
			ans.code, ans.message = wire.Clean(e.Errors[0].Code, 80), wire.Clean(e.Errors[0].Message, 200)
		}
	case status < 200 || status > 299:
		err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("HTTP %d", status)}
	case out != nil:
		if derr := json.Unmarshal(raw, out); derr != nil {
			// The start of the answer helps tell a proxy's page from
			// Jibit's, except a token's: it would hold the token itself.
			shown := wire.Clean(string(raw), 120)
			if strings.HasPrefix(path, "/v2/tokens/") {
				shown = fmt.Sprintf("%d bytes, not shown", len(raw))
			}
			err = &gateway.TransientError{Op: op, HTTPStatus: status, Err: fmt.Errorf("undecodable answer: %s", shown)}
		}
	}
	c.logCall(ctx, op, path, status, ans.code, start, err)
	return ans, err
}

// logCall records one call; keys, tokens and bodies are never logged
// (the path's query holds our id only).
func (c *Client) logCall(ctx context.Context, op, path string, status int, code string, start time.Time, err error) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	attrs := []slog.Attr{slog.String("provider", "jibit"), slog.String("op", op), slog.String("path", path), slog.Int("http_status", status),
		slog.String("code", code), slog.Duration("elapsed", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
		c.log.LogAttrs(ctx, slog.LevelWarn, "jibit call", attrs...)
		return
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "jibit call", attrs...)
}
