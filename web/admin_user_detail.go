package web

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/console"
	"github.com/kifpool/kifpool/internal/paymentread"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// adminUser is one user: wallet, ledger and payments.
func (s *Server) adminUser(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	u, err := s.Console.User(ctx, id)
	if errors.Is(err, console.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := views.UserDetailView{User: adminUserRow(u), PaymentsURL: routes.AdminPayments + "?q=" + urlQueryEscape(u.Email)}
	if u.WalletID != 0 {
		entries, err := s.Console.Ledger(ctx, u.WalletID, 50)
		if err != nil {
			return err
		}
		for _, e := range entries {
			v.Ledger = append(v.Ledger, views.LedgerRow{AmountRials: e.AmountRials, BalanceAfter: e.BalanceAfter, Kind: e.Kind,
				PaymentPublicID: e.PaymentPublicID, CreatedAt: e.CreatedAt})
		}
	}
	rows, _, err := s.Reads.Payments(ctx, paymentread.Filter{UserID: u.ID}, nil, 50)
	if err != nil {
		return err
	}
	for _, r := range rows {
		v.Payments = append(v.Payments, adminListRow(s, r))
	}
	return render(c, fiber.StatusOK, views.UserDetail(s.page(c, "console.users.title"), v))
}
