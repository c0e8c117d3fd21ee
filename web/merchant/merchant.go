package merchant

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

const (
	merchantPageSize = 50
	// csvMaxRows bounds one export.
	csvMaxRows = 50_000
	// csvBatch is how many charges the export reads at a time (one keyset
	// page) and sends before reading the next.
	csvBatch = 1000
)

// merchantOf is the signed-in user's merchant, or the page that says
// they are none (ok false: answered).
func (h *handlers) merchantOf(c *fiber.Ctx) (charge.Merchant, bool, error) {
	m, err := h.Charges.Merchant(c.UserContext(), h.User(c).ID)
	if errors.Is(err, charge.ErrNotMerchant) {
		return m, false, h.Message(c, fiber.StatusForbidden, "merchant.not_title", "merchant.not", routes.Wallet, "nav.back_wallet")
	}
	return m, err == nil, err
}

// statusFilter is ?status= (ok false: not a status).
func statusFilter(c *fiber.Ctx) (charge.Status, bool) {
	s := charge.Status(c.Query("status"))
	return s, s == "" || s.Valid()
}

// merchantView is the page's frame: the merchant's balance and filters.
func merchantView(m charge.Merchant, status charge.Status) views.MerchantView {
	v := views.MerchantView{Name: m.DisplayName, PostedRials: m.PostedRials, HeldRials: m.HeldRials,
		AvailableRials: m.AvailableRials(), Status: string(status)}
	for _, s := range charge.Statuses() {
		v.Statuses = append(v.Statuses, string(s))
	}
	return v
}

// merchantPage is GET /merchant: the merchant's balance and its charges,
// newest first, by status, a page at a time.
func (h *handlers) merchantPage(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	status, ok := statusFilter(c)
	if !ok {
		return fiber.NewError(fiber.StatusBadRequest, "bad status")
	}
	before, err := cursor(c)
	if err != nil {
		return err
	}
	cs, next, err := h.Charges.List(c.UserContext(), charge.Filter{MerchantUserID: m.UserID, Status: status, Before: before, Limit: merchantPageSize})
	if err != nil {
		return err
	}
	v := merchantView(m, status)
	v.NextCursor, v.HasNewer = next, before > 0
	for _, ch := range cs {
		v.Rows = append(v.Rows, views.ChargeRowOf(ch))
	}
	return h.Render(c, fiber.StatusOK, views.MerchantPage(h.Page(c, "merchant.title"), v))
}

// cursor is ?before= (0: none; 400: not an id).
func cursor(c *fiber.Ctx) (int64, error) {
	b := c.Query("before")
	if b == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(b, 10, 64)
	if err != nil || n <= 0 {
		return 0, fiber.NewError(fiber.StatusBadRequest, "bad cursor")
	}
	return n, nil
}

