package admin

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topupread"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// userDetail is one user: wallet, ledger, payments, and their merchant
// side.
func (h *handlers) userDetail(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return fiber.ErrNotFound
	}
	notice := ""
	if c.Query("done") == "merchant" {
		notice = "admin.merchant.done"
	}
	return h.renderUser(c, id, fiber.StatusOK, notice, "", "")
}

// renderUser renders user id's page with status, a notice or an error
// (key, args), and name typed in the merchant form.
func (h *handlers) renderUser(c *fiber.Ctx, id int64, status int, notice, errKey, name string, errArgs ...any) error {
	ctx := c.UserContext()
	// One user (and their balance) from the primary, as one top-up is:
	// the page an admin acts on and comes back to; their lists below
	// read the read pool.
	u, err := h.People.Fresh().User(ctx, id)
	if errors.Is(err, people.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := adminview.UserDetailView{User: userRow(u), TopUpsURL: routes.AdminTopUps + "?q=" + url.QueryEscape(u.Email),
		Notice: notice, ErrorKey: errKey, ErrorArgs: errArgs,
		Merchant: adminview.UserMerchantView{Action: routes.AdminUserMerchant(u.ID), Name: name, CodeInvalid: errKey == "fresh2fa.wrong"}}
	if h.Charges != nil {
		m, err := h.Charges.Merchant(ctx, u.ID)
		switch {
		case err == nil:
			v.Merchant.IsMerchant, v.Merchant.DisplayName, v.Merchant.BalanceRials = true, m.DisplayName, m.PostedRials
			if v.Merchant.Name == "" {
				v.Merchant.Name = m.DisplayName
			}
		case !errors.Is(err, charge.ErrNotMerchant):
			return err
		}
	}
	if u.WalletID != 0 {
		entries, err := h.People.Ledger(ctx, u.WalletID, 50)
		if err != nil {
			return err
		}
		for _, e := range entries {
			v.Ledger = append(v.Ledger, adminview.LedgerRow{AmountRials: e.AmountRials, BalanceAfter: e.BalanceAfter, Kind: e.Kind,
				TopUpPublicID: e.TopUpPublicID, CreatedAt: e.CreatedAt})
		}
	}
	wds, _, err := h.Withdrawals.List(ctx, u.ID, 0, 20)
	if err != nil {
		return err
	}
	for _, w := range wds {
		v.Withdrawals = append(v.Withdrawals, withdrawalRow(w))
	}
	rows, _, err := h.Reads.List(ctx, topupread.Filter{UserID: u.ID}, nil, 50)
	if err != nil {
		return err
	}
	for _, r := range rows {
		v.TopUps = append(v.TopUps, h.topUpRow(h.Lang(c), r))
	}
	return h.Render(c, status, adminview.UserDetail(h.Page(c, "admin.users.title"), v))
}

// makeMerchant is POST /admin/users/{id}/merchant: the user becomes a
// merchant with the display name typed (or is renamed), after a fresh
// second factor; audited in the same transaction.
func (h *handlers) makeMerchant(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return fiber.ErrNotFound
	}
	name := h.FormValue(c, "display_name")
	// An unconfirmed address first, so that its refusal spends no code
	// (the write checks it again: charge.ErrAddressUnconfirmed).
	switch u, err := h.People.Fresh().User(c.UserContext(), id); {
	case errors.Is(err, people.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	case u.EmailVerifiedAt == nil:
		return h.renderUser(c, id, fiber.StatusUnprocessableEntity, "", "admin.merchant.error_unconfirmed", name)
	case u.ID == h.User(c).ID:
		return h.renderUser(c, id, fiber.StatusForbidden, "", "admin.merchant.error_own", name)
	case charge.CheckDisplayName(strings.TrimSpace(name)) != nil:
		return h.renderUser(c, id, fiber.StatusUnprocessableEntity, "", "admin.merchant.error_name", name)
	}
	if status, key, args, err := h.checkFresh(c); err != nil || key != "" {
		if err != nil {
			return err
		}
		return h.renderUser(c, id, status, "", key, name, args...)
	}
	admin := h.User(c).ID
	_, _, err = h.Charges.MakeMerchant(c.UserContext(), id, name, &admin)
	switch {
	case errors.Is(err, charge.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, charge.ErrOwnMerchant):
		return h.renderUser(c, id, fiber.StatusForbidden, "", "admin.merchant.error_own", name)
	case errors.Is(err, charge.ErrBadName):
		return h.renderUser(c, id, fiber.StatusUnprocessableEntity, "", "admin.merchant.error_name", name)
	case errors.Is(err, charge.ErrAddressUnconfirmed):
		return h.renderUser(c, id, fiber.StatusUnprocessableEntity, "", "admin.merchant.error_unconfirmed", name)
	case err != nil:
		return err
	}
	return c.Redirect(routes.AdminUser(id)+"?done=merchant", fiber.StatusSeeOther)
}
