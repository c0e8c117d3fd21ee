package page

import (
	"strings"

	"github.com/kifpool/kifpool/internal/i18n"
)

// messages are the bank's page texts, Persian then English: the bank's own
// table, apart from the app's catalogue (internal/i18n), as a real bank's
// pages are not the shop's. Every key has both; a test checks it. It is
// never written.
var messages = map[string][2]string{
	"name":           {"بانک آزمایشی کیف‌پول", "Kifpool Sandbox Bank"},
	"gateway":        {"درگاه پرداخت اینترنتی", "Internet Payment Gateway"},
	"sandbox_notice": {"این یک درگاه آزمایشی است و هیچ پول واقعی جابه‌جا نمی‌شود.", "This is a test gateway: no real money moves."},
	"lang_switch":    {"English", "فارسی"},
	"footer":         {"بانک آزمایشی آفلاین کیف‌پول، فقط برای آزمایش: هیچ پول واقعی جابه‌جا نمی‌شود", "Kifpool's offline sandbox bank, for testing only: no real money moves"},

	"pay.title":     {"پرداخت", "Payment"},
	"invoice":       {"اطلاعات پذیرنده", "Merchant details"},
	"merchant":      {"پذیرنده", "Merchant"},
	"summary":       {"پرداخت {amount} به پذیرندهٔ شمارهٔ {merchant}", "Payment of {amount} to merchant no. {merchant}"},
	"description":   {"شرح خرید", "Description"},
	"order_id":      {"شمارهٔ سفارش", "Order number"},
	"authority":     {"شناسهٔ تراکنش", "Transaction ID"},
	"amount":        {"مبلغ قابل پرداخت", "Amount payable"},
	"amount_rials":  {"{amount} ریال", "{amount} rials"},
	"amount_tomans": {"معادل {amount} تومان", "({amount} tomans)"},
	"expires_in":    {"زمان باقی‌مانده برای پرداخت:", "Time left to pay:"},
	"expires_note":  {"وقتی زمان تمام شود، این پرداخت دیگر انجام نمی‌شود و مبلغی از کارت شما برداشت نمی‌شود؛ از سایت پذیرنده دوباره شروع کنید.", "When the time runs out, this payment can no longer be made and no money is taken; start again from the shop's site."},

	"card.title":       {"اطلاعات کارت", "Card details"},
	"card.number":      {"شمارهٔ کارت", "Card number"},
	"card.cvv2":        {"شمارهٔ شناسایی دوم (CVV۲)", "CVV2"},
	"card.expiry":      {"تاریخ انقضای کارت", "Expiry date"},
	"card.month":       {"ماه", "Month"},
	"card.year":        {"سال", "Year"},
	"card.expiry_hint": {"سال / ماه، همان‌طور که روی کارت چاپ شده است", "year / month, as printed on Iranian cards"},
	"card.captcha":     {"کد امنیتی", "Security code"},
	"card.pin2":        {"رمز دوم (رمز پویا)", "Second PIN (dynamic password)"},
	"card.email":       {"ایمیل (اختیاری)", "Email (optional)"},
	"card.test_note":   {"یک کارت آزمایشی از پیش وارد شده است؛ کافی است دکمهٔ پرداخت را بزنید.", "A test card is already filled in; just press Pay."},

	"button.pay":            {"پرداخت", "Pay"},
	"button.cancel":         {"انصراف", "Cancel"},
	"button.pay_close":      {"پرداخت و بستن پنجره", "Pay and close the window"},
	"button.pay_close_note": {"(آزمایشی: پرداخت بدون بازگشت به سایت پذیرنده)", "(test: pays without going back to the shop)"},

	"closed.title": {"پرداخت با موفقیت انجام شد", "Payment successful"},
	"closed.body":  {"اکنون می‌توانید این پنجره را ببندید.", "You may close this window now."},
	"closed.note":  {"در این حالت شما به سایت پذیرنده بازگردانده نمی‌شوید (آزمایش بازگشت گم‌شده).", "You are not sent back to the merchant in this mode (lost-callback test)."},

	"paid.title":      {"این تراکنش قبلاً پرداخت شده است", "This transaction has already been paid"},
	"paid.body":       {"پرداخت این تراکنش پیش‌تر انجام شده است و نمی‌توان دوباره آن را پرداخت کرد.", "This transaction was paid before and cannot be paid again."},
	"cancelled.title": {"این تراکنش لغو شده است", "This transaction was cancelled"},
	"cancelled.body":  {"پرداخت این تراکنش لغو شده است و دیگر قابل پرداخت نیست.", "The payment of this transaction was cancelled; it can no longer be paid."},
	"reversed.title":  {"این تراکنش برگشت خورده است", "This transaction was reversed"},
	"reversed.body":   {"مبلغ این تراکنش به کارت پرداخت‌کننده بازگردانده شده است.", "The amount of this transaction was returned to the payer's card."},
	"expired.title":   {"مهلت پرداخت به پایان رسیده است", "The payment session has expired"},
	"expired.body":    {"زمان مجاز برای پرداخت این تراکنش گذشته است. لطفاً از سایت پذیرنده دوباره اقدام کنید.", "The time allowed to pay this transaction has passed. Please start again from the merchant's site."},
	"not_found.title": {"تراکنش یافت نشد", "Transaction not found"},
	"not_found.body":  {"شناسهٔ تراکنش نامعتبر است یا چنین تراکنشی وجود ندارد. برای پرداخت، از سایت پذیرنده دوباره شروع کنید.", "The transaction ID is invalid or no such transaction exists. To pay, start again from the merchant's site."},
	"back":            {"بازگشت به سایت پذیرنده", "Return to the merchant's site"},
	"return.title":    {"بازگشت به سایت پذیرنده", "Returning to the merchant"},
	"return.body":     {"در حال بازگشت به سایت پذیرنده… اگر مرورگر شما خودبه‌خود ادامه نداد، دکمهٔ زیر را بزنید.", "Taking you back to the merchant's site… If your browser does not go on by itself, press the button below."},
}

// T is the text of key in language l, with {name} placeholders replaced by
// args given as name/value pairs. A missing key is written "[bank.key]",
// so that it shows (and a test fails on it).
func T(l i18n.Lang, key string, args ...string) string {
	m, ok := messages[key]
	if !ok {
		return "[bank." + key + "]"
	}
	msg := m[0]
	if l == i18n.EN {
		msg = m[1]
	}
	if len(args) == 0 {
		return msg
	}
	pairs := make([]string, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		pairs = append(pairs, "{"+args[i]+"}", args[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}

// Has reports whether the table has key.
func Has(key string) bool {
	_, ok := messages[key]
	return ok
}

// Keys are the table's keys, for tests.
func Keys() []string {
	out := make([]string, 0, len(messages))
	for k := range messages {
		out = append(out, k)
	}
	return out
}
