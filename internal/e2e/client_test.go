package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/gateway/mellat"
	"github.com/kifpool/kifpool/internal/gateway/sep"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
)

// browser is a user's browser without JavaScript: it keeps cookies (for
// 127.0.0.1 they are shared by every port, as browsers do; sessions live in
// the database, so every instance accepts them) and does not follow
// redirects.
type browser struct {
	base string // the instance this user talks to
	hc   *http.Client
	// gateways submitTopUp chooses from (nil: Zarinpal and Zibal)
	gateways []string
}

func newBrowser(base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{base: base, hc: &http.Client{
		Jar:       jar,
		Timeout:   20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

type response struct {
	status     int
	body       string
	location   string
	retryAfter string
}

func (b *browser) do(ctx context.Context, method, target string, form url.Values) (response, error) {
	if !strings.HasPrefix(target, "http") {
		target = b.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return response{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: res.StatusCode, body: string(data), location: res.Header.Get("Location"),
		retryAfter: res.Header.Get("Retry-After")}, nil
}

// signUp creates an account and signs the browser in.
func (b *browser) signUp(ctx context.Context, email string) error {
	r, err := b.do(ctx, http.MethodGet, routes.SignUp, nil)
	if err != nil {
		return err
	}
	csrf := apptest.Parse(r.body).Form(routes.SignUp).Hidden().Get("_csrf")
	if r.status != http.StatusOK || csrf == "" {
		return fmt.Errorf("GET /signup: status %d, csrf %q", r.status, csrf)
	}
	r, err = b.do(ctx, http.MethodPost, routes.SignUp, url.Values{"_csrf": {csrf}, "email": {email}, "password": {"e2e payer: a long passphrase 7"}})
	if err != nil {
		return err
	}
	if r.status != http.StatusSeeOther || r.location != routes.Wallet {
		return fmt.Errorf("POST /signup %s: status %d location %q", email, r.status, r.location)
	}
	return nil
}

// topUpForm opens the top-up form: its CSRF and per-form tokens.
func (b *browser) topUpForm(ctx context.Context) (csrf, token string, err error) {
	r, err := b.do(ctx, http.MethodGet, routes.TopUp, nil)
	if err != nil {
		return "", "", err
	}
	hidden := apptest.Parse(r.body).Form(routes.TopUp).Hidden()
	csrf, token = hidden.Get("_csrf"), hidden.Get("token")
	if r.status != http.StatusOK || csrf == "" || token == "" {
		return "", "", fmt.Errorf("GET /wallet/topup: status %d: %w", r.status, errNotReady)
	}
	return csrf, token, nil
}

// submitTopUp posts the top-up form (amount in tomans), choosing one of
// the browser's gateways (Zarinpal and Zibal unless it was given others)
// by a hash of the form token: each about as often, the same form always
// the same gateway, as a repeat submit is. (Not by the token's last
// character: 128 bits in base64 leave it one of A, Q, g and w, all odd.)
func (b *browser) submitTopUp(ctx context.Context, csrf, token string, tomans int64) (response, error) {
	return b.submitTopUpAt(ctx, csrf, token, tomans, b.gatewayFor(token))
}

// gatewayFor is the gateway submitTopUp chooses for a form's token.
func (b *browser) gatewayFor(token string) string {
	gws := b.gateways
	if len(gws) == 0 {
		gws = []string{"zarinpal", "zibal"}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(token))
	return gws[h.Sum32()%uint32(len(gws))]
}

// callbackOnly reports whether the named gateway is callback-only (its
// payers never leave a payment behind: bankGateway).
func callbackOnly(name string) bool {
	for _, g := range bankGateways {
		if g.name == name {
			return g.callbackOnly
		}
	}
	return false
}

// topUpAt opens a top-up form and submits it for the gateway gw.
func (b *browser) topUpAt(ctx context.Context, tomans int64, gw string) (response, error) {
	csrf, token, err := b.topUpForm(ctx)
	if err != nil {
		return response{}, err
	}
	return b.submitTopUpAt(ctx, csrf, token, tomans, gw)
}

// signedUp is a new user's browser on base, signed up as email.
func signedUp(ctx context.Context, t *testing.T, base, email string) *browser {
	t.Helper()
	br := newBrowser(base)
	if err := br.signUp(ctx, email); err != nil {
		t.Fatalf("sign up %s: %v", email, err)
	}
	return br
}

// submitTopUpAt posts the top-up form for the gateway gw.
func (b *browser) submitTopUpAt(ctx context.Context, csrf, token string, tomans int64, gw string) (response, error) {
	return b.do(ctx, http.MethodPost, routes.TopUp, url.Values{"_csrf": {csrf}, "token": {token}, "amount": {fmt.Sprint(tomans)}, "gateway": {gw}})
}

// bankGateway is how the payer reaches a gateway's page at the standalone
// bank, and what their way back must do.
type bankGateway struct {
	name string
	// page is the path of the payer's page: reached by a 303 with the
	// token last in the path (Zarinpal, Zibal), or by our page's form
	// posting the token in field (SEP, Mellat).
	page, field string
	// callbackOnly (Mellat): only the callback carries what verify and
	// inquiry need, so nothing is learnt of a payment whose payer never
	// comes back: it stays open until the bank's verify window (20
	// minutes) closes, longer than a test, and is not failed at our
	// authority lifetime. Its payers pay or cancel, never late.
	callbackOnly bool
	// returns: its payers always come back from the bank: Mellat's (see
	// callbackOnly). Zarinpal's, Zibal's and SEP's payers who paid and
	// never came back are found, even after our worker failed the payment
	// (reconciliation: Zarinpal's list, Zibal's inquiry, SEP's receipt of
	// the token, whose RefNum is kept before the verify it names).
	returns bool
}

// bankGateways are the four gateways of the standalone bank.
var bankGateways = []bankGateway{
	{name: "zarinpal", page: "/pg/StartPay/"},
	{name: "zibal", page: "/start/"},
	{name: "sep", page: sep.PathPay, field: "Token"},
	{name: "mellat", page: mellat.PathStartPay, field: "RefId", callbackOnly: true, returns: true},
}

// gatewayNames are the names of the bank's four gateways, in GATEWAYS order.
func gatewayNames() []string {
	var out []string
	for _, g := range bankGateways {
		out = append(out, g.name)
	}
	return out
}

// toBank reads where a top-up's answer r sends the payer: a 303 to a GET
// gateway's page, or our page whose form posts the token to a POST
// gateway's page. It returns the gateway and the token (our authority);
// ok is false for any other answer.
func toBank(bankURL string, r response) (gw bankGateway, token string, ok bool) {
	var doc *apptest.Doc
	if r.status == http.StatusOK {
		doc = apptest.Parse(r.body)
	}
	for _, g := range bankGateways {
		switch {
		case g.field == "" && r.status == http.StatusSeeOther && strings.HasPrefix(r.location, bankURL+g.page):
			token = strings.TrimPrefix(r.location, bankURL+g.page)
		case g.field != "" && doc != nil && doc.TestID("to-bank-form").Attr("action") == bankURL+g.page:
			token = doc.Input(g.field)
		}
		if token != "" {
			return g, token, true
		}
	}
	return bankGateway{}, "", false
}

// authorityOf returns the authority (Zarinpal's, or Zibal's trackId) of a
// bank page's location, or "".
func authorityOf(bankURL, location string) string {
	_, token, _ := toBank(bankURL, response{status: http.StatusSeeOther, location: location})
	return token
}

// back makes the request the bank sends the payer back to us with: the
// GET of our callback, or the POST of its form (SEP, Mellat), answered
// 303 to our page, which it then loads.
func (b *browser) back(ctx context.Context, cb sandbank.CallbackRequest) (response, error) {
	if cb.Method != http.MethodPost {
		return b.do(ctx, http.MethodGet, cb.URL, nil)
	}
	form := url.Values{}
	for k, v := range cb.Form {
		form.Set(k, v)
	}
	r, err := b.do(ctx, http.MethodPost, cb.URL, form)
	if err != nil || r.status != http.StatusSeeOther {
		return r, err
	}
	base, err := url.Parse(cb.URL)
	if err != nil {
		return r, err
	}
	next, err := base.Parse(r.location)
	if err != nil {
		return r, err
	}
	return b.do(ctx, http.MethodGet, next.String(), nil)
}

// onHost returns rawURL with its scheme and host replaced by base's.
func onHost(rawURL, base string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	b, _ := url.Parse(base)
	u.Scheme, u.Host = b.Scheme, b.Host
	return u.String()
}

// bankClient drives the standalone bank's control API (the payer's side,
// faults, its own record of payments).
type bankClient struct {
	base string
	hc   *http.Client
}

func newBankClient(base string) *bankClient {
	return &bankClient{base: base, hc: &http.Client{Timeout: 10 * time.Second}}
}

// finish pays or cancels an authority as the payer: the callback URL the
// payer would be sent to, and the HTTP status (409: no longer IN_BANK).
func (c *bankClient) finish(ctx context.Context, authority, action string) (string, int, error) {
	cb, status, err := c.control(ctx, "/_sandbank/payments/"+authority+"/"+action)
	return cb.URL, status, err
}

// finishAt pays or cancels gw's payment token as the payer: the request
// the browser then makes to our callback (GET, or the POST of a form),
// and the HTTP status (409: no longer IN_BANK).
func (c *bankClient) finishAt(ctx context.Context, gw, token, action string) (sandbank.CallbackRequest, int, error) {
	return c.control(ctx, fmt.Sprintf("/_sandbank/%s/payments/%s/%s", gw, token, action))
}

// control posts to the control API's path that ends a payment and reads
// its answer.
func (c *bankClient) control(ctx context.Context, path string) (sandbank.CallbackRequest, int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, nil)
	res, err := c.hc.Do(req)
	if err != nil {
		return sandbank.CallbackRequest{}, 0, err
	}
	defer res.Body.Close()
	var ans struct {
		sandbank.CallbackRequest
		Error string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		return sandbank.CallbackRequest{}, res.StatusCode, fmt.Errorf("%s: decode: %w", path, err)
	}
	if res.StatusCode == http.StatusOK && ans.URL == "" {
		return sandbank.CallbackRequest{}, res.StatusCode, fmt.Errorf("%s: no redirect", path)
	}
	return ans.CallbackRequest, res.StatusCode, nil
}

// payments is the bank's record of every payment, by authority.
func (c *bankClient) topUps(t *testing.T) map[string]sandbank.Payment {
	t.Helper()
	out, err := c.list()
	if err != nil {
		t.Fatalf("bank payments: %v", err)
	}
	return out
}

// list is the bank's record of every payment, by authority.
func (c *bankClient) list() (map[string]sandbank.Payment, error) {
	res, err := c.hc.Get(c.base + "/_sandbank/payments")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var list []sandbank.Payment
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out := make(map[string]sandbank.Payment, len(list))
	for _, p := range list {
		out[p.Authority] = p
	}
	return out, nil
}

// clearFaults turns the bank's fault injection off.
func (c *bankClient) clearFaults(t *testing.T) {
	t.Helper()
	c.faults(t, http.MethodDelete, nil)
}

// setFaults sets the bank's fault injection.
func (c *bankClient) setFaults(t *testing.T, f sandbank.Faults) {
	t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	c.faults(t, http.MethodPost, body)
}

func (c *bankClient) faults(t *testing.T, method string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, c.base+"/_sandbank/faults", bytes.NewReader(body))
	res, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s faults: %v", method, err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s faults: status %d", method, res.StatusCode)
	}
}

