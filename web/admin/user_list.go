package admin

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/people"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// userList finds users by e-mail.
func (h *handlers) userList(c *fiber.Ctx) error {
	q := strings.TrimSpace(c.Query("q"))
	if len([]rune(q)) > 200 {
		return fiber.NewError(fiber.StatusBadRequest, "query too long")
	}
	v := adminview.UserListView{Query: q}
	users, err := h.People.Users(c.UserContext(), q, 100)
	if errors.Is(err, people.ErrSearchTooShort) {
		v.ErrorKey = "admin.error.fragment_short"
		return h.Render(c, fiber.StatusBadRequest, adminview.UserList(h.Page(c, "admin.users.title"), v))
	}
	if err != nil {
		return err
	}
	for _, u := range users {
		v.Users = append(v.Users, userRow(u))
	}
	return h.Render(c, fiber.StatusOK, adminview.UserList(h.Page(c, "admin.users.title"), v))
}
