package i18n

// Text of card refunds: the admin console's "refund to card", its audit
// labels, the payer's mail. Every key must exist in both languages.
var cardRefundFA = map[string]string{
	"admin.action.card_refund":         "بازگرداندن شارژ به کارت",
	"admin.action.card_refund_recheck": "پرسش دوباره از بانک دربارهٔ بازگشت به کارت",
	"admin.action.card_refund_confirm": "بستن بازگشت به کارت: انجام شده در بانک",
	"admin.action.card_refund_close":   "بستن بازگشت به کارت: انجام نشده",
	"mail.cardrefund.subject":          "{amount} به کارت شما برگشت داده شد",
	"mail.cardrefund.intro":            "{amount} از شارژ {ref} از کیف‌پول شما برداشته و به کارتی که با آن پرداخت کرده بودید برگشت داده شد.",
	"mail.cardrefund.when":             "زمان",
	"mail.cardrefund.link":             "دیدن شارژ",
	"mail.cardrefund.bank":             "بانک مبلغ را به همان کارت برمی‌گرداند؛ اینکه چه زمانی در گردش کارت دیده شود به بانک صادرکنندهٔ کارت بستگی دارد.",
}

var cardRefundEN = map[string]string{
	"admin.action.card_refund":         "refunded a top-up to the card",
	"admin.action.card_refund_recheck": "asked the bank again about a refund to the card",
	"admin.action.card_refund_confirm": "closed a refund to the card as made at the bank",
	"admin.action.card_refund_close":   "closed a refund to the card as not made",
	"mail.cardrefund.subject":          "{amount} refunded to your card",
	"mail.cardrefund.intro":            "{amount} of your top-up {ref} was taken from your wallet and given back to the card you paid with.",
	"mail.cardrefund.when":             "When",
	"mail.cardrefund.link":             "See the top-up",
	"mail.cardrefund.bank":             "The bank returns it to that same card; when it shows on the card's statement depends on the card's bank.",
}
