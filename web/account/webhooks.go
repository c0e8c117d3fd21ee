package account

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/webhook"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// WebhookRow is an endpoint as the pages list it, the user's own page and
// the admin's alike.
func WebhookRow(e webhook.Endpoint, owner string, pending, failed int64) views.WebhookRow {
	state := "active"
	switch {
	case e.DisabledAt != nil:
		state = "disabled"
	case e.FailingSince != nil:
		state = "failing"
	}
	return views.WebhookRow{ID: e.ID, URL: e.URL, Events: e.EventTypes(), Owner: owner, State: state, ByAdmin: e.DisabledByAdmin(),
		CreatedAt: e.CreatedAt, FailingSince: e.FailingSince, LastSuccessAt: e.LastSuccessAt, Pending: pending, Failed: failed}
}

// webhooksView fills the page's lists for the signed-in user.
func (h *handlers) webhooksView(c *fiber.Ctx, v views.WebhooksView) (views.WebhooksView, error) {
	uid := h.User(c).ID
	v.EventTypes, v.Loopback = webhook.Types(), h.Webhooks.AllowLoopback()
	eps, err := h.Webhooks.ForUser(c.UserContext(), uid)
	if err != nil {
		return v, err
	}
	for _, e := range eps {
		v.Endpoints = append(v.Endpoints, WebhookRow(e, "", 0, 0))
	}
	origins, err := h.Webhooks.Origins(c.UserContext(), uid)
	if err != nil {
		return v, err
	}
	for _, o := range origins {
		v.Origins = append(v.Origins, views.OriginRow{ID: o.ID, Origin: o.Origin})
	}
	return v, nil
}

func (h *handlers) renderWebhooks(c *fiber.Ctx, status int, v views.WebhooksView) error {
	v, err := h.webhooksView(c, v)
	if err != nil {
		return err
	}
	return h.Render(c, status, views.Webhooks(h.Page(c, "webhooks.title"), v))
}

var webhookNotices = map[string]string{
	"created": "webhooks.created", "disabled": "webhooks.disabled", "enabled": "webhooks.enabled", "deleted": "webhooks.deleted",
	"origin": "webhooks.origin_added",
}

// webhooksPage is /account/webhooks: the user's endpoints and return
// origins.
func (h *handlers) webhooksPage(c *fiber.Ctx) error {
	return h.renderWebhooks(c, fiber.StatusOK, views.WebhooksView{Notice: webhookNotices[c.Query("done")]})
}

// webhookErrorKey is the sentence of a refused URL or origin.
func webhookErrorKey(err error) string {
	switch {
	case errors.Is(err, webhook.ErrURLScheme):
		return "webhooks.error_scheme"
	case errors.Is(err, webhook.ErrURLPrivate):
		return "webhooks.error_private"
	case errors.Is(err, webhook.ErrNoEvents), errors.Is(err, webhook.ErrBadEvent):
		return "webhooks.error_events"
	case errors.Is(err, webhook.ErrTooMany):
		return "webhooks.error_too_many"
	case errors.Is(err, webhook.ErrOriginFormat):
		return "webhooks.error_origin"
	case errors.Is(err, webhook.ErrDuplicate):
		return "webhooks.error_duplicate"
	case errors.Is(err, webhook.ErrURLInvalid):
		return "webhooks.error_url"
	}
	return ""
}

// createWebhook registers an endpoint and shows its signing secret once
// (rendered, never redirected: the secret is in no URL and no later page).
// It asks for the password first (and an admin's fresh second factor).
func (h *handlers) createWebhook(c *fiber.Ctx) error {
	form := views.WebhookForm{URL: h.FormValue(c, "url")}
	for _, e := range c.Request().PostArgs().PeekMulti("events") {
		form.Events = append(form.Events, string(e))
	}
	// A new endpoint receives the account's events (amounts, addresses,
	// notes) until someone stops it ("sign out everywhere" and a new
	// password turn it off): a borrowed or stolen session alone cannot add
	// one, as it cannot mint a token. An admin types a fresh second factor
	// too.
	r, err := h.proveCredential(c, "webhooks.error_password")
	if err != nil {
		return err
	}
	if r != nil {
		form.ErrorKey, form.ErrorArgs = r.key, r.args
		return h.renderWebhooks(c, r.status, views.WebhooksView{Form: form})
	}
	ep, secret, err := h.Webhooks.Create(c.UserContext(), h.User(c).ID, form.URL, form.Events, webhook.Still(auth.SessionLive(h.SessionToken(c))))
	switch {
	case errors.Is(err, auth.ErrNoSession):
		// Signed out everywhere (or the password changed) while the
		// endpoint was being added: no endpoint.
		h.ClearSession(c)
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrDisabledByAdmin):
		form.ErrorKey = "webhooks.error_add_by_admin"
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{Form: form})
	case errors.Is(err, owner.ErrUnconfirmed):
		form.ErrorKey = "verify.needed" // the service's own refusal
		return h.renderWebhooks(c, fiber.StatusForbidden, views.WebhooksView{Form: form})
	}
	if err != nil {
		if form.ErrorKey = webhookErrorKey(err); form.ErrorKey == "" {
			return err
		}
		return h.renderWebhooks(c, fiber.StatusUnprocessableEntity, views.WebhooksView{Form: form})
	}
	h.Log.Info("webhook endpoint created", "user", h.User(c).ID, "endpoint", ep.ID)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return h.renderWebhooks(c, fiber.StatusOK, views.WebhooksView{NewSecret: secret, NewURL: ep.URL})
}

