package routes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The URLs are a contract (mails, the bank's callback, bookmarks, API
// clients): each is written out here once, byte for byte.
func TestURLs(t *testing.T) {
	const id = "abcdefghijklmnopqrstuvwx"
	for _, tc := range []struct{ got, want string }{
		{Home, "/"},
		{Static, "/static"}, {Asset("app.css"), "/static/app.css"},
		{Sandbank, "/sandbank"}, {SandbankAll, "/sandbank/*"}, {API, "/api"}, {APIAll, "/api/*"}, {APIv1, "/api/v1"},
		{Healthz, "/healthz"}, {Readyz, "/readyz"}, {Metrics, "/metrics"},
		{APIOpenAPI, "/api/openapi.json"},
		{APITopUps, "/api/v1/topups"}, {APITopUpPattern, "/api/v1/topups/:id"}, {APITopUp(id), "/api/v1/topups/" + id},
		{APIWallet, "/api/v1/wallet"}, {APIWalletLedger, "/api/v1/wallet/ledger"},
		{SignUp, "/signup"}, {SignIn, "/signin"}, {SignOut, "/signout"},
		{PasswordForgot, "/password/forgot"}, {PasswordResetPattern, "/password/reset/:token"},
		{PasswordReset("tok-_EN"), "/password/reset/tok-_EN"},
		{EmailVerifyPattern, "/email/verify/:token"}, {EmailVerify("tok-_EN"), "/email/verify/tok-_EN"},
		{AccountEmailVerify, "/account/email/verify"},
		{Account, "/account"}, {AccountReceipts, "/account/receipts"}, {AccountSignOutEverywhere, "/account/signout-everywhere"},
		{AccountPassword, "/account/password"}, {AccountName, "/account/name"}, {Tokens, "/account/tokens"}, {TokenRevokePattern, "/account/tokens/:id/revoke"},
		{TokenRevoke(42), "/account/tokens/42/revoke"},
		{Webhooks, "/account/webhooks"}, {WebhookDisablePattern, "/account/webhooks/:id/disable"}, {WebhookDisable(3), "/account/webhooks/3/disable"},
		{WebhookEnablePattern, "/account/webhooks/:id/enable"}, {WebhookEnable(3), "/account/webhooks/3/enable"},
		{WebhookDeletePattern, "/account/webhooks/:id/delete"}, {WebhookDelete(3), "/account/webhooks/3/delete"},
		{WebhookRotatePattern, "/account/webhooks/:id/rotate"}, {WebhookRotate(3), "/account/webhooks/3/rotate"},
		{WebhookOrigins, "/account/webhooks/origins"}, {WebhookOriginDeletePattern, "/account/webhooks/origins/:id/delete"},
		{WebhookOriginDelete(4), "/account/webhooks/origins/4/delete"},
		{Wallet, "/wallet"}, {WalletTopUps, "/wallet/topups"}, {WalletTopUpsCSV, "/wallet/topups.csv"}, {TopUp, "/wallet/topup"},
		{TopUps, "/topups"}, {TopUpPattern, "/topups/:id"}, {TopUpPage(id), "/topups/" + id},
		{TopUpReturnPattern, "/topups/:id/return"}, {TopUpReturn(id), "/topups/" + id + "/return"},
		{TopUpAbandonPattern, "/topups/:id/abandon"}, {TopUpAbandon(id), "/topups/" + id + "/abandon"},
		{Admin, "/admin"}, {AdminDashboardPattern, "/admin/"}, {AdminTwoFactor, "/admin/2fa"},
		{AdminTopUps, "/admin/topups"}, {AdminTopUpsCSV, "/admin/topups.csv"},
		{AdminTopUpPattern, "/admin/topups/:id"}, {AdminTopUp(id), "/admin/topups/" + id},
		{AdminTopUpRecheckPattern, "/admin/topups/:id/recheck"}, {AdminTopUpRecheck(id), "/admin/topups/" + id + "/recheck"},
		{AdminTopUpClosePattern, "/admin/topups/:id/close"}, {AdminTopUpClose(id), "/admin/topups/" + id + "/close"},
		{AdminTopUpCardRefundPattern, "/admin/topups/:id/card-refund"}, {AdminTopUpCardRefund(id), "/admin/topups/" + id + "/card-refund"},
		{AdminTopUpCardRefundRecheckPattern, "/admin/topups/:id/card-refunds/:refund/recheck"},
		{AdminTopUpCardRefundRecheck(id, "cr_x"), "/admin/topups/" + id + "/card-refunds/cr_x/recheck"},
		{AdminTopUpCardRefundClosePattern, "/admin/topups/:id/card-refunds/:refund/close"},
		{AdminTopUpCardRefundClose(id, "cr_x"), "/admin/topups/" + id + "/card-refunds/cr_x/close"},
		// The old addresses (banks hold callback URLs of top-ups in flight).
		{LegacyTopUps, "/payments"}, {LegacyTopUpPattern, "/payments/:id"}, {LegacyTopUpPage(id), "/payments/" + id},
		{LegacyTopUpReturnPattern, "/payments/:id/return"}, {LegacyTopUpReturn(id), "/payments/" + id + "/return"},
		{LegacyTopUpAbandonPattern, "/payments/:id/abandon"}, {LegacyTopUpAbandon(id), "/payments/" + id + "/abandon"},
		{LegacyWalletTopUps, "/wallet/payments"}, {LegacyWalletTopUpsCSV, "/wallet/payments.csv"},
		{LegacyAdminTopUps, "/admin/payments"}, {LegacyAdminTopUpsCSV, "/admin/payments.csv"},
		{LegacyAdminTopUpPattern, "/admin/payments/:id"}, {LegacyAdminTopUp(id), "/admin/payments/" + id},
		{LegacyAdminTopUpRecheckPattern, "/admin/payments/:id/recheck"}, {LegacyAdminTopUpRecheck(id), "/admin/payments/" + id + "/recheck"},
		{LegacyAdminTopUpClosePattern, "/admin/payments/:id/close"}, {LegacyAdminTopUpClose(id), "/admin/payments/" + id + "/close"},
		{AdminUsers, "/admin/users"}, {AdminUserPattern, "/admin/users/:id"}, {AdminUser(7), "/admin/users/7"},
		{AdminAudit, "/admin/audit"}, {AdminReconcile, "/admin/reconcile"},
		{AdminGateways, "/admin/gateways"}, {AdminGatewaySwitchPattern, "/admin/gateways/:name/switch"},
		{AdminGatewaySwitch("zibal"), "/admin/gateways/zibal/switch"},
		{AdminWebhooks, "/admin/webhooks"}, {AdminWebhookPattern, "/admin/webhooks/:id"}, {AdminWebhook(3), "/admin/webhooks/3"},
		{AdminWebhookDisablePattern, "/admin/webhooks/:id/disable"}, {AdminWebhookDisable(3), "/admin/webhooks/3/disable"},
		{AdminWebhookEnablePattern, "/admin/webhooks/:id/enable"}, {AdminWebhookEnable(3), "/admin/webhooks/3/enable"},
		{AdminDeliveryResendPattern, "/admin/webhooks/deliveries/:id/resend"}, {AdminDeliveryResend(5), "/admin/webhooks/deliveries/5/resend"},
		{Transfer, "/wallet/transfer"}, {Transfers, "/transfers"}, {TransferPattern, "/transfers/:id"}, {TransferReceipt(id), "/transfers/" + id},
		{Checkouts, "/checkout"}, {CheckoutPattern, "/checkout/:id"}, {Checkout(id), "/checkout/" + id},
		{CheckoutCancelPattern, "/checkout/:id/cancel"}, {CheckoutCancel(id), "/checkout/" + id + "/cancel"},
		{CheckoutTopUpPattern, "/checkout/:id/topup"}, {CheckoutTopUp(id), "/checkout/" + id + "/topup"},
		{Merchant, "/merchant"}, {MerchantChargesCSV, "/merchant/charges.csv"}, {MerchantChargePattern, "/merchant/charges/:id"},
		{MerchantCharge(id), "/merchant/charges/" + id}, {MerchantChargeCapturePattern, "/merchant/charges/:id/capture"},
		{MerchantChargeCapture(id), "/merchant/charges/" + id + "/capture"}, {MerchantChargeCancelPattern, "/merchant/charges/:id/cancel"},
		{MerchantChargeCancel(id), "/merchant/charges/" + id + "/cancel"}, {MerchantChargeRefundPattern, "/merchant/charges/:id/refund"},
		{MerchantChargeRefund(id), "/merchant/charges/" + id + "/refund"},
		{AdminCharges, "/admin/charges"}, {AdminChargePattern, "/admin/charges/:id"}, {AdminCharge(id), "/admin/charges/" + id},
		{APICharges, "/api/v1/charges"}, {APIChargePattern, "/api/v1/charges/:id"}, {APICharge(id), "/api/v1/charges/" + id},
		{APIChargeCapturePattern, "/api/v1/charges/:id/capture"}, {APIChargeCancelPattern, "/api/v1/charges/:id/cancel"},
		{APIChargeRefundsPattern, "/api/v1/charges/:id/refunds"}, {APIChargeRefunds(id), "/api/v1/charges/" + id + "/refunds"},
		{APIChargeCapture(id), "/api/v1/charges/" + id + "/capture"}, {APIChargeCancel(id), "/api/v1/charges/" + id + "/cancel"},
		{AdminUserMerchantPattern, "/admin/users/:id/merchant"}, {AdminUserMerchant(7), "/admin/users/7/merchant"},
		{APITransfers, "/api/v1/transfers"}, {APITransferPattern, "/api/v1/transfers/:id"}, {APITransfer(id), "/api/v1/transfers/" + id},
		{AdminTransfers, "/admin/transfers"}, {AdminTransferPattern, "/admin/transfers/:id"}, {AdminTransfer(id), "/admin/transfers/" + id},
		{AdminTokens, "/admin/tokens"}, {AdminTokenRevokePattern, "/admin/tokens/:id/revoke"}, {AdminTokenRevoke(9), "/admin/tokens/9/revoke"},
		{BankAccounts, "/account/bank-accounts"}, {Withdraw, "/wallet/withdraw"}, {Withdrawals, "/withdrawals"},
		{WithdrawalPattern, "/withdrawals/:id"}, {Withdrawal("wd_x"), "/withdrawals/wd_x"},
		{WithdrawalCancelPattern, "/withdrawals/:id/cancel"}, {WithdrawalCancel("wd_x"), "/withdrawals/wd_x/cancel"},
		{APIBankAccounts, "/api/v1/bank-accounts"}, {APIWithdrawals, "/api/v1/withdrawals"},
		{APIWithdrawalPattern, "/api/v1/withdrawals/:id"}, {APIWithdrawal("wd_x"), "/api/v1/withdrawals/wd_x"},
		{AdminWithdrawals, "/admin/withdrawals"}, {AdminWithdrawalsReconcile, "/admin/withdrawals/reconcile"},
		{AdminWithdrawalPattern, "/admin/withdrawals/:id"}, {AdminWithdrawal("wd_x"), "/admin/withdrawals/wd_x"},
		{AdminWithdrawalApprovePattern, "/admin/withdrawals/:id/approve"}, {AdminWithdrawalApprove("wd_x"), "/admin/withdrawals/wd_x/approve"},
		{AdminWithdrawalRejectPattern, "/admin/withdrawals/:id/reject"}, {AdminWithdrawalReject("wd_x"), "/admin/withdrawals/wd_x/reject"},
		{AdminWithdrawalFailPattern, "/admin/withdrawals/:id/fail"}, {AdminWithdrawalFail("wd_x"), "/admin/withdrawals/wd_x/fail"},
		{AdminWithdrawalPaidPattern, "/admin/withdrawals/:id/paid"}, {AdminWithdrawalPaid("wd_x"), "/admin/withdrawals/wd_x/paid"},
		{AdminBankAccounts, "/admin/bank-accounts"},
		{AdminBankAccountApprovePattern, "/admin/bank-accounts/:id/approve"}, {AdminBankAccountApprove(3), "/admin/bank-accounts/3/approve"},
		{AdminBankAccountRejectPattern, "/admin/bank-accounts/:id/reject"}, {AdminBankAccountReject(3), "/admin/bank-accounts/3/reject"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestURLs pins every constant and every builder of routes.go: a new one
// without its path written out there fails here.
func TestURLsPinEveryName(t *testing.T) {
	fset := token.NewFileSet()
	src, err := parser.ParseFile(fset, "routes.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range src.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.CONST {
				for _, s := range d.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						names = append(names, n.Name)
					}
				}
			}
		case *ast.FuncDecl:
			// The builders: exported, one string back (Fill is tested on
			// its own, below).
			if d.Recv != nil || !d.Name.IsExported() || d.Name.Name == "Fill" || d.Type.Results == nil || len(d.Type.Results.List) != 1 {
				continue
			}
			if r, ok := d.Type.Results.List[0].Type.(*ast.Ident); ok && r.Name == "string" {
				names = append(names, d.Name.Name)
			}
		}
	}
	tests, err := parser.ParseFile(fset, "routes_test.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, d := range tests.Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Name.Name == "TestURLs" {
			ast.Inspect(f.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					pinned[id.Name] = true
				}
				return true
			})
		}
	}
	if len(names) < 50 {
		t.Fatalf("found only %d names in routes.go", len(names))
	}
	for _, n := range names {
		if !pinned[n] {
			t.Errorf("%s is not in TestURLs: write its path out there", n)
		}
	}
}

