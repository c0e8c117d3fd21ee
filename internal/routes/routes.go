// Package routes is the one place that names the app's paths: every route
// pattern the web app registers, the prefixes of its route groups, and
// the builders of URLs with parameters (TopUpPage(id), AdminUser(id), …).
// Handlers, views, the API, mails, the callback URL given to the bank and
// the tests build paths from here, never from a string of their own (a
// test of this package fails on a path literal anywhere else).
//
// A constant without parameters is both the pattern the app registers and
// the URL a page links to. A pattern with parameters is named …Pattern;
// its builder, of the same name without the suffix, fills the parameters
// in order (path-escaped), so the two cannot drift apart.
//
// The paths are a contract (links in mails, the bank's callback URL,
// bookmarks, the API's clients): changing one breaks them.
package routes

import (
	"net/url"
	"strconv"
	"strings"
)

// Static files, the sandbox bank, probes and metrics.
const (
	Home = "/"
	// Static is the prefix of the embedded static files (static.FS).
	Static = "/static"
	// Sandbank is the prefix of the built-in sandbox bank's pages and
	// endpoints; SandbankAll is its route.
	Sandbank    = "/sandbank"
	SandbankAll = Sandbank + "/*"
	Healthz     = "/healthz"
	Readyz      = "/readyz"
	Metrics     = "/metrics"
)

// The JSON API (web/api): bearer tokens, no cookies.
const (
	API = "/api"
	// APIAll is the API's whole tree, for its middleware: API and below,
	// not "/apix".
	APIAll          = API + "/*"
	APIOpenAPI      = API + "/openapi.json"
	APIv1           = API + "/v1"
	APITopUps       = APIv1 + "/topups"
	APITopUpPattern = APITopUps + "/:id"
	APIWallet       = APIv1 + "/wallet"
	APIWalletLedger = APIWallet + "/ledger"
)

// Signing up, in and out; passwords.
const (
	SignUp               = "/signup"
	SignIn               = "/signin"
	SignOut              = "/signout"
	PasswordForgot       = "/password/forgot"
	PasswordResetPattern = "/password/reset/:token"
	// EmailVerifyPattern is the page a mailed link that confirms an
	// account's address opens (GET: the question; POST: confirm).
	EmailVerifyPattern = "/email/verify/:token"
)

// The signed-in person's account and API tokens.
const (
	Account                  = "/account"
	AccountReceipts          = Account + "/receipts"
	AccountName              = Account + "/name"
	AccountSignOutEverywhere = Account + "/signout-everywhere"
	AccountPassword          = Account + "/password"
	// AccountEmailVerify mails the signed-in person a new link that
	// confirms their address (POST).
	AccountEmailVerify = Account + "/email/verify"
	Tokens             = Account + "/tokens"
	TokenRevokePattern = Tokens + "/:id/revoke"
	// Webhook endpoints and the return_url origins.
	Webhooks                   = Account + "/webhooks"
	WebhookDisablePattern      = Webhooks + "/:id/disable"
	WebhookEnablePattern       = Webhooks + "/:id/enable"
	WebhookDeletePattern       = Webhooks + "/:id/delete"
	WebhookRotatePattern       = Webhooks + "/:id/rotate"
	WebhookOrigins             = Webhooks + "/origins"
	WebhookOriginDeletePattern = WebhookOrigins + "/:id/delete"
)

// The wallet and its top-ups.
const (
	Wallet          = "/wallet"
	WalletTopUps    = Wallet + "/topups"
	WalletTopUpsCSV = Wallet + "/topups.csv"
	TopUp           = Wallet + "/topup"
)

// Transfers between people: the form (and its confirmation step), each
// transfer's receipt, and the API's.
const (
	Transfer             = Wallet + "/transfer"
	Transfers            = "/transfers"
	TransferPattern      = Transfers + "/:id"
	APITransfers         = APIv1 + "/transfers"
	APITransferPattern   = APITransfers + "/:id"
	AdminTransfers       = Admin + "/transfers"
	AdminTransferPattern = AdminTransfers + "/:id"
)

