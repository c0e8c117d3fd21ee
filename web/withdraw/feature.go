// Package withdraw is the web app's pages for cash-out: the person's bank
// accounts (bankaccounts.go), the withdrawal form with its confirmation
// and arrival estimate (withdraw.go), and a withdrawal's receipt and
// cancel (receipt.go). Its pages are views.
//
// Like every feature of the web app, internal/server builds its Deps and
// web registers it in web's order, handing it seam.App. It never imports
// web.
package withdraw

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// Deps are the cash-out pages' dependencies.
type Deps struct {
	Withdrawals  *withdrawal.Service
	BankAccounts *bankaccount.Service
	Wallets      *wallet.Service
}

type handlers struct {
	Deps
	seam.App
}

// Register adds the cash-out pages' routes to r.
func (d Deps) Register(r fiber.Router, app seam.App) {
	h := &handlers{Deps: d, App: app}
	r.Get(routes.BankAccounts, h.RequireUser, h.bankAccounts)
	r.Post(routes.BankAccounts, h.RequireUser, h.addBankAccount)
	r.Get(routes.Withdraw, h.RequireUser, h.withdrawForm)
	r.Post(routes.Withdraw, h.RequireUser, h.withdraw)
	r.Get(routes.WithdrawalPattern, h.RequireUser, h.receipt)
	r.Post(routes.WithdrawalCancelPattern, h.RequireUser, h.cancel)
}

// accountRow is an account as the pages show it.
func accountRow(a bankaccount.Account) views.BankAccountRow {
	return views.BankAccountRow{ID: a.ID, BankCode: a.BankCode, Grouped: iban.Sheba(a.Sheba).Grouped(), Last4: a.Last4(), Status: string(a.Status)}
}

// bankAccountError is the one sentence of a refused account and the
// field at fault: "sheba", "national_code", or "" for a refusal about
// the whole form or the account (a mismatch, a rejected Sheba, too many
// accounts or checks).
func bankAccountError(err error) (key, field string, ok bool) {
	for _, e := range []struct {
		err        error
		key, field string
	}{
		{iban.ErrEmpty, "bankaccounts.error_iban_empty", "sheba"}, {iban.ErrFormat, "bankaccounts.error_iban_format", "sheba"},
		{iban.ErrChecksum, "bankaccounts.error_iban_checksum", "sheba"}, {iban.ErrUnknownBank, "bankaccounts.error_iban_bank", "sheba"},
		{iban.ErrNationalCodeFormat, "bankaccounts.error_nc_format", "national_code"},
		{iban.ErrNationalCodeCheck, "bankaccounts.error_nc_check", "national_code"},
		{bankaccount.ErrNationalCodeDiffers, "bankaccounts.error_nc_differs", "national_code"},
		{bankaccount.ErrMismatch, "bankaccounts.error_mismatch", ""},
		{bankaccount.ErrRejected, "bankaccounts.error_rejected", ""}, {bankaccount.ErrTooMany, "bankaccounts.error_too_many", ""},
		{bankaccount.ErrTooManyInquiries, "bankaccounts.error_checks", ""},
	} {
		if errors.Is(err, e.err) {
			return e.key, e.field, true
		}
	}
	return "", "", false
}

// amountErrorKey is the one sentence of an amount the rules refuse.
func amountErrorKey(err error, minRials, maxRials int64) (string, []any, bool) {
	switch {
	case errors.Is(err, money.ErrEmpty):
		return "topup.error_empty", nil, true
	case errors.Is(err, money.ErrTooLong), errors.Is(err, money.ErrTooLarge):
		return "topup.error_max", []any{"max", i18n.Money(maxRials)}, true
	case errors.Is(err, money.ErrNotPositive):
		return "topup.error_positive", nil, true
	case errors.Is(err, money.ErrNegative):
		return "topup.error_negative", nil, true
	case errors.Is(err, money.ErrDecimal):
		return "topup.error_decimal", nil, true
	case errors.Is(err, money.ErrTooSmall):
		return "topup.error_min", []any{"min", i18n.Money(minRials)}, true
	case errors.Is(err, money.ErrInvalid), errors.Is(err, money.ErrNotWholeTomans):
		return "topup.error_invalid", nil, true
	}
	return "", nil, false
}
