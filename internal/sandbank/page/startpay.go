package page

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/sandbank/book"
)

// startPay is the payment page's view of an IN_BANK payment; action(name)
// is the address of a button ("pay", "cancel", "pay-close").
func (p *Pages) startPay(meta pageMeta, v book.View, action func(name string) string) startPayView {
	lang := meta.Lang
	left := max(int64((v.ExpiresAt.Sub(p.book.Now())+time.Second-1)/time.Second), 0)
	meta.Title = T(lang, "pay.title")
	return startPayView{
		pageMeta:       meta,
		Authority:      v.Authority,
		Description:    description(lang, v),
		OrderID:        shortOrderID(v.OrderID),
		FullOrderID:    v.OrderID,
		AmountRials:    amountRials(lang, v.Amount),
		AmountTomans:   T(lang, "amount_tomans", "amount", i18n.TomansNumber(lang, v.Amount)),
		SecondsLeft:    left,
		TimeLeft:       i18n.Digits(lang, fmt.Sprintf("%d:%02d", left/60, left%60)),
		Card:           i18n.Digits(lang, groupCard(book.MaskPAN(v.Card))),
		ExpiryMonth:    i18n.Digits(lang, "12"),
		ExpiryYear:     i18n.Digits(lang, "09"),
		Captcha:        i18n.Digits(lang, captchaOf(v.Authority)),
		PayAction:      action("pay"),
		CancelAction:   action("cancel"),
		PayCloseAction: action("pay-close"),
	}
}

// description is what the payment page says is bought: the merchant's
// description, or, for a protocol that carries none (SEP's token request
// has no such field), what is paid to whom.
func description(l i18n.Lang, v book.View) string {
	if v.Description != "" {
		return v.Description
	}
	return T(l, "summary", "amount", amountRials(l, v.Amount), "merchant", i18n.Digits(l, v.MerchantID))
}

// groupCard writes a 16-character card number in groups of four.
func groupCard(card string) string {
	if len(card) != 16 {
		return card
	}
	return card[0:4] + " " + card[4:8] + " " + card[8:12] + " " + card[12:16]
}

// captchaOf is a stable five-digit decorative "security code".
func captchaOf(authority string) string {
	h := uint32(2166136261)
	for i := 0; i < len(authority); i++ {
		h = (h ^ uint32(authority[i])) * 16777619
	}
	return strconv.FormatUint(uint64(10000+h%90000), 10)
}