// merchantCSV is GET /merchant/charges.csv: the same charges (by the
// same status filter) as a spreadsheet, UTF-8 with a BOM, at most
// csvMaxRows. The first batch is read before the answer starts (a failure
// is then an error page, not a cut file); the rest are streamed a keyset
// page at a time, each sent before the next is read: at 1,000,000 charges
// the whole file was built in memory before its first byte left.
func (h *handlers) merchantCSV(c *fiber.Ctx) error {
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	status, ok := statusFilter(c)
	if !ok {
		return fiber.NewError(fiber.StatusBadRequest, "bad status")
	}
	before, err := cursor(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	page := func(before int64) ([]charge.Charge, int64, error) {
		return h.Charges.List(ctx, charge.Filter{MerchantUserID: m.UserID, Status: status, Before: before, Limit: csvBatch})
	}
	cs, next, err := page(before)
	if err != nil {
		return err
	}
	l := h.Lang(c)
	t := func(k string) string { return i18n.T(l, k) }
	return seam.StreamCSV(c, h.Log, seam.CSVExport[charge.Charge]{
		Filename: "kifpool-charges.csv",
		Header: []string{t("csv.utc"), t("merchant.col_id"), t("merchant.col_order"), t("merchant.col_description"), t("csv.status"),
			t("csv.status_code"), t("merchant.col_capture"), t("csv.amount_rials"), t("merchant.col_captured_rials"),
			t("merchant.col_refunded_rials"), t("merchant.col_payer")},
		First: cs, Next: next, MaxRows: csvMaxRows, Page: page,
		Cut: func(last charge.Charge) []string {
			return []string{t("csv.cut"), "before=" + strconv.FormatInt(last.ID, 10)}
		},
		Row: func(ch charge.Charge) []string {
			return []string{ch.CreatedAt.UTC().Format(time.RFC3339), ch.PublicID, seam.CSVCell(ch.OrderID), seam.CSVCell(ch.Description),
				t("merchant.status." + string(ch.Status)), string(ch.Status), string(ch.Capture), strconv.FormatInt(ch.AmountRials, 10),
				strconv.FormatInt(ch.CapturedRials, 10), strconv.FormatInt(ch.RefundedRials, 10), seam.CSVCell(ch.PayerEmail)}
		},
	})
}

// chargePage is GET /merchant/charges/{id}: one of the merchant's charges
// with its refunds, its history and the actions it allows.
func (h *handlers) chargePage(c *fiber.Ctx) error {
	return h.showCharge(c, fiber.StatusOK, c.Query("done"), "", nil, views.ChargeForm{})
}

// showCharge renders the route's charge of the signed-in merchant, with
// an action's outcome (notice: done's key; errKey: a refusal; f: the form
// whose amount the refusal is about, shown as typed).
func (h *handlers) showCharge(c *fiber.Ctx, status int, notice, errKey string, args []any, f views.ChargeForm) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	id, err := chargeID(c)
	if err != nil {
		return err
	}
	ch, err := h.Charges.Get(c.UserContext(), m.UserID, id)
	if errors.Is(err, charge.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	events, err := h.Charges.Events(c.UserContext(), ch.ID)
	if err != nil {
		return err
	}
	v := merchantView(m, "")
	d := views.ChargeDetailOf(ch, events)
	d.CanCapture = ch.Status == charge.StatusAuthorized
	d.CanCancel = ch.Status == charge.StatusAuthorized || ch.Status == charge.StatusRequiresConfirmation
	d.CanRefund = ch.Status == charge.StatusSucceeded && ch.RefundableRials() > 0
	d.RefundToken = formtoken.New()
	v.Charge = d
	v.NoticeKey = map[string]string{"captured": "merchant.done_captured", "canceled": "merchant.done_canceled",
		"refunded": "merchant.done_refunded"}[notice]
	v.ErrorKey, v.ErrorArgs = errKey, args
	return h.Render(c, status, views.MerchantCharge(h.Page(c, "merchant.charge_title"), v, f))
}

// actionDone goes back to the charge's page, told what was done
// (Post/Redirect/Get: a reload repeats nothing).
func actionDone(c *fiber.Ctx, publicID, done string) error {
	return c.Redirect(routes.MerchantCharge(publicID)+"?done="+done, fiber.StatusSeeOther)
}

// amountOf reads a form's amount in tomans, as rials: one digit after a
// decimal mark is rials (a charge need not be whole tomans; the capture
// form is filled with the amount as the page writes it).
func amountOf(typed string) (int64, error) {
	rials, err := money.ParseTomansRials(typed)
	if err != nil {
		return 0, err
	}
	return rials, charge.CheckAmount(rials)
}

// capture is POST /merchant/charges/{id}/capture {amount}: the same
// use case as the API's capture, once.
func (h *handlers) capture(c *fiber.Ctx) error {
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	id, err := chargeID(c)
	if err != nil {
		return err
	}
	// A refused amount comes back as typed: the field refilled with the
	// whole charge would capture all of it on the next press.
	f := views.ChargeForm{Action: "capture", Amount: h.FormValue(c, "amount")}
	rials, err := amountOf(f.Amount)
	if err != nil {
		return h.showCharge(c, fiber.StatusUnprocessableEntity, "", "merchant.error_amount", nil, f)
	}
	if _, err := h.Charges.Capture(c.UserContext(), m.UserID, id, rials); err != nil {
		return h.actionRefused(c, err, f)
	}
	return actionDone(c, id, "captured")
}

// cancel is POST /merchant/charges/{id}/cancel: the API's cancel, once.
func (h *handlers) cancel(c *fiber.Ctx) error {
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	id, err := chargeID(c)
	if err != nil {
		return err
	}
	if _, err := h.Charges.Cancel(c.UserContext(), m.UserID, id); err != nil {
		return h.actionRefused(c, err, views.ChargeForm{})
	}
	return actionDone(c, id, "canceled")
}

// refund is POST /merchant/charges/{id}/refund {amount, token}: the API's
// refund, its form's own token standing for the Idempotency-Key, so a
// double submit refunds once.
func (h *handlers) refund(c *fiber.Ctx) error {
	m, ok, err := h.merchantOf(c)
	if !ok {
		return err
	}
	id, err := chargeID(c)
	if err != nil {
		return err
	}
	token := h.FormValue(c, "token")
	if !formtoken.Valid(token) {
		return h.showCharge(c, fiber.StatusBadRequest, "", "merchant.error_form_expired", nil, views.ChargeForm{})
	}
	f := views.ChargeForm{Action: "refund", Amount: h.FormValue(c, "amount")}
	rials, err := amountOf(f.Amount)
	if err != nil {
		return h.showCharge(c, fiber.StatusUnprocessableEntity, "", "merchant.error_amount", nil, f)
	}
	_, err = h.Charges.Refund(c.UserContext(), charge.RefundRequest{MerchantUserID: m.UserID, ChargeID: id, FormToken: token, AmountRials: rials})
	if err != nil {
		return h.actionRefused(c, err, f)
	}
	return actionDone(c, id, "refunded")
}

// actionRefused shows the charge again with the refusal's one sentence;
// nothing was written. A refusal of the amount (f: the action's form, as
// typed) shows that form's amount as typed, its field at fault; any other
// shows the forms afresh.
func (h *handlers) actionRefused(c *fiber.Ctx, err error, f views.ChargeForm) error {
	if !errors.Is(err, charge.ErrBadAmount) && !errors.Is(err, charge.ErrRefundExceeds) && !errors.Is(err, charge.ErrInsufficientFunds) {
		f = views.ChargeForm{}
	}
	for _, e := range []struct {
		err error
		key string
	}{
		{charge.ErrInsufficientFunds, "merchant.error_funds"},
		{charge.ErrRefundExceeds, "merchant.error_exceeds"},
		{charge.ErrBadAmount, "merchant.error_amount"},
		{charge.ErrExpired, "merchant.error_expired"},
		{charge.ErrNotCapturable, "merchant.error_state"},
		{charge.ErrNotCancelable, "merchant.error_state"},
		{charge.ErrNotRefundable, "merchant.error_state"},
		{charge.ErrCanceled, "merchant.error_state"},
		{charge.ErrTokenReused, "merchant.error_form_used"},
	} {
		if errors.Is(err, e.err) {
			return h.showCharge(c, fiber.StatusConflict, "", e.key, nil, f)
		}
	}
	if errors.Is(err, charge.ErrNotFound) {
		return fiber.ErrNotFound
	}
	return err
}