// stats is the bank's per-operation call counts (logged for the record).
func (c *bankClient) stats() string {
	res, err := c.hc.Get(c.base + "/_sandbank/stats")
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, res.Body)
	return strings.TrimSpace(buf.String())
}

// ---- the database, read directly ----

// openDB opens the app's database from the test (closed at test end).
func openDB(t *testing.T, dbURL string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatalf("open %s: %v", dbURL, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var openStatuses = []topup.Status{topup.StatusCreated, topup.StatusAwaitingPayment, topup.StatusPendingVerification, topup.StatusSettling}

// drain waits until no payment is open, or fails the test at the deadline
// with what is still open.
func drain(t *testing.T, db *store.DB, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var open []topup.TopUp
	err := testwait.Until(limit, "no open payment", func() bool {
		open = nil
		if err := db.Gorm.Where("status IN ?", openStatuses).Find(&open).Error; err != nil {
			t.Fatalf("open payments: %v", err)
		}
		return len(open) == 0
	})
	if err == nil {
		return time.Since(start)
	}
	for i, p := range open {
		if i == 20 {
			t.Errorf("... and %d more", len(open)-20)
			break
		}
		t.Errorf("still open after %s: %s %s authority=%s attempts=%d reason=%q created=%s next_check=%v lease=%v",
			limit, p.PublicID, p.Status, p.AuthorityString(), p.Attempts, p.StatusReason,
			p.CreatedAt.Format(time.RFC3339Nano), p.NextCheckAt, p.LeaseUntil)
	}
	t.FailNow()
	return 0
}

// allPayments reads every payment.
func allTopUps(t *testing.T, db *store.DB) []topup.TopUp {
	t.Helper()
	var ps []topup.TopUp
	if err := db.Gorm.Order("id").Find(&ps).Error; err != nil {
		t.Fatalf("payments: %v", err)
	}
	return ps
}

// userBalances maps each user's email to the balance of their wallet.
func userBalances(t *testing.T, db *store.DB) map[string]int64 {
	t.Helper()
	var rows []struct {
		Email        string
		BalanceRials int64
	}
	if err := db.Gorm.Raw(`SELECT u.email, a.posted_rials AS balance_rials FROM users u JOIN wallets w ON w.user_id = u.id JOIN ledger_accounts a ON a.wallet_id = w.id`).Scan(&rows).Error; err != nil {
		t.Fatalf("balances: %v", err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Email] = r.BalanceRials
	}
	return out
}

// checkAgainstBank compares our payments with the bank's own record:
// the bank's VERIFIED set is exactly our credited set (same ref_id, same
// amount; Mellat's settled), nothing the bank took is left PAID-but-unverified, every
// authority we hold is the bank's, and nothing is still open.
func checkAgainstBank(t *testing.T, ours []topup.TopUp, bank map[string]sandbank.Payment) {
	t.Helper()
	credited := map[string]topup.TopUp{}
	byAuthority := map[string]topup.TopUp{}
	for _, p := range ours {
		if p.Status == topup.StatusNeedsReview {
			t.Errorf("payment %s needs review: %s", p.PublicID, p.StatusReason)
		}
		if !p.Status.Terminal() {
			t.Errorf("payment %s still open: %s", p.PublicID, p.Status)
		}
		if p.Authority == nil {
			if p.Status == topup.StatusCredited {
				t.Errorf("payment %s credited without an authority", p.PublicID)
			}
			continue
		}
		byAuthority[*p.Authority] = p
		bp, ok := bank[*p.Authority]
		if !ok {
			t.Errorf("payment %s: authority %s unknown to the bank", p.PublicID, *p.Authority)
			continue
		}
		if bp.Amount != p.AmountRials {
			t.Errorf("payment %s: our amount %d, bank's %d", p.PublicID, p.AmountRials, bp.Amount)
		}
		if p.Status == topup.StatusCredited {
			credited[*p.Authority] = p
			if p.RefIDValue() != bp.RefID {
				t.Errorf("payment %s: our ref_id %d, bank's %d", p.PublicID, p.RefIDValue(), bp.RefID)
			}
			if bp.Gateway == "mellat" && bp.SettledAt.IsZero() {
				t.Errorf("payment %s credited, but Mellat never settled it", p.PublicID)
			}
		}
	}
	verified := 0
	for a, bp := range bank {
		switch bp.State {
		case sandbank.StateVerified:
			verified++
			if _, ok := credited[a]; !ok {
				t.Errorf("bank VERIFIED %s (%d rials) but we did not credit it (ours: %+v)", a, bp.Amount, statusOf(byAuthority, a))
			}
		case sandbank.StatePaid:
			t.Errorf("bank PAID %s (%d rials) was never verified (ours: %s)", a, bp.Amount, statusOf(byAuthority, a))
		}
	}
	for a, p := range credited {
		if bank[a].State != sandbank.StateVerified {
			t.Errorf("we credited %s (authority %s) but the bank says %s", p.PublicID, a, bank[a].State)
		}
	}
	if verified != len(credited) {
		t.Errorf("bank VERIFIED %d payments, we credited %d", verified, len(credited))
	}
}

func statusOf(m map[string]topup.TopUp, authority string) string {
	p, ok := m[authority]
	if !ok {
		return "no payment of ours"
	}
	return p.PublicID + " " + string(p.Status) + " " + p.StatusReason
}

// checkLedger asserts the database invariants and that there is one
// ledger row per credited payment and no other.
func checkLedger(t *testing.T, db *store.DB) {
	t.Helper()
	apptest.CheckInvariants(t, db)
	credited := apptest.Count(t, db, `SELECT COUNT(*) FROM topups WHERE status = 'credited'`)
	entries := apptest.Count(t, db, `SELECT COUNT(*) FROM ledger_transactions WHERE kind = 'topup'`)
	if credited != entries {
		t.Errorf("%d credited payments but %d ledger entries", credited, entries)
	}
	if n := apptest.Count(t, db, `SELECT COUNT(*) FROM (SELECT ref_id FROM topups WHERE ref_id IS NOT NULL GROUP BY ref_id HAVING COUNT(*) > 1) x`); n != 0 {
		t.Errorf("%d bank references credited more than once", n)
	}
}

// checkEvents asserts that every status change left its payment_events
// row: each payment's events, in order, chain from created to its status
// (from = the previous event's to), even across SIGKILLs.
func checkEvents(t *testing.T, db *store.DB) {
	t.Helper()
	var events []topup.Event
	if err := db.Gorm.Table("topup_events").Order("topup_id, id").Find(&events).Error; err != nil {
		t.Fatalf("topup_events: %v", err)
	}
	byTopUp := map[int64][]topup.Event{}
	for _, e := range events {
		byTopUp[e.TopUpID] = append(byTopUp[e.TopUpID], e)
	}
	broken := 0
	for _, p := range allTopUps(t, db) {
		at := topup.StatusCreated
		for _, e := range byTopUp[p.ID] {
			if e.FromStatus != at {
				broken++
				t.Errorf("payment %s: event %d %s → %s follows status %s", p.PublicID, e.ID, e.FromStatus, e.ToStatus, at)
			}
			at = e.ToStatus
		}
		if at != p.Status {
			broken++
			t.Errorf("payment %s is %s, its events end at %s", p.PublicID, p.Status, at)
		}
		if broken > 20 {
			t.Fatal("too many broken event chains")
		}
	}
}
