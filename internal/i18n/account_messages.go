package i18n

// Text of the account pages: password change and reset, e-mail, receipts
// (keys start with "password.", "mail.", "receipts."). Every key must
// exist in both languages.
var accountFA = map[string]string{ // #nosec G101 -- UI text, not credentials
	"password.change_title":  "تغییر رمز عبور",
	"password.change_link":   "تغییر رمز عبور",
	"password.change_intro":  "پس از تغییر رمز، از همهٔ مرورگرها و دستگاه‌های دیگر خارج می‌شوید و همهٔ توکن‌های API شما باطل می‌شوند. همین مرورگر وارد می‌ماند.",
	"password.current":       "رمز عبور فعلی",
	"password.new":           "رمز عبور تازه",
	"password.change_submit": "تغییر رمز",
	"password.wrong_current": "رمز عبور فعلی درست نیست.",
	"password.same":          "رمز تازه با رمز فعلی یکی است. رمز دیگری انتخاب کنید.",
	"password.throttled":     "تلاش‌های ناموفق زیادی شده است. {seconds} ثانیه دیگر دوباره تلاش کنید.",
	"password.changed":       "رمز عبور تغییر کرد. از همهٔ مرورگرها و دستگاه‌های دیگر خارج شدید و همهٔ توکن‌های API شما باطل شد.",
	"tokens.password":        "رمز عبور شما",
	"tokens.password_hint":   "برای ساختن توکن، رمز عبور خود را دوباره وارد کنید.",
	"tokens.error_password":  "رمز عبور درست نیست؛ توکنی ساخته نشد.",
	"tokens.error_throttled": "تلاش‌های ناموفق زیادی شده است. {seconds} ثانیه دیگر دوباره تلاش کنید.",
	"tokens.error_too_many":  "حداکثر {max} توکن فعال می‌توانید داشته باشید. پیش از ساختن توکن تازه، یکی را باطل کنید.",
}

var accountEN = map[string]string{ // #nosec G101 -- UI text, not credentials
	"password.change_title":  "Change password",
	"password.change_link":   "Change your password",
	"password.change_intro":  "Changing your password signs you out of every other browser and device and revokes every API token of yours. This browser stays signed in.",
	"password.current":       "Current password",
	"password.new":           "New password",
	"password.change_submit": "Change password",
	"password.wrong_current": "The current password is wrong.",
	"password.same":          "The new password is the current one. Choose another.",
	"password.throttled":     "Too many failed attempts. Try again in {seconds} seconds.",
	"password.changed":       "Your password was changed. Every other browser and device was signed out and every API token of yours was revoked.",
	"tokens.password":        "Your password",
	"tokens.password_hint":   "Type your password again to create a token.",
	"tokens.error_password":  "The password is wrong; no token was created.",
	"tokens.error_throttled": "Too many failed attempts. Try again in {seconds} seconds.",
	"tokens.error_too_many":  "You may hold at most {max} live tokens. Revoke one before creating another.",
}
