package web

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
)

// adminWebhooksPage lists every endpoint (failing first) with the queue's
// figures.
func (s *Server) adminWebhooksPage(c *fiber.Ctx) error {
	ctx := c.UserContext()
	all, err := s.Webhooks.All(ctx, 500)
	if err != nil {
		return err
	}
	st, err := s.Webhooks.Stats(ctx)
	if err != nil {
		return err
	}
	v := views.AdminWebhooksView{Pending: st.Pending, Failed: st.Failed, FailingEndpoints: st.FailingEndpoints,
		OldestAge: st.OldestAge.Round(time.Second).String()}
	if c.Query("done") == "disabled" {
		v.Notice = "webhooks.admin_disabled"
	}
	for _, e := range all {
		v.Endpoints = append(v.Endpoints, webhookRow(e.Endpoint, e.Email, e.Pending, e.Failed))
	}
	return render(c, fiber.StatusOK, views.AdminWebhooks(s.page(c, "webhooks.admin_title"), v))
}

// adminWebhookPage is one endpoint's delivery log: attempts, status,
// latency, next try, and "send again".
func (s *Server) adminWebhookPage(c *fiber.Ctx) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	all, err := s.Webhooks.All(ctx, 500)
	if err != nil {
		return err
	}
	var v views.AdminWebhookView
	found := false
	for _, e := range all {
		if e.ID == id {
			v.Endpoint, found = webhookRow(e.Endpoint, e.Email, e.Pending, e.Failed), true
		}
	}
	if !found {
		return fiber.ErrNotFound
	}
	switch c.Query("done") {
	case "resent":
		v.Notice = "webhooks.admin_resent"
	case "pending":
		v.Notice = "webhooks.admin_not_resendable"
	}
	ds, err := s.Webhooks.Deliveries(ctx, id, 200)
	if err != nil {
		return err
	}
	for _, d := range ds {
		row := views.DeliveryRow{ID: d.ID, EventID: d.EventID, Type: d.Type, Status: d.Status, Attempts: d.Attempts,
			LastError: d.LastError, CreatedAt: d.CreatedAt, LastAttemptAt: d.LastAttemptAt,
			Resendable: d.Status != webhook.StatusPending && v.Endpoint.State != "disabled"}
		var body struct {
			TopUp struct {
				ID string `json:"id"`
			} `json:"topup"`
		}
		if json.Unmarshal([]byte(d.Body), &body) == nil {
			row.TopUpID = body.TopUp.ID
		}
		if d.LastHTTPStatus != nil {
			row.LastHTTP = strconv.Itoa(*d.LastHTTPStatus)
		}
		if d.LastLatencyMS != nil {
			row.LatencyMS = strconv.FormatInt(*d.LastLatencyMS, 10)
		}
		if d.Status == webhook.StatusPending {
			next := d.NextAttemptAt
			row.NextAttemptAt = &next
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	return render(c, fiber.StatusOK, views.AdminWebhook(s.page(c, "webhooks.log_title"), v))
}

// adminDisableWebhook disables any endpoint (audited).
func (s *Server) adminDisableWebhook(c *fiber.Ctx) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	ep, err := s.Webhooks.AdminDisable(c.UserContext(), currentUser(c).ID, id)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	s.Log.Warn("admin disabled a webhook endpoint", "endpoint", ep.ID, "owner", ep.UserID, "admin", currentUser(c).ID)
	return c.Redirect(routes.AdminWebhooks+"?done=disabled", fiber.StatusSeeOther)
}

// adminResendDelivery queues a delivery again (audited).
func (s *Server) adminResendDelivery(c *fiber.Ctx) error {
	id, err := idParam(c)
	if err != nil {
		return err
	}
	d, err := s.Webhooks.Resend(c.UserContext(), currentUser(c).ID, id)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrNotResendable):
		return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=pending", fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	if s.Hooks != nil {
		s.Hooks.Kick()
	}
	return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=resent", fiber.StatusSeeOther)
}