// Merchants' charges ("Pay with Kifpool"): the payer's checkout, the
// merchant's page, the API's charges and their actions, the admin's
// making a user a merchant.
const (
	Checkouts                = "/checkout"
	CheckoutPattern          = Checkouts + "/:id"
	APICharges               = APIv1 + "/charges"
	APIChargePattern         = APICharges + "/:id"
	APIChargeCapturePattern  = APIChargePattern + "/capture"
	APIChargeCancelPattern   = APIChargePattern + "/cancel"
	APIChargeRefundsPattern  = APIChargePattern + "/refunds"
	AdminUserMerchantPattern = AdminUserPattern + "/merchant"
)

// The pages of charges: the payer's checkout (its pay form posts to the
// checkout itself; cancel; "top up the difference"), the merchant's page
// with its CSV, each charge and its actions, and the admin's charges.
const (
	CheckoutCancelPattern        = CheckoutPattern + "/cancel"
	CheckoutTopUpPattern         = CheckoutPattern + "/topup"
	Merchant                     = "/merchant"
	MerchantChargesCSV           = Merchant + "/charges.csv"
	MerchantChargePattern        = Merchant + "/charges/:id"
	MerchantChargeCapturePattern = MerchantChargePattern + "/capture"
	MerchantChargeCancelPattern  = MerchantChargePattern + "/cancel"
	MerchantChargeRefundPattern  = MerchantChargePattern + "/refund"
	AdminCharges                 = Admin + "/charges"
	AdminChargePattern           = AdminCharges + "/:id"
)

// One top-up: the payer's page, the bank's callback (the return URL
// given to the bank), giving up on an unpaid one.
const (
	TopUps              = "/topups"
	TopUpPattern        = TopUps + "/:id"
	TopUpReturnPattern  = TopUpPattern + "/return"
	TopUpAbandonPattern = TopUpPattern + "/abandon"
)

// The addresses the top-ups had while a top-up was called a payment
// (links in old mails, bookmarks, the callback URLs banks hold for
// top-ups started before the rename). Their GET pages answer 301 to the
// new address (Redirects); the bank's callback and the POST actions are
// still served where they are, by the same handlers.
const (
	LegacyTopUps                   = "/payments"
	LegacyTopUpPattern             = LegacyTopUps + "/:id"
	LegacyTopUpReturnPattern       = LegacyTopUpPattern + "/return"
	LegacyTopUpAbandonPattern      = LegacyTopUpPattern + "/abandon"
	LegacyWalletTopUps             = Wallet + "/payments"
	LegacyWalletTopUpsCSV          = Wallet + "/payments.csv"
	LegacyAdminTopUps              = Admin + "/payments"
	LegacyAdminTopUpsCSV           = Admin + "/payments.csv"
	LegacyAdminTopUpPattern        = LegacyAdminTopUps + "/:id"
	LegacyAdminTopUpRecheckPattern = LegacyAdminTopUpPattern + "/recheck"
	LegacyAdminTopUpClosePattern   = LegacyAdminTopUpPattern + "/close"
)

