// Package views holds the templ components of Kifpool's pages. Views get
// plain view models; they import no domain package.
package views

import (
	"net/url"
	"time"

	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/limits"
	"github.com/kifpool/kifpool/internal/routes"
)

// Page is what every page needs besides its own data.
type Page struct {
	Lang     i18n.Lang
	TitleKey string
	CSRF     string
	Nonce    string
	User     *UserInfo
	// SwitchLangURL is the current page in the other language.
	SwitchLangURL string
	Now           time.Time
	// RefreshURL and RefreshSeconds make the page reload itself (pending
	// payments); works without JavaScript.
	RefreshURL     string
	RefreshSeconds int
	// Operator is who runs the instance and how to reach support (the
	// footer; failure, review and error pages).
	Operator config.Operator
}

// UserInfo is the signed-in user, as shown in the header.
type UserInfo struct {
	Email   string
	IsAdmin bool
	// IsMerchant: the header links to the merchant's page.
	IsMerchant bool
	// Unverified: the address is not confirmed yet (no one can send the
	// user money); the wallet and account pages say so.
	Unverified bool
}

// T translates key into the page's language.
func (p Page) T(key string, args ...any) string { return i18n.T(p.Lang, key, args...) }

// Tomans formats rials as tomans in the page's language.
func (p Page) Tomans(rials int64) string { return i18n.Tomans(p.Lang, rials) }

// Plus is the sign before a credit. In Persian it is followed by a
// right-to-left mark so that it stands before the number when read right
// to left, instead of after it.
func (p Page) Plus() string {
	if p.Lang.Dir() == "rtl" {
		return "+\u200f"
	}
	return "+"
}

// Signed is an amount of rials as tomans with its sign: + before a credit,
// − (the minus sign) before a debit, each standing before the number in
// either direction.
func (p Page) Signed(rials int64) string {
	if rials >= 0 {
		return p.Plus() + p.Tomans(rials)
	}
	minus := "\u2212"
	if p.Lang.Dir() == "rtl" {
		minus += "\u200f"
	}
	return minus + p.Tomans(-rials)
}

// TomansDigits is an amount in tomans as a person types it: grouped, in
// the page's digits, without the unit.
func (p Page) TomansDigits(rials int64) string { return i18n.TomansNumber(p.Lang, rials) }

// Rials formats rials with their unit.
func (p Page) Rials(rials int64) string { return i18n.Rials(p.Lang, rials) }

// Num writes an integer in the page's digits without grouping.
func (p Page) Num(n int64) string { return i18n.Digits(p.Lang, itoa(n)) }

// Digits writes the ASCII digits of s in the page's digits (a masked card
// number, a code).
func (p Page) Digits(s string) string { return i18n.Digits(p.Lang, s) }

// JalaliToday is today's Jalali date in the page's digits, the example
// the console's date fields show.
func (p Page) JalaliToday() string { return i18n.JalaliDate(p.Lang, p.Now) }

// DateTime formats a time in the page's calendar.
func (p Page) DateTime(t time.Time) string { return i18n.DateTime(p.Lang, t) }

// Relative says how long ago t was.
func (p Page) Relative(t time.Time) string { return i18n.Relative(p.Lang, t, p.Now) }

// Until says how long until t, a time to come ("in 5 min"), relative to
// the page's now.
func (p Page) Until(t time.Time) string { return i18n.Until(p.Lang, t, p.Now) }

// AuthForm is the sign-in or sign-up form.
type AuthForm struct {
	Email     string
	ErrorKey  string // message key of the error, if any
	ErrorArgs []any  // its arguments
	// ErrorField is the field at fault ("password"; "" the address, or
	// the pair): it is marked invalid and takes the focus.
	ErrorField string
	Next       string // where to go after signing in (a local path)
	Notice     string // message key of a notice above the form
}

// AccountView is the account page.
type AccountView struct {
	Email    string
	Sessions int64  // live sessions (signed-in browsers)
	Notice   string // message key of the last action's result
	// NoticeArgs are the notice's arguments.
	NoticeArgs []any
	// Receipts: receipts by e-mail are on.
	Receipts bool
	// Name is the display name (as typed, when NameErrorKey says why it
	// was refused).
	Name         string
	NameErrorKey string
	// SignOutErrorKey is why "sign out everywhere" was refused (an
	// admin's fresh second factor).
	SignOutErrorKey  string
	SignOutErrorArgs []any
}

// VerifyView is the page of a link that confirms an address.
type VerifyView struct {
	Token string // the link's secret, posted back by its form
	Email string
	// SignInURL, when set, is where this signed-out browser signs in
	// to the link's account first (back to the link after).
	SignInURL string
	// OtherAccount: this browser is signed in to another account.
	OtherAccount bool
}

// TopUpForm is the top-up form.
type TopUpForm struct {
	Amount      string // as typed
	Token       string
	ErrorKey    string
	ErrorArgs   []any
	MinRials    int64
	MaxRials    int64
	QuickTomans []int64
	// Left is what the daily and balance limits still allow today.
	Left limits.Left
	// Gateways are the gateways the payer may choose from (the radio
	// group `gateway` is shown when there is more than one), in the
	// operator's order; Gateway is the one selected.
	Gateways []GatewayChoice
	Gateway  string
}

// GatewayChoice is one gateway on the top-up form.
type GatewayChoice struct {
	Name  string // the driver's name: the radio's value
	Label string // for people
	// Healthy: its breaker is closed (one that is not is offered with a
	// note, and a top-up chosen there goes to the next healthy one).
	Healthy bool
}

