package scenario_test

// One route × role × method matrix for the whole app (issue 20), in the
// manner of a handler table: every route the router registers has a row
// (a new route without one fails the test), every role tries every
// method on it, and every state-changing request is sent with and without
// the CSRF token, from another origin, and as a form and as JSON. Each
// answer's status is checked against the row.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// The roles: no session, a user, an admin before the second factor, an
// admin, and an API token of each scope (sent as a bearer token, with no
// cookies).
const (
	roleAnon   = "anon"
	roleUser   = "user"
	rolePre    = "admin-before-2fa"
	roleAdmin  = "admin"
	roleRead   = "token-read"
	roleTopUp  = "token-topup"
	otherOrig  = "https://evil.example"
	statusNone = 0
)

var matrixRoles = []string{roleAnon, roleUser, rolePre, roleAdmin, roleRead, roleTopUp}

var matrixMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// who is an expected status per cookie role; bearer-token roles on the
// site are visitors without cookies (the site never reads a bearer token).
type who struct{ anon, user, pre, admin int }

func all(s int) who { return who{s, s, s, s} }

// signedIn: visitors are sent to sign in (303), everyone signed in gets s.
func signedIn(s int) who { return who{http.StatusSeeOther, s, s, s} }

// adminOnly: visitors to sign in, users find nothing, an admin before the
// second factor is sent to /admin/2fa (all 303 but users' 404), admins get s.
func adminOnly(s int) who {
	return who{http.StatusSeeOther, http.StatusNotFound, http.StatusSeeOther, s}
}

// moves: a state-changing form an admin short of the second factor may not
// send (money moved, a credential added, a setting changed): visitors to
// sign in, the admin before the second factor to /admin/2fa (303 both),
// users and admins get s.
func moves(s int) who { return who{http.StatusSeeOther, s, http.StatusSeeOther, s} }

func (w who) of(role string) int {
	switch role {
	case roleUser:
		return w.user
	case rolePre:
		return w.pre
	case roleAdmin:
		return w.admin
	}
	return w.anon
}

// apiWho is an expected status per bearer-token scope; cookie roles get
// 401 on the API (it never reads cookies).
type apiWho struct{ none, read, topup int }

// matrixRow is one route of the router, as registered, with a concrete
// URL and what every role gets.
type matrixRow struct {
	path string // the route's pattern as registered
	url  string // a concrete request path ("" = path)
	// Site routes: the status per role of a GET, and of a POST that
	// carries the CSRF token from the same origin (as a form; as JSON
	// with the token in X-CSRF-Token, json when it differs).
	get, post, json *who
	// API routes (under /api): per scope; cookie roles get 401.
	apiGet, apiPost *apiWho
	// anyMethod: the route takes every method (the sandbox bank).
	anyMethod bool
	// csrfExempt: the bank's callback, answered without the token.
	csrfExempt bool
	// destructive: a successful request ends the session that sent it,
	// so each of its requests is sent by a fresh session of the role.
	destructive bool
}

func (r matrixRow) methods() []string {
	var m []string
	if r.anyMethod {
		return []string{"ALL"}
	}
	if r.get != nil || r.apiGet != nil {
		m = append(m, http.MethodGet, http.MethodHead)
	}
	if r.post != nil || r.apiPost != nil {
		m = append(m, http.MethodPost)
	}
	return m
}

func p(w who) *who       { return &w }
func a(w apiWho) *apiWho { return &w }

