package admin

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/routes"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// auditLog is the audit log, filterable by admin (e-mail) and payment
// (public id), newest first. Read-only: no route changes it.
func (h *handlers) auditLog(c *fiber.Ctx) error {
	q := audit.Query{AdminEmail: strings.TrimSpace(c.Query("admin")), TopUpPublicID: strings.TrimSpace(c.Query("payment")), Limit: 100}
	if len(q.AdminEmail) > 254 || len(q.TopUpPublicID) > 24 {
		return fiber.NewError(fiber.StatusBadRequest, "bad filter")
	}
	if b := c.Query("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return fiber.NewError(fiber.StatusBadRequest, "bad cursor")
		}
		q.BeforeID = n
	}
	rows, err := h.Audit.List(c.UserContext(), q)
	if err != nil {
		return err
	}
	v := adminview.AuditView{Admin: q.AdminEmail, TopUp: q.TopUpPublicID, Rows: auditRows(rows)}
	if len(rows) == q.Limit {
		v.NextURL = routes.AdminAudit + "?" + queryWith(c, "before", strconv.FormatInt(rows[len(rows)-1].ID, 10))
	}
	return h.Render(c, fiber.StatusOK, adminview.Audit(h.Page(c, "admin.audit.title"), v))
}