// A parameter cannot break out of its segment.
func TestFillEscapes(t *testing.T) {
	if got, want := TopUpPage("a/../b?c#d"), "/topups/a%2F..%2Fb%3Fc%23d"; got != want {
		t.Errorf("TopUpPage: got %q, want %q", got, want)
	}
	for _, tc := range []struct {
		pattern string
		args    []string
	}{{TopUpPattern, nil}, {TopUpPattern, []string{"a", "b"}}, {Wallet, []string{"a"}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Fill(%q, %q) did not panic", tc.pattern, tc.args)
				}
			}()
			Fill(tc.pattern, tc.args...)
		}()
	}
}

func TestMatchEnd(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
		ok   bool
	}{
		{"/topups/abc/return", []string{"abc"}, true},
		{"/topups/abc/return/", []string{"abc"}, true},
		{"/shop/kifpool/topups/abc/return", []string{"abc"}, true},
		{"/topups/abc", nil, false},
		{"/topup/abc/return", nil, false},
		{"/payments/abc/return", nil, false},
		{"/topups/abc/returns", nil, false},
		{"abc/return", nil, false},
		{"", nil, false},
	} {
		got, ok := MatchEnd(TopUpReturnPattern, tc.path)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("MatchEnd(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// Every redirect goes from a registered old GET address to a registered
// new one with the same parameters; the bank's callback is never
// redirected (a POST's body would be lost), it is served at both.
func TestRedirects(t *testing.T) {
	want := map[string]string{
		"/payments/:id": "/topups/:id", "/wallet/payments": "/wallet/topups", "/wallet/payments.csv": "/wallet/topups.csv",
		"/admin/payments": "/admin/topups", "/admin/payments.csv": "/admin/topups.csv", "/admin/payments/:id": "/admin/topups/:id",
	}
	got := map[string]string{}
	for _, r := range Redirects() {
		got[r.From] = r.To
		if !slices.Contains(Patterns(), r.From) || !slices.Contains(Patterns(), r.To) {
			t.Errorf("%s -> %s: not both in Patterns()", r.From, r.To)
		}
		if !slices.Equal(Params(r.From), Params(r.To)) {
			t.Errorf("%s -> %s: parameters %q, %q", r.From, r.To, Params(r.From), Params(r.To))
		}
		if r.From == LegacyTopUpReturnPattern {
			t.Errorf("the bank's callback is redirected")
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("Redirects() = %q, want %q", got, want)
	}
	if p := Params("/a/:x/b/:y"); !slices.Equal(p, []string{"x", "y"}) {
		t.Errorf("Params = %q", p)
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/admin", true}, {"/admin/", true}, {"/admin/users/3", true}, {"/admin?done=x", true},
		{"/administrator", false}, {"/wallet", false}, {"", false}, {"/Admin", false},
	} {
		if got := Within(Admin, tc.path); got != tc.want {
			t.Errorf("Within(Admin, %q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// Every pattern is listed once, and none hides another's parameter.
func TestPatternsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Patterns() {
		if seen[p] {
			t.Errorf("%q listed twice", p)
		}
		seen[p] = true
		if !strings.HasPrefix(p, "/") {
			t.Errorf("%q does not start with /", p)
		}
	}
}

// pathLiteral matches a string that is one of the app's paths: a slash,
// the first segment of a pattern or prefix, then the end, a slash, a
// query, a fragment or an extension. (A piece of a path as a route group
// would register it, "/v1", is not looked for: a bank's own paths look
// the same. web's test that the app registers exactly Patterns() covers
// registration.)
func pathLiteral(t *testing.T) *regexp.Regexp {
	t.Helper()
	var segs []string
	seen := map[string]bool{}
	for _, p := range slices.Concat(Patterns(), Prefixes()) {
		s := strings.Split(p, "/")[1]
		s, _, _ = strings.Cut(s, ".")
		if s == "" || s == "*" || strings.HasPrefix(s, ":") || seen[s] {
			continue
		}
		seen[s] = true
		segs = append(segs, regexp.QuoteMeta(s))
	}
	slices.Sort(segs)
	return regexp.MustCompile(`^/(?:` + strings.Join(segs, "|") + `)(?:[/?#.]|$)`)
}

// No path of the app is written anywhere but in this package: handlers,
// views (templ files and the Go they generate), the API, mails, the
// callback URL, the load generator, the test helpers and the tests build
// them from here. Only this package's tests write the paths out, once,
// byte for byte (TestURLs): a changed path fails there, not in a hundred
// places. A test that sends a malformed or hostile path builds it from a
// constant and the attack ("routes.Admin + \"/../wallet\"").
func TestNoPathLiteralsOutsideRoutes(t *testing.T) {
	re := pathLiteral(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	templString := regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"|` + "`[^`]*`")
	var found []string
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (tools/)
				}
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case filepath.Dir(path) == self:
			return nil
		case strings.HasSuffix(path, ".go"):
			checked++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && re.MatchString(s) {
					found = append(found, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
				}
				return true
			})
		case strings.HasSuffix(path, ".templ"):
			checked++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				for _, q := range templString.FindAllString(line, -1) {
					if re.MatchString(q[1 : len(q)-1]) {
						found = append(found, rel+":"+strconv.Itoa(i+1)+": "+q)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: wrong root %s?", checked, root)
	}
	for _, f := range found {
		t.Errorf("path literal outside internal/routes (use a routes constant or builder): %s", f)
	}
}

// The check finds what it is meant to find.
func TestPathLiteralPattern(t *testing.T) {
	re := pathLiteral(t)
	for _, s := range []string{"/wallet", "/wallet/topup?amount=", "/admin", "/admin/payments/", "/payments/", "/payments.csv", "/topups/", "/admin/topups.csv",
		"/static/app.css", "/api", "/api/v1/topups", "/signin?next=", "/healthz", "/sandbank/x", "/account#x"} {
		if !re.MatchString(s) {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"/", "/\\", "/proc/1/stat", "/pg/v4/payment/request.json", "/_sandbank/faults", "/walletx", "wallet", "/postgres", "/v1/verify"} {
		if re.MatchString(s) {
			t.Errorf("%q caught", s)
		}
	}
}
