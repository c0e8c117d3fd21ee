package i18n

// Text of making a user a merchant: the admin's user page and the audit
// labels. Every key must exist in both languages.
var merchantAdminFA = map[string]string{
	"admin.action.merchant":            "فروشنده کردن کاربر (یا تغییر نام فروشنده)",
	"admin.action.cli_merchant":        "فروشنده کردن کاربر (خط فرمان)",
	"admin.merchant.title":             "فروشنده",
	"admin.merchant.none":              "این کاربر فروشنده نیست.",
	"admin.merchant.name":              "نام نمایشی فروشنده",
	"admin.merchant.balance":           "موجودی فروشنده",
	"admin.merchant.make":              "فروشنده شود",
	"admin.merchant.rename":            "تغییر نام",
	"admin.merchant.done":              "انجام شد: این کاربر فروشنده است.",
	"admin.merchant.error_own":         "حساب خودتان را مدیر دیگری فروشنده می‌کند.",
	"admin.merchant.error_name":        "نام نمایشی ۱ تا ۱۰۰ کاراکتر است، بی کاراکتر کنترلی یا نامرئی.",
	"admin.merchant.error_unconfirmed": "این کاربر هنوز ایمیل خود را تأیید نکرده است: حساب فروشنده باید از آنِ صاحب همین ایمیل باشد. از او بخواهید پیوند تأیید را باز کند یا رمز عبور را بازنشانی کند.",
}

var merchantAdminEN = map[string]string{
	"admin.action.merchant":            "made a user a merchant (or renamed one)",
	"admin.action.cli_merchant":        "made a user a merchant (command line)",
	"admin.merchant.title":             "Merchant",
	"admin.merchant.none":              "This user is not a merchant.",
	"admin.merchant.name":              "Merchant's display name",
	"admin.merchant.balance":           "Merchant balance",
	"admin.merchant.make":              "Make a merchant",
	"admin.merchant.rename":            "Rename",
	"admin.merchant.done":              "Done: this user is a merchant.",
	"admin.merchant.error_own":         "Your own account is made a merchant by another admin.",
	"admin.merchant.error_name":        "A display name is 1 to 100 characters, without control or invisible characters.",
	"admin.merchant.error_unconfirmed": "This user has not confirmed the e-mail address yet: a merchant's account must be the address owner's. Ask them to open the confirmation link, or to reset the password.",
}