// disableWebhook stops one of the user's endpoints.
func (h *handlers) disableWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	switch err := h.Webhooks.Disable(c.UserContext(), h.User(c).ID, id); {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	return c.Redirect(routes.Webhooks+"?done=disabled", fiber.StatusSeeOther)
}

// enableWebhook brings back one of the user's endpoints that they
// disabled or that is marked failing. An endpoint enabled again receives
// the account's events, as a new one does, so the same proof is asked:
// the list's button shows a form for the password (an admin's fresh
// second factor too), and only that form's answer enables it; a borrowed
// session alone cannot turn back on what "sign out everywhere" turned
// off. One an administrator disabled stays disabled (409, the page says
// so); re-enabling past the limit of enabled endpoints is refused (422).
func (h *handlers) enableWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	form := &views.WebhookEnableForm{ID: id}
	v, err := h.webhooksView(c, views.WebhooksView{})
	if err != nil {
		return err
	}
	byAdmin := false
	for _, row := range v.Endpoints {
		if row.ID == id {
			form.URL, byAdmin = row.URL, row.ByAdmin
		}
	}
	switch {
	case form.URL == "":
		return fiber.ErrNotFound
	case byAdmin:
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{ListErrorKey: "webhooks.error_by_admin"})
	}
	refuse := func(status int, key string, args ...any) error {
		form.ErrorKey, form.ErrorArgs = key, args
		return h.renderWebhooks(c, status, views.WebhooksView{Enable: form})
	}
	if h.FormValue(c, "confirm") != "1" {
		// The list's button: ask.
		return h.renderWebhooks(c, fiber.StatusOK, views.WebhooksView{Enable: form})
	}
	r, err := h.proveCredential(c, "webhooks.error_enable_password")
	if err != nil {
		return err
	}
	if r != nil {
		return refuse(r.status, r.key, r.args...)
	}
	switch err := h.Webhooks.Enable(c.UserContext(), h.User(c).ID, id, webhook.Still(auth.SessionLive(h.SessionToken(c)))); {
	case errors.Is(err, auth.ErrNoSession):
		h.ClearSession(c)
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrDisabledByAdmin):
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{ListErrorKey: "webhooks.error_by_admin"})
	case errors.Is(err, webhook.ErrTooMany):
		return h.renderWebhooks(c, fiber.StatusUnprocessableEntity, views.WebhooksView{ListErrorKey: "webhooks.error_too_many"})
	case errors.Is(err, owner.ErrUnconfirmed):
		return h.renderWebhooks(c, fiber.StatusForbidden, views.WebhooksView{ListErrorKey: "verify.needed"})
	case err != nil:
		return err
	}
	h.Log.Info("webhook endpoint enabled", "user", h.User(c).ID, "endpoint", id)
	return c.Redirect(routes.Webhooks+"?done=enabled", fiber.StatusSeeOther)
}

