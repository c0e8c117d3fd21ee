package admin

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topupread"
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
	v := adminview.UserDetailView{User: userRow(u), TopUpsURL: routes.AdminTopUps + "?q=" + url.QueryEscape(u.Email)}
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
	rows, _, err := h.Reads.List(ctx, topupread.Filter{UserID: u.ID}, nil, 50)
	if err != nil {
		return err
	}
	for _, r := range rows {
		v.TopUps = append(v.TopUps, h.topUpRow(h.Lang(c), r))
	}
	return h.Render(c, fiber.StatusOK, adminview.UserDetail(h.Page(c, "admin.users.title"), v))
}