// The admin console: every route under Admin, behind its group's
// middleware (sign-in, admin role, second factor).
const (
	Admin = "/admin"
	// AdminDashboardPattern is how the dashboard is registered (its
	// group's "/"); pages link to Admin.
	AdminDashboardPattern    = Admin + "/"
	AdminTwoFactor           = Admin + "/2fa"
	AdminTopUps              = Admin + "/topups"
	AdminTopUpsCSV           = Admin + "/topups.csv"
	AdminTopUpPattern        = AdminTopUps + "/:id"
	AdminTopUpRecheckPattern = AdminTopUpPattern + "/recheck"
	AdminTopUpClosePattern   = AdminTopUpPattern + "/close"
	// A top-up given back to the card: started, and one under review
	// asked about again or closed.
	AdminTopUpCardRefundPattern        = AdminTopUpPattern + "/card-refund"
	AdminTopUpCardRefundRecheckPattern = AdminTopUpPattern + "/card-refunds/:refund/recheck"
	AdminTopUpCardRefundClosePattern   = AdminTopUpPattern + "/card-refunds/:refund/close"
	AdminUsers                         = Admin + "/users"
	AdminUserPattern                   = AdminUsers + "/:id"
	AdminAudit                         = Admin + "/audit"
	AdminReconcile                     = Admin + "/reconcile"
	AdminGateways                      = Admin + "/gateways"
	AdminGatewaySwitchPattern          = AdminGateways + "/:name/switch"
	AdminTokens                        = Admin + "/tokens"
	AdminTokenRevokePattern            = AdminTokens + "/:id/revoke"
	AdminWebhooks                      = Admin + "/webhooks"
	AdminWebhookPattern                = AdminWebhooks + "/:id"
	AdminWebhookDisablePattern         = AdminWebhookPattern + "/disable"
	AdminWebhookEnablePattern          = AdminWebhookPattern + "/enable"
	AdminDeliveryResendPattern         = AdminWebhooks + "/deliveries/:id/resend"
)

// Cash-out: the person's bank accounts, the withdrawal form, one
// withdrawal's receipt and its cancel; the API's; the admin's queue and
// one withdrawal's page.
const (
	BankAccounts            = Account + "/bank-accounts"
	Withdraw                = Wallet + "/withdraw"
	Withdrawals             = "/withdrawals"
	WithdrawalPattern       = Withdrawals + "/:id"
	WithdrawalCancelPattern = WithdrawalPattern + "/cancel"
	APIBankAccounts         = APIv1 + "/bank-accounts"
	APIWithdrawals          = APIv1 + "/withdrawals"
	APIWithdrawalPattern    = APIWithdrawals + "/:id"
	// AdminWithdrawals is the review queue (withdrawals waiting for an
	// admin, those under review, bank accounts waiting, the payout
	// reconciliation's reports).
	AdminWithdrawals               = Admin + "/withdrawals"
	AdminWithdrawalsReconcile      = AdminWithdrawals + "/reconcile"
	AdminWithdrawalPattern         = AdminWithdrawals + "/:id"
	AdminWithdrawalApprovePattern  = AdminWithdrawals + "/:id/approve"
	AdminWithdrawalRejectPattern   = AdminWithdrawals + "/:id/reject"
	AdminWithdrawalFailPattern     = AdminWithdrawals + "/:id/fail"
	AdminWithdrawalPaidPattern     = AdminWithdrawals + "/:id/paid"
	AdminBankAccounts              = Admin + "/bank-accounts"
	AdminBankAccountApprovePattern = AdminBankAccounts + "/:id/approve"
	AdminBankAccountRejectPattern  = AdminBankAccounts + "/:id/reject"
)

// Withdrawal is a withdrawal's receipt for its owner.
func Withdrawal(publicID string) string { return Fill(WithdrawalPattern, publicID) }

// WithdrawalCancel cancels a withdrawal not yet sent.
func WithdrawalCancel(publicID string) string { return Fill(WithdrawalCancelPattern, publicID) }

// APIWithdrawal is one withdrawal in the API.
func APIWithdrawal(publicID string) string { return Fill(APIWithdrawalPattern, publicID) }

// AdminWithdrawal is one withdrawal's admin page.
func AdminWithdrawal(publicID string) string { return Fill(AdminWithdrawalPattern, publicID) }

// AdminWithdrawalApprove approves a withdrawal waiting for review.
func AdminWithdrawalApprove(publicID string) string {
	return Fill(AdminWithdrawalApprovePattern, publicID)
}

// AdminWithdrawalReject rejects a withdrawal waiting for review.
func AdminWithdrawalReject(publicID string) string {
	return Fill(AdminWithdrawalRejectPattern, publicID)
}