// rotateWebhook gives one of the user's endpoints a new signing secret
// on the same row (its queued deliveries stay; the previous secret signs
// too for webhook.RotationGrace) and shows it once, as creation does:
// rendered, never redirected, never logged. A new secret is a credential
// of the account's events, so the same proof as for adding or enabling
// an endpoint is asked: the list's button shows a form for the password
// (an admin's fresh second factor too), and only that form's answer
// rotates. Another user's endpoint is not found. One an administrator
// disabled is refused (409, the page says so), nothing changed: it stays
// as the administrator left it, as for enable and delete.
func (h *handlers) rotateWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	form := &views.WebhookRotateForm{ID: id}
	v, err := h.webhooksView(c, views.WebhooksView{})
	if err != nil {
		return err
	}
	byAdmin := false
	for _, row := range v.Endpoints {
		if row.ID == id {
			form.URL, byAdmin = row.URL, row.ByAdmin
		}
	}
	switch {
	case form.URL == "":
		return fiber.ErrNotFound
	case byAdmin:
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{ListErrorKey: "webhooks.error_rotate_by_admin"})
	}
	if h.FormValue(c, "confirm") != "1" {
		// The list's button: ask.
		return h.renderWebhooks(c, fiber.StatusOK, views.WebhooksView{Rotate: form})
	}
	r, err := h.proveCredential(c, "webhooks.error_rotate_password")
	if err != nil {
		return err
	}
	if r != nil {
		form.ErrorKey, form.ErrorArgs = r.key, r.args
		return h.renderWebhooks(c, r.status, views.WebhooksView{Rotate: form})
	}
	ep, secret, err := h.Webhooks.Rotate(c.UserContext(), h.User(c).ID, id, webhook.Still(auth.SessionLive(h.SessionToken(c))))
	switch {
	case errors.Is(err, auth.ErrNoSession):
		// Signed out everywhere (or the password changed) meanwhile: no
		// new secret.
		h.ClearSession(c)
		return c.Redirect(routes.SignIn, fiber.StatusSeeOther)
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrDisabledByAdmin):
		// An administrator disabled it while the form was open.
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{ListErrorKey: "webhooks.error_rotate_by_admin"})
	case err != nil:
		return err
	}
	h.Log.Info("webhook endpoint signing secret rotated", "user", h.User(c).ID, "endpoint", ep.ID)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return h.renderWebhooks(c, fiber.StatusOK, views.WebhooksView{NewSecret: secret, NewURL: ep.URL, PreviousUntil: ep.PreviousSecretUntil})
}

// deleteWebhook removes one of the user's endpoints with its log; one an
// administrator disabled stays (409, the page says so): it binds its URL.
func (h *handlers) deleteWebhook(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	switch err := h.Webhooks.Delete(c.UserContext(), h.User(c).ID, id); {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case errors.Is(err, webhook.ErrDisabledByAdmin):
		return h.renderWebhooks(c, fiber.StatusConflict, views.WebhooksView{ListErrorKey: "webhooks.error_del_by_admin"})
	case err != nil:
		return err
	}
	return c.Redirect(routes.Webhooks+"?done=deleted", fiber.StatusSeeOther)
}

// addReturnOrigin registers an origin for return_url (field
// return_origin).
func (h *handlers) addReturnOrigin(c *fiber.Ctx) error {
	raw := h.FormValue(c, "return_origin")
	refuse := func(status int, key string, args ...any) error {
		return h.renderWebhooks(c, status, views.WebhooksView{OriginValue: raw, OriginErrorKey: key, OriginErrorArgs: args})
	}
	// An origin lets a charge's or a top-up's payer be sent there with
	// its outcome: as for an endpoint or a token, a borrowed or stolen
	// session alone cannot add one (the password, and an admin's fresh
	// second factor).
	r, err := h.proveCredential(c, "webhooks.error_password")
	if err != nil {
		return err
	}
	if r != nil {
		return refuse(r.status, r.key, r.args...)
	}
	if _, err := h.Webhooks.AddOrigin(c.UserContext(), h.User(c).ID, raw); err != nil {
		if errors.Is(err, owner.ErrUnconfirmed) {
			return h.renderWebhooks(c, fiber.StatusForbidden, views.WebhooksView{OriginValue: raw, OriginErrorKey: "verify.needed"})
		}
		key := webhookErrorKey(err)
		if key == "" {
			return err
		}
		if key == "webhooks.error_url" {
			key = "webhooks.error_origin"
		}
		return h.renderWebhooks(c, fiber.StatusUnprocessableEntity, views.WebhooksView{OriginValue: raw, OriginErrorKey: key})
	}
	return c.Redirect(routes.Webhooks+"?done=origin", fiber.StatusSeeOther)
}

// deleteReturnOrigin removes one of the user's return origins.
func (h *handlers) deleteReturnOrigin(c *fiber.Ctx) error {
	id, err := seam.IDParam(c)
	if err != nil {
		return err
	}
	switch err := h.Webhooks.DeleteOrigin(c.UserContext(), h.User(c).ID, id); {
	case errors.Is(err, webhook.ErrNotFound):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	return c.Redirect(routes.Webhooks+"?done=deleted", fiber.StatusSeeOther)
}
