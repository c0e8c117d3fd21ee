package admin

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/account"
	"github.com/kifpool/kifpool/web/seam"
)

// webhooks lists every endpoint (failing first) with the queue's
// figures.
func (h *handlers) webhooks(c *fiber.Ctx) error {
	ctx := c.UserContext()
	all, err := h.Webhooks.All(ctx, 500)
	if err != nil {
		return err
	}
	st, err := h.Webhooks.Stats(ctx)
	if err != nil {
		return err
	}
	v := adminview.WebhooksView{Pending: st.Pending, Failed: st.Failed, FailingEndpoints: st.FailingEndpoints,
		OldestSince: h.Now().Add(-st.OldestAge)}
	switch c.Query("done") {
	case "disabled":
		v.Notice = "webhooks.admin_disabled"
	case "enabled":
		v.Notice = "webhooks.admin_enabled"
	case "owner":
		v.Notice = "webhooks.admin_owner_disabled"
	case "too_many":
		v.Notice = "webhooks.error_too_many"
	case "unconfirmed":
		v.Notice = "webhooks.admin_unconfirmed"
	}
	for _, e := range all {
		v.Endpoints = append(v.Endpoints, account.WebhookRow(e.Endpoint, e.Email, e.Pending, e.Failed))
	}
	return h.Render(c, fiber.StatusOK, adminview.Webhooks(h.Page(c, "webhooks.admin_title"), v))
}

// webhookLog is one endpoint's delivery log: attempts, status,
// latency, next try, and "send again".
func (h *handlers) webhookLog(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	e, err := h.Webhooks.AdminEndpoint(ctx, id)
	if errors.Is(err, webhook.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := adminview.WebhookLogView{Endpoint: account.WebhookRow(e.Endpoint, e.Email, e.Pending, e.Failed)}
	switch c.Query("done") {
	case "resent":
		v.Notice = "webhooks.admin_resent"
	case "pending":
		v.Notice = "webhooks.admin_not_resendable"
	case "endpoint_disabled":
		v.Notice = "webhooks.admin_resend_disabled"
	case "superseded":
		v.Notice = "webhooks.admin_superseded"
	}
	ds, err := h.Webhooks.Deliveries(ctx, id, 200)
	if err != nil {
		return err
	}
	for _, d := range ds {
		row := adminview.DeliveryRow{ID: d.ID, EventID: d.EventID, Type: d.Type, Status: d.Status, Attempts: d.Attempts,
			LastError: d.LastError, LastErrorKey: deliveryErrorKey(d.LastError), CreatedAt: d.CreatedAt, LastAttemptAt: d.LastAttemptAt,
			Resendable: d.Status != webhook.StatusPending && v.Endpoint.State != "disabled"}
		row.SubjectKind, row.SubjectID, row.SubjectURL = deliverySubject(d.Body)
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
	return h.Render(c, fiber.StatusOK, adminview.WebhookLog(h.Page(c, "webhooks.log_title"), v))
}

// deliverySubject reads the movement a delivery's body is about: its
// kind, public id and admin page (a withdrawal has no page of its own: the
// withdrawals' queue). Each event type names exactly one of them.
func deliverySubject(body string) (kind, id, url string) {
	type ref struct {
		ID string `json:"id"`
	}
	var b struct {
		TopUp      *ref `json:"topup"`
		Transfer   *ref `json:"transfer"`
		Withdrawal *ref `json:"withdrawal"`
		Charge     *ref `json:"charge"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return "", "", ""
	}
	switch {
	case b.TopUp != nil && b.TopUp.ID != "":
		return "topup", b.TopUp.ID, routes.AdminTopUp(b.TopUp.ID)
	case b.Transfer != nil && b.Transfer.ID != "":
		return "transfer", b.Transfer.ID, routes.AdminTransfer(b.Transfer.ID)
	case b.Withdrawal != nil && b.Withdrawal.ID != "":
		return "withdrawal", b.Withdrawal.ID, routes.AdminWithdrawal(b.Withdrawal.ID)
	case b.Charge != nil && b.Charge.ID != "":
		return "charge", b.Charge.ID, routes.AdminCharge(b.Charge.ID)
	}
	return "", "", ""
}

// disableWebhook disables any endpoint (audited).
func (h *handlers) disableWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	ep, err := h.Webhooks.AdminDisable(c.UserContext(), h.User(c).ID, id)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	h.Log.Warn("admin disabled a webhook endpoint", "endpoint", ep.ID, "owner", ep.UserID, "admin", h.User(c).ID)
	return c.Redirect(routes.AdminWebhooks+"?done=disabled", fiber.StatusSeeOther)
}

// enableWebhook brings back an endpoint an admin disabled, or clears
// one's failing mark (audited). One its owner disabled stays the owner's
// to enable.
func (h *handlers) enableWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	ep, err := h.Webhooks.AdminEnable(c.UserContext(), h.User(c).ID, id)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrDisabledByOwner):
		return c.Redirect(routes.AdminWebhooks+"?done=owner", fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrTooMany):
		return c.Redirect(routes.AdminWebhooks+"?done=too_many", fiber.StatusSeeOther)
	case errors.Is(err, owner.ErrUnconfirmed):
		return c.Redirect(routes.AdminWebhooks+"?done=unconfirmed", fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	h.Log.Warn("admin enabled a webhook endpoint", "endpoint", ep.ID, "owner", ep.UserID, "admin", h.User(c).ID)
	return c.Redirect(routes.AdminWebhooks+"?done=enabled", fiber.StatusSeeOther)
}

// resendDelivery queues a delivery again (audited).
func (h *handlers) resendDelivery(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	d, err := h.Webhooks.Resend(c.UserContext(), h.User(c).ID, id)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrSuperseded):
		// A later event of its top-up, withdrawal or charge was delivered
		// or is queued: sent again, this one would arrive after it.
		return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=superseded", fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrNotResendable) && d.Status != webhook.StatusPending:
		// Delivered or given up, yet not queued again: its endpoint was
		// disabled since the page was read.
		return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=endpoint_disabled", fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrNotResendable):
		return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=pending", fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	if h.Hooks != nil {
		h.Hooks.Kick()
	}
	return c.Redirect(routes.AdminWebhook(d.EndpointID)+"?done=resent", fiber.StatusSeeOther)
}

// deliveryErrorKey is the message key of a last error Kifpool wrote
// itself, "" for a receiver's own answer (shown as it came).
func deliveryErrorKey(lastError string) string {
	if lastError == webhook.LastErrorEndpointDisabled {
		return "webhooks.error_disabled"
	}
	return ""
}