// AdminWithdrawalFail closes a withdrawal under review as failed.
func AdminWithdrawalFail(publicID string) string { return Fill(AdminWithdrawalFailPattern, publicID) }

// AdminWithdrawalPaid closes a withdrawal under review as paid, on the
// provider's word that it transferred it.
func AdminWithdrawalPaid(publicID string) string { return Fill(AdminWithdrawalPaidPattern, publicID) }

// AdminBankAccountApprove verifies a bank account waiting for review.
func AdminBankAccountApprove(id int64) string {
	return Fill(AdminBankAccountApprovePattern, strconv.FormatInt(id, 10))
}

// AdminBankAccountReject rejects a bank account waiting for review.
func AdminBankAccountReject(id int64) string {
	return Fill(AdminBankAccountRejectPattern, strconv.FormatInt(id, 10))
}

// Patterns are every route pattern the web app registers with a method
// (not the prefixes of its groups' middleware), in no particular order:
// the web app's test checks that it registers exactly these.
func Patterns() []string {
	return []string{
		Home, SandbankAll, Healthz, Readyz, Metrics,
		APIOpenAPI, APITopUps, APITopUpPattern, APIWallet, APIWalletLedger,
		SignUp, SignIn, SignOut, PasswordForgot, PasswordResetPattern, EmailVerifyPattern, AccountEmailVerify,
		Account, AccountReceipts, AccountName, AccountSignOutEverywhere, AccountPassword, Tokens, TokenRevokePattern,
		Webhooks, WebhookDisablePattern, WebhookEnablePattern, WebhookDeletePattern, WebhookRotatePattern, WebhookOrigins, WebhookOriginDeletePattern,
		Wallet, WalletTopUps, WalletTopUpsCSV, TopUp,
		TopUpPattern, TopUpReturnPattern, TopUpAbandonPattern,
		AdminDashboardPattern, AdminTwoFactor, AdminTopUps, AdminTopUpsCSV, AdminTopUpPattern,
		AdminTopUpRecheckPattern, AdminTopUpClosePattern, AdminUsers, AdminUserPattern, AdminAudit,
		AdminTopUpCardRefundPattern, AdminTopUpCardRefundRecheckPattern, AdminTopUpCardRefundClosePattern,
		AdminReconcile, AdminGateways, AdminGatewaySwitchPattern, AdminTokens, AdminTokenRevokePattern,
		AdminWebhooks, AdminWebhookPattern, AdminWebhookDisablePattern, AdminWebhookEnablePattern, AdminDeliveryResendPattern,
		Transfer, TransferPattern, APITransfers, APITransferPattern, AdminTransfers, AdminTransferPattern,
		LegacyTopUpPattern, LegacyTopUpReturnPattern, LegacyTopUpAbandonPattern, LegacyWalletTopUps, LegacyWalletTopUpsCSV,
		LegacyAdminTopUps, LegacyAdminTopUpsCSV, LegacyAdminTopUpPattern, LegacyAdminTopUpRecheckPattern, LegacyAdminTopUpClosePattern,
		BankAccounts, Withdraw, WithdrawalPattern, WithdrawalCancelPattern, APIBankAccounts, APIWithdrawals, APIWithdrawalPattern,
		AdminWithdrawals, AdminWithdrawalsReconcile, AdminWithdrawalPattern, AdminWithdrawalApprovePattern, AdminWithdrawalRejectPattern,
		AdminWithdrawalFailPattern, AdminWithdrawalPaidPattern, AdminBankAccountApprovePattern, AdminBankAccountRejectPattern,
		APICharges, APIChargePattern, APIChargeCapturePattern, APIChargeCancelPattern, APIChargeRefundsPattern,
		AdminUserMerchantPattern,
		CheckoutPattern, CheckoutCancelPattern, CheckoutTopUpPattern, Merchant, MerchantChargesCSV, MerchantChargePattern,
		MerchantChargeCapturePattern, MerchantChargeCancelPattern, MerchantChargeRefundPattern, AdminCharges, AdminChargePattern,
	}
}

