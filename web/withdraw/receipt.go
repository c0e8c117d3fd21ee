package withdraw

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/views"
)

// receipt is a withdrawal's page for its owner (404 for anyone else's).
func (h *handlers) receipt(c *fiber.Ctx) error {
	w, err := h.Withdrawals.Get(c.UserContext(), h.User(c).ID, c.Params("id"))
	if errors.Is(err, withdrawal.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := withdrawalView(w)
	if c.Query("done") == "cancelled" && w.Status == withdrawal.StatusCancelled {
		v.Notice = "withdrawal.cancelled"
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return h.Render(c, fiber.StatusOK, views.WithdrawalReceipt(h.Page(c, "withdrawal.title"), v))
}

// cancel cancels a withdrawal not yet sent (its amount released), then
// shows its receipt (303); once sent, the receipt says it cannot be
// (409).
func (h *handlers) cancel(c *fiber.Ctx) error {
	w, err := h.Withdrawals.Cancel(c.UserContext(), h.User(c).ID, c.Params("id"))
	switch {
	case errors.Is(err, withdrawal.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, withdrawal.ErrNotCancellable) && w.Status.Ended():
		// Ended meanwhile (rejected, failed, returned): its
		// receipt says how, and "it was sent to the bank" would not.
		return c.Redirect(routes.Withdrawal(w.PublicID), fiber.StatusSeeOther)
	case errors.Is(err, withdrawal.ErrNotCancellable):
		v := withdrawalView(w)
		v.ErrorKey = "withdrawal.not_cancellable"
		return h.Render(c, fiber.StatusConflict, views.WithdrawalReceipt(h.Page(c, "withdrawal.title"), v))
	case err != nil:
		return err
	}
	return c.Redirect(routes.Withdrawal(w.PublicID)+"?done=cancelled", fiber.StatusSeeOther)
}
