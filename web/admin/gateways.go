package admin

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/usertext"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// gateways is the gateways page: for each gateway the instance talks
// to, whether new top-ups are offered it (the operator's switch), its
// breaker in this instance and its latency over the last hour.
func (h *handlers) gateways(c *fiber.Ctx) error {
	ctx := c.UserContext()
	off := map[string]bool{}
	offers, err := h.TopUps.Offered(ctx)
	if err != nil {
		return err
	}
	offered := map[string]bool{}
	for _, o := range offers {
		offered[o.Name] = true
	}
	lat, err := h.Reads.GatewayLatencies(ctx, h.Now())
	if err != nil {
		return err
	}
	breakers := map[string]adminview.BreakerView{}
	for _, st := range h.breakers() {
		breakers[st.Name] = adminview.BreakerView{State: st.State, Requests: st.Requests, Failures: st.Failures,
			ConsecutiveFailures: st.ConsecutiveFailures, Since: st.Since}
	}
	v := adminview.GatewaysView{}
	switch c.Query("done") {
	case "off":
		v.Notice = "gateways.done_off"
	case "on":
		v.Notice = "gateways.done_on"
	}
	for _, name := range h.GatewayNames {
		off[name] = !offered[name]
		b := breakers[name]
		row := adminview.GatewayRow{Name: name, Label: h.GatewayName(c, name), Off: off[name], BreakerState: b.State,
			Requests: b.Requests, Failures: b.Failures, ConsecutiveFailures: b.ConsecutiveFailures, Since: b.Since}
		if row.BreakerState == "" {
			row.BreakerState = "closed"
		}
		for _, l := range lat {
			if l.Gateway == name {
				row.Latency = append(row.Latency, adminview.LatencyView{Operation: l.Operation, Calls: l.Calls, P50: l.P50, P90: l.P90, P99: l.P99})
			}
		}
		v.Gateways = append(v.Gateways, row)
	}
	return h.Render(c, fiber.StatusOK, adminview.Gateways(h.Page(c, "gateways.title"), v))
}

// switchGateway switches a gateway off (off=1) or back on (off=0)
// for new top-ups, with an optional note; recorded in the audit log.
func (h *handlers) switchGateway(c *fiber.Ctx) error {
	name := c.Params("name")
	var disabled bool
	switch h.FormValue(c, "off") {
	case "1":
		disabled = true
	case "0":
	default:
		return fiber.ErrBadRequest
	}
	note := h.FormValue(c, "note")
	if len(note) > 200 || usertext.CheckName(note) != nil {
		return fiber.ErrBadRequest
	}
	err := h.TopUps.SwitchGateway(c.UserContext(), h.User(c).ID, name, disabled, note)
	switch {
	case errors.Is(err, topup.ErrUnknownGateway):
		return fiber.ErrNotFound
	case err != nil:
		return err
	}
	done := "on"
	if disabled {
		done = "off"
	}
	return c.Redirect(routes.AdminGateways+"?done="+done, fiber.StatusSeeOther)
}
