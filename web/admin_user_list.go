package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/views"
)

// adminUsers finds users by e-mail.
func (s *Server) adminUsers(c *fiber.Ctx) error {
	q := strings.TrimSpace(c.Query("q"))
	if len([]rune(q)) > 200 {
		return fiber.NewError(fiber.StatusBadRequest, "query too long")
	}
	users, err := s.Console.Users(c.UserContext(), q, 100)
	if err != nil {
		return err
	}
	v := views.UserListView{Query: q}
	for _, u := range users {
		v.Users = append(v.Users, adminUserRow(u))
	}
	return render(c, fiber.StatusOK, views.UserList(s.page(c, "console.users.title"), v))
}