// A Redirect is an old GET address (From, a pattern) that answers 301 to
// its new one (To, a pattern with the same parameters in the same order).
type Redirect struct{ From, To string }

// Redirects are the old GET addresses of the top-ups' pages and lists and
// where each now lives. The bank's callback is not among them: it is
// served at its old address too (LegacyTopUpReturnPattern), since a
// redirect would lose a POST's body.
func Redirects() []Redirect {
	return []Redirect{
		{LegacyTopUpPattern, TopUpPattern},
		{LegacyWalletTopUps, WalletTopUps},
		{LegacyWalletTopUpsCSV, WalletTopUpsCSV},
		{LegacyAdminTopUps, AdminTopUps},
		{LegacyAdminTopUpsCSV, AdminTopUpsCSV},
		{LegacyAdminTopUpPattern, AdminTopUpPattern},
	}
}

// Params are the names of pattern's parameters (":id" gives "id"), in
// order.
func Params(pattern string) []string {
	var names []string
	for _, s := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

// Prefixes are the prefixes under which the app serves a whole tree
// (static files, the sandbox bank, the API, the admin console).
func Prefixes() []string {
	return []string{Static, Sandbank, API, APIv1, Admin}
}

// Fill puts args, path-escaped, in place of pattern's parameters
// (":name" segments), in order. It panics when the counts differ: that
// is a mistake in this file, and its tests catch it.
func Fill(pattern string, args ...string) string {
	// One pass, one allocation: every replayed callback builds its return
	// path here.
	var b strings.Builder
	b.Grow(len(pattern) + 32)
	n := 0
	for rest := pattern; ; {
		seg, after, more := strings.Cut(rest, "/")
		if strings.HasPrefix(seg, ":") {
			if n == len(args) {
				panic("routes: too few arguments for " + pattern)
			}
			b.WriteString(url.PathEscape(args[n]))
			n++
		} else {
			b.WriteString(seg)
		}
		if !more {
			break
		}
		b.WriteByte('/')
		rest = after
	}
	if n != len(args) {
		panic("routes: too many arguments for " + pattern)
	}
	return b.String()
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

// PasswordReset is the page a reset link opens.
func PasswordReset(token string) string { return Fill(PasswordResetPattern, token) }

// EmailVerify is the page a link that confirms an address opens.
func EmailVerify(token string) string { return Fill(EmailVerifyPattern, token) }

// TokenRevoke revokes one of the signed-in person's API tokens.
func TokenRevoke(tokenID int64) string { return Fill(TokenRevokePattern, id(tokenID)) }

// WebhookDisable stops deliveries to one of the person's endpoints.
func WebhookDisable(endpointID int64) string { return Fill(WebhookDisablePattern, id(endpointID)) }

// WebhookEnable brings back one of the person's endpoints (disabled by
// them, or marked failing).
func WebhookEnable(endpointID int64) string { return Fill(WebhookEnablePattern, id(endpointID)) }

// WebhookDelete deletes one of the person's endpoints.
func WebhookDelete(endpointID int64) string { return Fill(WebhookDeletePattern, id(endpointID)) }

// WebhookRotate gives one of the person's endpoints a new signing secret
// (the previous one signs too for a grace period).
func WebhookRotate(endpointID int64) string { return Fill(WebhookRotatePattern, id(endpointID)) }

// WebhookOriginDelete deletes one of the person's return_url origins.
func WebhookOriginDelete(originID int64) string {
	return Fill(WebhookOriginDeletePattern, id(originID))
}

// AdminWebhook is an endpoint's delivery log in the admin console.
func AdminWebhook(endpointID int64) string { return Fill(AdminWebhookPattern, id(endpointID)) }

// AdminWebhookDisable stops deliveries to any endpoint.
func AdminWebhookDisable(endpointID int64) string {
	return Fill(AdminWebhookDisablePattern, id(endpointID))
}

// AdminWebhookEnable brings back an endpoint an admin disabled, or one
// marked failing.
func AdminWebhookEnable(endpointID int64) string {
	return Fill(AdminWebhookEnablePattern, id(endpointID))
}

// AdminDeliveryResend sends one delivery again.
func AdminDeliveryResend(deliveryID int64) string {
	return Fill(AdminDeliveryResendPattern, id(deliveryID))
}

// TopUpPage is a top-up's page for its payer (the receipt, or where it
// stands).
func TopUpPage(publicID string) string { return Fill(TopUpPattern, publicID) }

// TopUpReturn is where the bank sends the payer back (the callback).
func TopUpReturn(publicID string) string { return Fill(TopUpReturnPattern, publicID) }

// TopUpAbandon gives up on an unpaid top-up.
func TopUpAbandon(publicID string) string { return Fill(TopUpAbandonPattern, publicID) }

// Checkout is the page where the payer confirms charge publicID.
func Checkout(publicID string) string { return Fill(CheckoutPattern, publicID) }

// CheckoutCancel is where the payer cancels checkout publicID.
func CheckoutCancel(publicID string) string { return Fill(CheckoutCancelPattern, publicID) }

// CheckoutTopUp sends the payer to top up what checkout publicID lacks.
func CheckoutTopUp(publicID string) string { return Fill(CheckoutTopUpPattern, publicID) }

// MerchantCharge is one charge on the merchant's page.
func MerchantCharge(publicID string) string { return Fill(MerchantChargePattern, publicID) }

// MerchantChargeCapture, MerchantChargeCancel and MerchantChargeRefund
// are the merchant's page's actions on charge publicID.
func MerchantChargeCapture(publicID string) string {
	return Fill(MerchantChargeCapturePattern, publicID)
}

// MerchantChargeCancel: see MerchantChargeCapture.
func MerchantChargeCancel(publicID string) string { return Fill(MerchantChargeCancelPattern, publicID) }

// MerchantChargeRefund: see MerchantChargeCapture.
func MerchantChargeRefund(publicID string) string { return Fill(MerchantChargeRefundPattern, publicID) }

// AdminCharge is one charge in the admin console.
func AdminCharge(publicID string) string { return Fill(AdminChargePattern, publicID) }

// APICharge is one charge in the API.
func APICharge(publicID string) string { return Fill(APIChargePattern, publicID) }

// APIChargeCapture, APIChargeCancel and APIChargeRefunds are one
// charge's actions in the API.
func APIChargeCapture(publicID string) string { return Fill(APIChargeCapturePattern, publicID) }

// APIChargeCancel cancels charge publicID.
func APIChargeCancel(publicID string) string { return Fill(APIChargeCancelPattern, publicID) }

// APIChargeRefunds refunds charge publicID.
func APIChargeRefunds(publicID string) string { return Fill(APIChargeRefundsPattern, publicID) }

// AdminUserMerchant is where an admin makes user userID a merchant.
func AdminUserMerchant(userID int64) string { return Fill(AdminUserMerchantPattern, id(userID)) }

// TransferReceipt is one transfer's receipt page.
func TransferReceipt(publicID string) string { return Fill(TransferPattern, publicID) }

// APITransfer is one transfer in the API.
func APITransfer(publicID string) string { return Fill(APITransferPattern, publicID) }

// AdminTransfer is one transfer in the admin console.
func AdminTransfer(publicID string) string { return Fill(AdminTransferPattern, publicID) }

// APITopUp is one top-up in the API.
func APITopUp(publicID string) string { return Fill(APITopUpPattern, publicID) }

// AdminTopUp is a top-up's whole story in the admin console.
func AdminTopUp(publicID string) string { return Fill(AdminTopUpPattern, publicID) }

// AdminTopUpRecheck asks the bank now about a top-up.
func AdminTopUpRecheck(publicID string) string { return Fill(AdminTopUpRecheckPattern, publicID) }

// AdminTopUpClose closes a top-up under review as failed.
func AdminTopUpClose(publicID string) string { return Fill(AdminTopUpClosePattern, publicID) }

// LegacyTopUpPage is a top-up's page at its old address (301 to
// TopUpPage).
func LegacyTopUpPage(publicID string) string { return Fill(LegacyTopUpPattern, publicID) }

// LegacyTopUpReturn is the callback URL top-ups started before the rename
// gave the bank, still served.
func LegacyTopUpReturn(publicID string) string { return Fill(LegacyTopUpReturnPattern, publicID) }

// LegacyTopUpAbandon is TopUpAbandon at its old address, still served.
func LegacyTopUpAbandon(publicID string) string { return Fill(LegacyTopUpAbandonPattern, publicID) }

// LegacyAdminTopUp is AdminTopUp at its old address (301 to AdminTopUp).
func LegacyAdminTopUp(publicID string) string { return Fill(LegacyAdminTopUpPattern, publicID) }

// LegacyAdminTopUpRecheck is AdminTopUpRecheck at its old address, still
// served.
func LegacyAdminTopUpRecheck(publicID string) string {
	return Fill(LegacyAdminTopUpRecheckPattern, publicID)
}

// LegacyAdminTopUpClose is AdminTopUpClose at its old address, still
// served.
func LegacyAdminTopUpClose(publicID string) string {
	return Fill(LegacyAdminTopUpClosePattern, publicID)
}

// AdminTopUpCardRefund gives a top-up back to the payer's card.
func AdminTopUpCardRefund(publicID string) string { return Fill(AdminTopUpCardRefundPattern, publicID) }

// AdminTopUpCardRefundRecheck asks the bank again about a card refund
// under review.
func AdminTopUpCardRefundRecheck(topUpID, refundID string) string {
	return Fill(AdminTopUpCardRefundRecheckPattern, topUpID, refundID)
}

// AdminTopUpCardRefundClose closes a card refund under review.
func AdminTopUpCardRefundClose(topUpID, refundID string) string {
	return Fill(AdminTopUpCardRefundClosePattern, topUpID, refundID)
}

// AdminUser is one user in the admin console.
func AdminUser(userID int64) string { return Fill(AdminUserPattern, id(userID)) }

// AdminGatewaySwitch turns a gateway on or off for new top-ups.
func AdminGatewaySwitch(name string) string { return Fill(AdminGatewaySwitchPattern, name) }

// AdminTokenRevoke revokes any user's API token.
func AdminTokenRevoke(tokenID int64) string { return Fill(AdminTokenRevokePattern, id(tokenID)) }

// Asset is a static file by its name under static/ ("app.css").
func Asset(name string) string { return Static + "/" + strings.TrimLeft(name, "/") }

// Within reports whether path (with its query) is prefix itself or under
// it: Within(Admin, "/admin?done=x") and Within(Admin, "/admin/users")
// hold, Within(Admin, "/administrator") does not.
func Within(prefix, path string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || rest[0] == '/' || rest[0] == '?')
}

// MatchEnd matches pattern against the last segments of path (a callback
// URL's path, which BASE_URL may put under a prefix of its own) and gives
// the parameters' values in order. Slashes at either end of path do not
// count.
func MatchEnd(pattern, path string) ([]string, bool) {
	want := strings.Split(strings.Trim(pattern, "/"), "/")
	got := strings.Split(strings.Trim(path, "/"), "/")
	if len(got) < len(want) {
		return nil, false
	}
	got = got[len(got)-len(want):]
	var args []string
	for i, w := range want {
		switch {
		case strings.HasPrefix(w, ":"):
			args = append(args, got[i])
		case w != got[i]:
			return nil, false
		}
	}
	return args, true
}