func TestRouteRoleMethodMatrix(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "topuptest.SeedN writes top-ups without their events and ledger transactions", Env: map[string]string{"METRICS_TOKEN": "metrics-token-0123456789-abcdefghij"}})
		ctx := context.Background()
		seeded := topuptest.SeedN(t, db, 3)
		review := seeded[2] // needs_review (SeedN's third)
		if review.Status != "needs_review" {
			t.Fatalf("seed: %s", review.Status)
		}

		// The cookie roles' browsers.
		anon := app.NewClient(t)
		anon.Get(routes.SignIn) // a CSRF cookie, as any visitor has
		user, _ := app.StartTopUp(t, "matrix-user@example.com", "10000")
		userID := authtest.UserID(t, db, "matrix-user@example.com")
		ownTopUp := topuptest.Select(t, db, func(p topup.TopUp) bool { return p.UserID == userID })[0].PublicID
		adminSeq := 0
		newAdmin := func(pass bool) *apptest.Client {
			adminSeq++
			email := fmt.Sprintf("matrix-admin-%d@example.com", adminSeq)
			if _, err := app.Server.Auth.SignUp(ctx, email, "correct horse battery", "admin", "en"); err != nil {
				t.Fatal(err)
			}
			c := app.NewClient(t)
			c.SignIn(email, "correct horse battery")
			if pass {
				c.PassAdminChecks(email)
			}
			return c
		}
		pre, admin := newAdmin(false), newAdmin(true)
		userSeq := 0
		newUser := func() *apptest.Client {
			userSeq++
			c := app.NewClient(t)
			c.SignUp(fmt.Sprintf("matrix-user-%d@example.com", userSeq))
			return c
		}
		// Bearer tokens of each scope, and a spare token (of the user) for
		// the revoke routes to act on.
		token := func(scope apitoken.Scope, name string) (string, int64) {
			secret, tk, err := app.Server.Tokens.Create(ctx, apitoken.CreateInput{UserID: userID, Name: name, Scope: string(scope)})
			if err != nil {
				t.Fatal(err)
			}
			return secret, tk.ID
		}
		readSecret, _ := token(apitoken.ScopeRead, "matrix read")
		topupSecret, _ := token(apitoken.ScopeTopUp, "matrix topup")
		_, spareID := token(apitoken.ScopeRead, "matrix spare")
		clients := map[string]*apptest.Client{roleAnon: anon, roleUser: user, rolePre: pre, roleAdmin: admin,
			roleRead: app.NewClient(t), roleTopUp: app.NewClient(t)}
		bearer := map[string]string{roleRead: readSecret, roleTopUp: topupSecret}
		fresh := func(role string) *apptest.Client {
			switch role {
			case roleUser:
				return newUser()
			case rolePre:
				return newAdmin(false)
			case roleAdmin:
				return newAdmin(true)
			case roleAnon: // signing out rotates the visitor's CSRF cookie
				c := app.NewClient(t)
				c.Get(routes.SignIn)
				return c
			}
			return clients[role]
		}

		const noWithdrawal = "wd_aaaaaaaaaaaaaaaaaaaaaaaa"
		noCharge := charge.NewPublicID() // of no charge
		forbidden := http.StatusForbidden
		ok, see, nf, unp := http.StatusOK, http.StatusSeeOther, http.StatusNotFound, http.StatusUnprocessableEntity
		moved := http.StatusMovedPermanently
		noRefund := cardrefund.NewPublicID() // of no card refund
		rows := []matrixRow{
			{path: routes.SandbankAll, url: routes.Sandbank + "/pg/v4/payment/request.json", anyMethod: true},
			{path: routes.Healthz, get: p(all(ok))},
			{path: routes.Readyz, get: p(all(ok))},
			// /metrics answers only to METRICS_TOKEN: 404 to everyone else.
			{path: routes.Metrics, get: p(all(nf))},
			{path: routes.APIOpenAPI, apiGet: a(apiWho{ok, ok, ok})},
			{path: routes.APITopUps, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok}),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusBadRequest})},
			{path: routes.APITopUpPattern, url: routes.APITopUp(ownTopUp), apiGet: a(apiWho{http.StatusUnauthorized, ok, ok})},
			{path: routes.APIWallet, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok})},
			{path: routes.APIWalletLedger, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok})},
			{path: "/", get: p(who{ok, see, see, see})}, // the landing page signed out, else to /wallet
			{path: routes.SignUp, get: p(who{ok, see, see, see}), post: p(all(unp))},
			{path: routes.SignIn, get: p(who{ok, see, see, see}), post: p(all(http.StatusUnauthorized))}, // no such account
			{path: routes.SignOut, post: p(all(see)), destructive: true},
			{path: routes.Account, get: p(signedIn(ok))},
			// An admin's needs a fresh second factor (none typed here); an
			// admin short of the second factor is sent to pass it first.
			{path: routes.AccountSignOutEverywhere, post: p(who{see, see, see, unp}), destructive: true},
			{path: routes.AccountPassword, get: p(signedIn(ok)), post: p(moves(unp))},
			{path: routes.Wallet, get: p(signedIn(ok))},
			{path: routes.TopUp, get: p(signedIn(ok)), post: p(moves(http.StatusBadRequest))}, // no form token
			{path: routes.TopUpReturnPattern, url: routes.TopUpReturn(ownTopUp), csrfExempt: true,
				get: p(all(http.StatusBadRequest)), post: p(all(http.StatusBadRequest))},
			{path: routes.TopUpPattern, url: routes.TopUpPage(ownTopUp), get: p(who{see, ok, nf, nf})},
			{path: routes.Tokens, get: p(signedIn(ok)), post: p(moves(unp))},
			{path: routes.AccountReceipts, post: p(moves(see))},
			{path: routes.AccountName, post: p(moves(see))},
			{path: routes.PasswordForgot, get: p(all(ok)), post: p(all(ok))}, // the same answer for any address
			{path: routes.PasswordResetPattern, url: routes.PasswordReset("no-such-link"), get: p(all(http.StatusGone)), post: p(all(http.StatusGone))},
			{path: routes.EmailVerifyPattern, url: routes.EmailVerify("no-such-link"), get: p(all(http.StatusGone)), post: p(all(http.StatusGone))},
			{path: routes.AccountEmailVerify, post: p(moves(see))},
			{path: routes.TopUpAbandonPattern, url: routes.TopUpAbandon(ownTopUp), post: p(who{see, see, see, nf})},
			{path: routes.WalletTopUps, get: p(signedIn(ok))},
			{path: routes.WalletTopUpsCSV, get: p(signedIn(ok))},
			// Taking away (revoking one's token, disabling or deleting one's
			// endpoint or origin) is open to an admin short of the second
			// factor (SECURITY.md); adding is not.
			{path: routes.TokenRevokePattern, url: routes.TokenRevoke(spareID), post: p(who{see, see, nf, nf})},
			{path: routes.AdminTwoFactor, get: p(who{see, nf, ok, see}), post: p(who{see, nf, unp, unp})}, // no code typed
			{path: routes.AdminDashboardPattern, url: routes.Admin, get: p(adminOnly(ok))},
			{path: routes.AdminTopUps, get: p(adminOnly(ok))},
			{path: routes.AdminTopUpsCSV, get: p(adminOnly(ok))},
			{path: routes.AdminTopUpPattern, url: routes.AdminTopUp(review.PublicID), get: p(adminOnly(ok))},
			{path: routes.AdminUsers, get: p(adminOnly(ok))},
			{path: routes.AdminUserPattern, url: routes.AdminUser(userID), get: p(adminOnly(ok))},
			{path: routes.AdminAudit, get: p(adminOnly(ok))},
			{path: routes.AdminReconcile, post: p(adminOnly(see))},
			{path: routes.AdminGateways, get: p(adminOnly(ok))},
			{path: routes.AdminGatewaySwitchPattern, url: routes.AdminGatewaySwitch("zarinpal"), post: p(adminOnly(http.StatusBadRequest))}, // which way is required
			{path: routes.AdminTopUpRecheckPattern, url: routes.AdminTopUpRecheck(review.PublicID), post: p(adminOnly(see))},
			{path: routes.AdminTopUpClosePattern, url: routes.AdminTopUpClose(review.PublicID), post: p(adminOnly(see))}, // back to the payment: a note is required
			// Refund to card: a top-up not credited has nothing to give back (409, on its page); an unknown card refund is not found.
			{path: routes.AdminTopUpCardRefundPattern, url: routes.AdminTopUpCardRefund(review.PublicID), post: p(adminOnly(http.StatusConflict))},
			{path: routes.AdminTopUpCardRefundRecheckPattern, url: routes.AdminTopUpCardRefundRecheck(review.PublicID, noRefund), post: p(adminOnly(nf))},
			{path: routes.AdminTopUpCardRefundClosePattern, url: routes.AdminTopUpCardRefundClose(review.PublicID, noRefund), post: p(adminOnly(nf))},
			{path: routes.AdminTokens, get: p(adminOnly(ok))},
			{path: routes.AdminTokenRevokePattern, url: routes.AdminTokenRevoke(spareID), post: p(adminOnly(see))},
			{path: routes.Webhooks, get: p(signedIn(ok)), post: p(moves(unp))}, // no URL typed
			{path: routes.WebhookDisablePattern, url: routes.WebhookDisable(999999), post: p(who{see, nf, nf, nf})},
			{path: routes.WebhookEnablePattern, url: routes.WebhookEnable(999999), post: p(who{see, nf, see, nf})},
			{path: routes.WebhookRotatePattern, url: routes.WebhookRotate(999999), post: p(who{see, nf, see, nf})},
			{path: routes.WebhookDeletePattern, url: routes.WebhookDelete(999999), post: p(who{see, nf, nf, nf})},
			{path: routes.WebhookOrigins, post: p(moves(unp))}, // no origin typed
			{path: routes.WebhookOriginDeletePattern, url: routes.WebhookOriginDelete(999999), post: p(who{see, nf, nf, nf})},
			{path: routes.AdminWebhooks, get: p(adminOnly(ok))},
			{path: routes.AdminWebhookPattern, url: routes.AdminWebhook(999999), get: p(adminOnly(nf))},
			{path: routes.AdminWebhookDisablePattern, url: routes.AdminWebhookDisable(999999), post: p(adminOnly(nf))},
			{path: routes.AdminWebhookEnablePattern, url: routes.AdminWebhookEnable(999999), post: p(adminOnly(nf))},
			{path: routes.AdminDeliveryResendPattern, url: routes.AdminDeliveryResend(999999), post: p(adminOnly(nf))},
			// Transfers: the form (a POST without a form token is refused),
			// a receipt for its two people only, the API (a read or top-up
			// token reads but cannot send), the admin's search.
			{path: routes.Transfer, get: p(signedIn(ok)), post: p(moves(http.StatusBadRequest))},
			{path: routes.TransferPattern, url: routes.TransferReceipt("tr_nosuchtransfer"), get: p(who{see, nf, nf, nf})},
			{path: routes.APITransfers, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok}),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APITransferPattern, url: routes.APITransfer("tr_nosuchtransfer"), apiGet: a(apiWho{http.StatusUnauthorized, nf, nf})},
			// Charges: a merchant's token (scope charges) makes and acts on
			// them; read and top-up tokens read (none of theirs).
			{path: routes.APICharges, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok}),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APIChargePattern, url: routes.APICharge("ch_nosuchcharge"), apiGet: a(apiWho{http.StatusUnauthorized, nf, nf})},
			{path: routes.APIChargeCapturePattern, url: routes.APIChargeCapture("ch_nosuchcharge"),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APIChargeCancelPattern, url: routes.APIChargeCancel("ch_nosuchcharge"),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APIChargeRefundsPattern, url: routes.APIChargeRefunds("ch_nosuchcharge"),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.AdminUserMerchantPattern, url: routes.AdminUserMerchant(999999), post: p(adminOnly(nf))},
			// The payer's checkout of an unknown charge; the merchant's page
			// refuses anyone who is not a merchant; the admin's search.
			{path: routes.CheckoutPattern, url: routes.Checkout(noCharge), get: p(who{see, nf, nf, nf}), post: p(who{see, nf, see, nf})},
			{path: routes.CheckoutCancelPattern, url: routes.CheckoutCancel(noCharge), post: p(who{see, nf, see, nf})},
			{path: routes.CheckoutTopUpPattern, url: routes.CheckoutTopUp(noCharge), get: p(who{see, nf, nf, nf})},
			{path: routes.Merchant, get: p(signedIn(forbidden))},
			{path: routes.MerchantChargesCSV, get: p(signedIn(forbidden))},
			{path: routes.MerchantChargePattern, url: routes.MerchantCharge(noCharge), get: p(signedIn(forbidden))},
			{path: routes.MerchantChargeCapturePattern, url: routes.MerchantChargeCapture(noCharge), post: p(moves(forbidden))},
			{path: routes.MerchantChargeCancelPattern, url: routes.MerchantChargeCancel(noCharge), post: p(moves(forbidden))},
			{path: routes.MerchantChargeRefundPattern, url: routes.MerchantChargeRefund(noCharge), post: p(moves(forbidden))},
			{path: routes.AdminCharges, get: p(adminOnly(ok))},
			{path: routes.AdminChargePattern, url: routes.AdminCharge(noCharge), get: p(adminOnly(nf))},
			{path: routes.AdminTransfers, get: p(adminOnly(ok))},
			{path: routes.AdminTransferPattern, url: routes.AdminTransfer("tr_nosuchtransfer"), get: p(adminOnly(nf))},
			// The top-ups' old addresses: the bank's callback and the
			// actions served as at the new ones, the pages moved for all.
			{path: routes.LegacyTopUpReturnPattern, url: routes.LegacyTopUpReturn(ownTopUp), csrfExempt: true,
				get: p(all(http.StatusBadRequest)), post: p(all(http.StatusBadRequest))},
			{path: routes.LegacyTopUpPattern, url: routes.LegacyTopUpPage(ownTopUp), get: p(all(moved))},
			{path: routes.LegacyTopUpAbandonPattern, url: routes.LegacyTopUpAbandon(ownTopUp), post: p(who{see, see, see, nf})},
			{path: routes.LegacyWalletTopUps, get: p(all(moved))},
			{path: routes.LegacyWalletTopUpsCSV, get: p(all(moved))},
			{path: routes.LegacyAdminTopUps, get: p(all(moved))},
			{path: routes.LegacyAdminTopUpsCSV, get: p(all(moved))},
			{path: routes.LegacyAdminTopUpPattern, url: routes.LegacyAdminTopUp(review.PublicID), get: p(all(moved))},
			{path: routes.LegacyAdminTopUpRecheckPattern, url: routes.LegacyAdminTopUpRecheck(review.PublicID), post: p(adminOnly(see))},
			{path: routes.LegacyAdminTopUpClosePattern, url: routes.LegacyAdminTopUpClose(review.PublicID), post: p(adminOnly(see))},
			// Cash-out: a POST without its fields or form token is refused; an
			// unknown withdrawal is nobody's; the admin's actions ask for a
			// fresh second factor first (none typed: 422).
			{path: routes.BankAccounts, get: p(signedIn(ok)), post: p(moves(unp))},
			{path: routes.Withdraw, get: p(signedIn(ok)), post: p(moves(http.StatusBadRequest))},
			{path: routes.WithdrawalPattern, url: routes.Withdrawal(noWithdrawal), get: p(who{see, nf, nf, nf})},
			{path: routes.WithdrawalCancelPattern, url: routes.WithdrawalCancel(noWithdrawal), post: p(who{see, nf, see, nf})},
			{path: routes.APIBankAccounts, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok}),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APIWithdrawals, apiGet: a(apiWho{http.StatusUnauthorized, ok, ok}),
				apiPost: a(apiWho{http.StatusUnauthorized, http.StatusForbidden, http.StatusForbidden})},
			{path: routes.APIWithdrawalPattern, url: routes.APIWithdrawal(noWithdrawal), apiGet: a(apiWho{http.StatusUnauthorized, nf, nf})},
			{path: routes.AdminWithdrawals, get: p(adminOnly(ok))},
			{path: routes.AdminWithdrawalPattern, url: routes.AdminWithdrawal(noWithdrawal), get: p(adminOnly(nf))},
			{path: routes.AdminWithdrawalsReconcile, post: p(adminOnly(see))},
			{path: routes.AdminWithdrawalApprovePattern, url: routes.AdminWithdrawalApprove(noWithdrawal), post: p(adminOnly(unp))},
			{path: routes.AdminWithdrawalRejectPattern, url: routes.AdminWithdrawalReject(noWithdrawal), post: p(adminOnly(unp))},
			{path: routes.AdminWithdrawalFailPattern, url: routes.AdminWithdrawalFail(noWithdrawal), post: p(adminOnly(unp))},
			{path: routes.AdminWithdrawalPaidPattern, url: routes.AdminWithdrawalPaid(noWithdrawal), post: p(adminOnly(unp))},
			{path: routes.AdminBankAccountApprovePattern, url: routes.AdminBankAccountApprove(999999), post: p(adminOnly(unp))},
			{path: routes.AdminBankAccountRejectPattern, url: routes.AdminBankAccountReject(999999), post: p(adminOnly(unp))},
		}

		// Every route the router registers has its row, and every row is a
		// route: a route added without a row fails here.
		registered := map[string][]string{}
		for _, rt := range app.Server.App.GetRoutes(true) {
			if !slices.Contains(registered[rt.Path], rt.Method) {
				registered[rt.Path] = append(registered[rt.Path], rt.Method)
			}
		}
		byPath := map[string]matrixRow{}
		for _, r := range rows {
			byPath[r.path] = r
			if _, ok := registered[r.path]; !ok {
				t.Errorf("row %s: no such route in the router", r.path)
			}
		}
		var paths []string
		for path := range registered {
			paths = append(paths, path)
		}
		sort.Strings(paths)
		for _, path := range paths {
			r, ok := byPath[path]
			if !ok {
				t.Errorf("route %s %v has no row in the matrix: add one with the status every role gets", path, registered[path])
				continue
			}
			got := registered[path]
			sort.Strings(got)
			if r.anyMethod {
				if len(got) < len(matrixMethods) {
					t.Errorf("route %s: methods %v, the row says every method", path, got)
				}
				continue
			}
			want := r.methods()
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("route %s: registered methods %v, the row has %v", path, got, want)
			}
		}

		csrfOf := func(c *apptest.Client) string {
			u, _ := url.Parse(app.URL)
			for _, ck := range c.HTTP.Jar.Cookies(u) {
				if ck.Name == "kp_csrf" {
					// The token of this browser's cookie and session, as a
					// page of the app would show it.
					return apptest.Input(c.Get(routes.SignIn).Body, "_csrf")
				}
			}
			return ""
		}
		csrfCache := map[*apptest.Client]string{}
		tokenOf := func(c *apptest.Client) string {
			if tok, ok := csrfCache[c]; ok {
				return tok
			}
			tok := csrfOf(c)
			if tok == "" { // a page shows it: the account page for the signed in
				tok = apptest.Input(c.Get(routes.Account).Body, "_csrf")
			}
			csrfCache[c] = tok
			return tok
		}
		for _, role := range []string{roleUser, rolePre, roleAdmin} {
			if tokenOf(clients[role]) == "" {
				t.Fatalf("no CSRF token for %s", role)
			}
		}

		type variant struct {
			name       string
			csrf, json bool
			origin     string
		}
		variants := []variant{
			{name: "form", csrf: true, origin: "self"},
			{name: "form without the CSRF token", origin: "self"},
			{name: "form from another origin", csrf: true, origin: otherOrig},
			{name: "JSON with the token in X-CSRF-Token", csrf: true, json: true, origin: "self"},
			{name: "JSON without the token", json: true, origin: "self"},
		}
		send := func(c *apptest.Client, role, method, target string, v variant) int {
			t.Helper()
			var body string
			if method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions {
				if v.json {
					body = `{}`
				} else if v.csrf {
					body = url.Values{"_csrf": {tokenOf(c)}}.Encode()
				}
			}
			req, err := http.NewRequestWithContext(ctx, method, app.URL+target, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body != "" || (method != http.MethodGet && method != http.MethodHead) {
				if v.json {
					req.Header.Set("Content-Type", "application/json")
				} else {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
			}
			if v.json && v.csrf {
				req.Header.Set("X-CSRF-Token", tokenOf(c))
			}
			switch v.origin {
			case "self":
				req.Header.Set("Origin", app.URL)
			case "":
			default:
				req.Header.Set("Origin", v.origin)
			}
			if b := bearer[role]; b != "" {
				req.Header.Set("Authorization", "Bearer "+b)
			}
			if strings.HasPrefix(target, routes.APITopUps) && method == http.MethodPost {
				req.Header.Set("Idempotency-Key", strings.ReplaceAll(fmt.Sprintf("matrix-%s-%s", role, v.name), " ", "-"))
			}
			// Go's client sends a request again on a fresh connection when
			// a kept-alive one turns out closed before any answer, but a
			// POST only when it says it may be (this header, which the app
			// does not read): a loaded machine's closed connection is not
			// what this test is about (seen once: "EOF" on a POST).
			req.Header.Set("X-Idempotency-Key", "matrix")
			return c.Do(req).Status
		}

		// expect is the status a role gets for a method on a row.
		expect := func(r matrixRow, role, method string, v variant) int {
			target := r.url
			if target == "" {
				target = r.path
			}
			api := strings.HasPrefix(target, routes.API+"/")
			safe := method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
			switch {
			case r.anyMethod:
				return statusNone // the sandbox bank answers for itself
			case api:
				var w *apiWho
				switch method {
				case http.MethodGet, http.MethodHead:
					w = r.apiGet
				case http.MethodPost:
					w = r.apiPost
				}
				if w == nil {
					// No such endpoint (problem+json 404), but under /api/v1
					// the bearer token is asked for first.
					if strings.HasPrefix(target, routes.APIv1+"/") && bearer[role] == "" {
						return http.StatusUnauthorized
					}
					return nf
				}
				switch role {
				case roleRead:
					return w.read
				case roleTopUp:
					if method == http.MethodPost && v.json && w.topup != http.StatusForbidden {
						// A JSON body "{}": the body is read, the amount
						// missing (unless the scope refuses it first).
						return unp
					}
					return w.topup
				}
				return w.none
			case !safe && !r.csrfExempt && (!v.csrf || v.origin == otherOrig || bearer[role] != ""):
				// Every state-changing request on the site needs the token
				// of this browser's cookie from this origin (bearer-token
				// clients have no cookie): 403 before any handler.
				return http.StatusForbidden
			}
			var w *who
			switch method {
			case http.MethodGet, http.MethodHead:
				w = r.get
			case http.MethodPost:
				w = r.post
				if v.json && r.json != nil {
					w = r.json
				}
			}
			if w == nil {
				// No such route for this method: the site's 404 page; under
				// /admin the group's checks come first.
				if target == routes.AdminTwoFactor { // past the sign-in and role checks, its own routes
					return who{see, nf, nf, nf}.of(role)
				}
				if target == routes.Admin || strings.HasPrefix(target, routes.Admin+"/") {
					return adminOnly(nf).of(role)
				}
				return nf
			}
			return w.of(role)
		}

		check := func(r matrixRow, destructive bool) {
			target := r.url
			if target == "" {
				target = r.path
			}
			for _, method := range matrixMethods {
				vs := variants[:1]
				if method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions {
					vs = variants
				}
				for _, v := range vs {
					for _, role := range matrixRoles {
						c := clients[role]
						if destructive {
							c = fresh(role)
						}
						want := expect(r, role, method, v)
						got := send(c, role, method, target, v)
						if want == statusNone {
							if got == http.StatusInternalServerError || got == 0 {
								t.Errorf("%s %s as %s (%s): %d", method, target, role, v.name, got)
							}
							continue
						}
						if got != want {
							t.Errorf("%s %s as %s (%s): %d, want %d", method, target, role, v.name, got, want)
						}
					}
				}
			}
		}
		for _, r := range rows {
			if !r.destructive {
				check(r, false)
			}
		}
		// Last, the rows that end the session that sends them: each
		// request by a fresh session of its role.
		for _, r := range rows {
			if r.destructive {
				check(r, true)
			}
		}
	})
}
