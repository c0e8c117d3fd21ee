package admin

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	adminview "github.com/kifpool/kifpool/views/admin"
)

// userList finds users by e-mail.
func (h *handlers) userList(c *fiber.Ctx) error {
	q := strings.TrimSpace(c.Query("q"))
	if len([]rune(q)) > 200 {
		return fiber.NewError(fiber.StatusBadRequest, "query too long")
	}
	users, err := h.People.Users(c.UserContext(), q, 100)
	if err != nil {
		return err
	}
	v := adminview.UserListView{Query: q}
	for _, u := range users {
		v.Users = append(v.Users, userRow(u))
	}
	return h.Render(c, fiber.StatusOK, adminview.UserList(h.Page(c, "admin.users.title"), v))
}