// HistoryRow is one ledger transaction on the wallet page: the signed
// amount it moved on the wallet and the balance after it.
type HistoryRow struct {
	AmountRials   int64
	BalanceAfter  int64
	Kind          string
	CreatedAt     time.Time
	TopUpPublicID string
	RefID         int64
	Note          string
	// A transfer's row: its id, the other person, and whether this wallet
	// sent it ("to …") or received it ("from …").
	TransferID string
	Who        string
	Sent       bool
	// WithdrawalPublicID, BankCode and Last4 name a withdrawal's line
	// (and its return): "to your account at {bank} …1234".
	WithdrawalPublicID string
	BankCode, Last4    string
	// ChargeID and Merchant name a charge's line (paid, captured, or
	// refunded: Refund): "paid to {merchant}", "refund from {merchant}".
	ChargeID string
	Merchant string
	Refund   bool
}

// WalletView is the wallet page.
type WalletView struct {
	// Open are the user's payments whose outcome is not known yet.
	Open []OpenTopUpRow
	// BalanceRials is the posted balance; HeldRials what holds reserve of
	// it; AvailableRials what may be spent.
	BalanceRials   int64
	HeldRials      int64
	AvailableRials int64
	Rows           []HistoryRow
	NextCursor     int64
	HasNewer       bool
	// Merchant: the user is a merchant (a link to their shop's page).
	Merchant bool
}

// OpenTopUpRow is a payment still in progress, on the wallet page.
type OpenTopUpRow struct {
	PublicID    string
	AmountRials int64
	Status      string
	CreatedAt   time.Time
}

// TopUpView is one payment as its owner (or the payer returning from
// the bank) sees it.
type TopUpView struct {
	PublicID      string
	AmountRials   int64
	Status        string
	RefID         int64
	CardPANMasked string
	CreatedAt     time.Time
	ResolvedAt    *time.Time
	// FailureCause says why a failed payment failed ("result.failed." +
	// cause is its sentence); TryAgainURL is the form with its amount.
	FailureCause string
	TryAgainURL  string
	// OtherGatewayURL, with several gateways, is a new attempt with the
	// same amount at another gateway than the failed payment's.
	OtherGatewayURL string
	// CheckoutURL, on a credited top-up's page, is the checkout the payer
	// left to top up its difference: "continue to checkout".
	CheckoutURL string
	// ReturnURL re-checks the payment (pending pages refresh to it).
	ReturnURL string
	// RefreshSeconds > 0 makes the page reload itself.
	RefreshSeconds int
	// Neutral: the viewer is not the payer; only the status is shown.
	Neutral bool
	// BankURL, when set, is the bank's page of a payment the payer has not
	// paid yet (it is still open there): "back to the bank's page", and
	// "I won't pay this one" (Abandon).
	BankURL string
	// BankForm, for a gateway reached only by POST (Mellat), is the form
	// that takes the payer back to the bank's page instead of BankURL.
	BankForm *ToBankView
	// ToCardRials and ToCardPendingRials are what of a credited top-up
	// went back to its card, and what is on its way there (its payer's
	// receipt only).
	ToCardRials, ToCardPendingRials int64
	// Dismissed: the payer said they will not pay it; the bank has not
	// said it failed yet.
	Dismissed bool
	// Reversing: the bank verified the payment but it cannot be credited,
	// and the bank is asked to return it to the card (pending to the
	// payer, its page says the money goes back to the card).
	Reversing bool
	// ReversingUnsettled: reversing because the bank verified the payment
	// but refused to settle it (Mellat): the bank may yet answer that it
	// is settled after all, and then it is credited; its page says either
	// may happen, not that the money surely goes back to the card.
	ReversingUnsettled bool
}

// Unpaid reports whether the payment is still open at the bank and the
// payer never came back: the page offers the way back to the bank's page
// and "I won't pay this one".
func (v TopUpView) Unpaid() bool { return v.BankURL != "" || v.BankForm != nil }

// Cancelled reports whether the payer said they will not pay a payment
// the bank still holds open: the page says they cancelled it (and that it
// is credited all the same if the bank says it was paid), not "in
// progress".
func (v TopUpView) Cancelled() bool { return v.Dismissed && StatusClass(v.Status) == "pending" }

// ReceiptTitle is the heading (and the window's title) of the payment's
// page for its owner.
func (v TopUpView) ReceiptTitle() string {
	if v.Cancelled() {
		return "unpaid.cancelled_title"
	}
	return ReceiptTitleKey(v.Status)
}

// StatusKey is the message key of the payment's status in its details.
func (v TopUpView) StatusKey() string {
	if v.Cancelled() {
		return "status.dismissed"
	}
	if v.ReversingUnsettled {
		return "status.pending_verification"
	}
	if v.Reversing {
		return "status.reversing"
	}
	return "status." + v.Status
}

func itoa(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// ShortRef is a payment's reference as people read, say and type it: the
// first 12 characters of its public id (60 random bits), upper case, in
// groups of four ("JIWF-NQZH-KKEU"). The full id stays in the page's URL.
func ShortRef(publicID string) string { return i18n.ShortRef(publicID) }

// signInAction keeps the page to return to through the sign-in form.
func signInAction(next string) string {
	if next == "" {
		return routes.SignIn
	}
	return routes.SignIn + "?next=" + url.QueryEscape(next)
}
