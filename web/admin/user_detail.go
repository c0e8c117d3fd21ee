package admin

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// userDetail is one user: wallet, ledger and payments.
func (h *handlers) userDetail(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	u, err := h.People.User(ctx, id)
	if errors.Is(err, people.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := adminview.UserDetailView{User: userRow(u), PaymentsURL: routes.AdminPayments + "?q=" + url.QueryEscape(u.Email)}
	if u.WalletID != 0 {
		entries, err := h.People.Ledger(ctx, u.WalletID, 50)
		if err != nil {
			return err
		}
		for _, e := range entries {
			v.Ledger = append(v.Ledger, adminview.LedgerRow{AmountRials: e.AmountRials, BalanceAfter: e.BalanceAfter, Kind: e.Kind,
				PaymentPublicID: e.PaymentPublicID, CreatedAt: e.CreatedAt})
		}
	}
	rows, _, err := h.Reads.Payments(ctx, paymentread.Filter{UserID: u.ID}, nil, 50)
	if err != nil {
		return err
	}
	for _, r := range rows {
		v.Payments = append(v.Payments, h.paymentRow(h.Lang(c), r))
	}
	return h.Render(c, fiber.StatusOK, adminview.UserDetail(h.Page(c, "admin.users.title"), v))
}
