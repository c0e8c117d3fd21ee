package withdraw

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// bankAccounts is the person's accounts and the form that adds one.
func (h *handlers) bankAccounts(c *fiber.Ctx) error {
	v, err := h.accountsView(c)
	if err != nil {
		return err
	}
	switch c.Query("done") {
	case "verified":
		v.Notice = "bankaccounts.added_verified"
	case "pending":
		v.Notice = "bankaccounts.added_pending"
	case "exists":
		v.Notice = "bankaccounts.exists"
	}
	return h.Render(c, fiber.StatusOK, views.BankAccounts(h.Page(c, "bankaccounts.title"), v))
}

func (h *handlers) accountsView(c *fiber.Ctx) (views.BankAccountsView, error) {
	u := h.User(c)
	var v views.BankAccountsView
	accts, err := h.BankAccounts.List(c.UserContext(), u.ID)
	if err != nil {
		return v, err
	}
	for _, a := range accts {
		v.Accounts = append(v.Accounts, accountRow(a))
	}
	nc, ok, err := h.BankAccounts.NationalCode(c.UserContext(), u.ID)
	if err != nil {
		return v, err
	}
	if ok {
		v.NationalCode = nc.Masked()
	}
	return v, nil
}

// addBankAccount checks and adds an account, then says how it went on
// the accounts page (303); a refusal shows the form again with its one
// sentence (422), what was typed and the field at fault, and changes
// nothing.
func (h *handlers) addBankAccount(c *fiber.Ctx) error {
	u := h.User(c)
	typedIBAN, typedNC := h.FormValue(c, "iban"), h.FormValue(c, "national_code")
	// Not while the address is unconfirmed: the account may be a
	// stranger's who signed up with someone else's address, and a bank
	// account (with its national code, one per person) would outlast
	// the owner's taking it back by a password reset.
	if !u.Verified() {
		return h.bankAccountUnconfirmed(c, typedIBAN, typedNC)
	}
	nc := typedNC
	if nc == "" {
		// The national code on file, when the form did not ask for it.
		if onFile, ok, err := h.BankAccounts.NationalCode(c.UserContext(), u.ID); err != nil {
			return err
		} else if ok {
			nc = string(onFile)
		}
	}
	added, err := h.BankAccounts.Add(c.UserContext(), u.ID, typedIBAN, nc)
	if errors.Is(err, owner.ErrUnconfirmed) {
		return h.bankAccountUnconfirmed(c, typedIBAN, typedNC) // the service's own refusal
	}
	if key, field, ok := bankAccountError(err); ok {
		status := fiber.StatusUnprocessableEntity
		if errors.Is(err, bankaccount.ErrTooManyInquiries) {
			status = fiber.StatusTooManyRequests
			c.Set(fiber.HeaderRetryAfter, "86400")
		}
		return h.refuseBankAccount(c, status, key, field, typedIBAN, typedNC)
	}
	if err != nil {
		return err
	}
	done := "pending"
	switch {
	case added.Existed:
		done = "exists"
	case added.Account.Verified():
		done = "verified"
	}
	return c.Redirect(routes.BankAccounts+"?done="+done, fiber.StatusSeeOther)
}

// bankAccountUnconfirmed refuses a bank account to an account whose
// address is not confirmed (403, nothing written), keeping what was
// typed; it is about the account, no field.
func (h *handlers) bankAccountUnconfirmed(c *fiber.Ctx, typedIBAN, typedNC string) error {
	return h.refuseBankAccount(c, fiber.StatusForbidden, "verify.needed", "", typedIBAN, typedNC)
}

// refuseBankAccount shows the form again with the refusal's sentence,
// the field at fault (views.BankAccountsView.ErrorField; "" for the
// whole form) and what was typed.
func (h *handlers) refuseBankAccount(c *fiber.Ctx, status int, key, field, typedIBAN, typedNC string) error {
	v, err := h.accountsView(c)
	if err != nil {
		return err
	}
	v.IBAN, v.ErrorKey, v.ErrorField = typedIBAN, key, field
	if v.NationalCode == "" {
		v.NationalCodeTyped = typedNC
	} else if field == "national_code" {
		v.ErrorField = "" // the code on file: the form has no such field
	}
	return h.Render(c, status, views.BankAccounts(h.Page(c, "bankaccounts.title"), v))
}
