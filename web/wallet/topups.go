package wallet

import (
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

const topUpsPageSize = 25

// paymentsFilter reads ?status=&from=&to= (Jalali or Gregorian days in
// any digits; to is inclusive). A filter that cannot be read is reported
// on the page, never guessed.
func topUpsFilter(c *fiber.Ctx) (f topupread.PayerFilter, v views.TopUpsView, ok bool) {
	v.Status, v.From, v.To = c.Query("status"), c.Query("from"), c.Query("to")
	statuses, valid := topupread.StatusGroup(v.Status)
	if !valid {
		v.Status, v.ErrorKey, v.ErrorFor = "", "paylist.bad_status", "status"
		return f, v, false
	}
	f.Statuses = statuses
	if v.From != "" {
		d, err := i18n.ParseDay(v.From)
		if err != nil {
			v.ErrorKey, v.ErrorFor = "paylist.bad_date", "from"
			return f, v, false
		}
		f.From = d
	}
	if v.To != "" {
		d, err := i18n.ParseDay(v.To)
		if err != nil {
			v.ErrorKey, v.ErrorFor = "paylist.bad_date", "to"
			return f, v, false
		}
		f.To = d.Add(24 * time.Hour) // through the whole day (Tehran has no DST)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		v.ErrorKey, v.ErrorFor = "paylist.bad_range", "to"
		return f, v, false
	}
	q := url.Values{}
	for k, val := range map[string]string{"status": v.Status, "from": v.From, "to": v.To} {
		if val != "" {
			q.Set(k, val)
		}
	}
	v.Query = q.Encode()
	return f, v, true
}

// walletPayments lists every top-up attempt of the user (credited, open,
// failed, under review), filtered, newest first, keyset-paged.
func (h *handlers) walletTopUps(c *fiber.Ctx) error {
	f, v, ok := topUpsFilter(c)
	if !ok {
		return h.Render(c, fiber.StatusBadRequest, views.TopUps(h.Page(c, "paylist.title"), v))
	}
	before, err := beforeCursor(c)
	if err != nil {
		return err
	}
	rows, next, err := h.Reads.ForPayer(c.UserContext(), h.User(c).ID, f, before, topUpsPageSize)
	if err != nil {
		return err
	}
	v.NextCursor, v.HasNewer = next, before > 0
	for _, p := range rows {
		r := views.TopUpRow{PublicID: p.PublicID, AmountRials: p.AmountRials, Status: string(p.Status.Public()),
			Gateway: h.GatewayName(c, p.Gateway), CreatedAt: p.CreatedAt}
		if p.RefID != nil {
			r.RefID = *p.RefID
		}
		v.Rows = append(v.Rows, r)
	}
	return h.Render(c, fiber.StatusOK, views.TopUps(h.Page(c, "paylist.title"), v))
}

// csvMaxRows bounds one export (a payer's whole history fits many times).
const csvMaxRows = 50_000

// csvBatch is how many rows the export reads at a time (one keyset page
// of the payer's top-ups) and writes out before reading the next.
const csvBatch = 1000

// walletPaymentsCSV exports the same rows for the payer: UTF-8 with a
// BOM (spreadsheets then read Persian right), the Jalali date and Tehran
// time beside the ISO UTC instant, and the status in the payer's language.
// The first batch is read before the answer starts (a failure is then an
// error page, not a cut file); the rest are streamed a keyset page at a
// time, each sent before the next is read, so that neither the whole file
// nor the whole history is ever held in memory and the first rows reach
// the payer after one batch's query.
func (h *handlers) walletTopUpsCSV(c *fiber.Ctx) error {
	f, _, ok := topUpsFilter(c)
	if !ok {
		return fiber.NewError(fiber.StatusBadRequest, "bad filter")
	}
	before, err := beforeCursor(c)
	if err != nil {
		return err
	}
	ctx, userID, l := c.UserContext(), h.User(c).ID, h.Lang(c)
	rows, next, err := h.Reads.ForPayer(ctx, userID, f, before, csvBatch)
	if err != nil {
		return err
	}
	names := map[string]string{}
	gatewayName := func(name string) string {
		n, ok := names[name]
		if !ok {
			n = h.GatewayNameIn(l, name)
			names[name] = n
		}
		return n
	}
	t := func(k string) string { return i18n.T(l, k) }
	return seam.StreamCSV(c, h.Log, seam.CSVExport[topup.TopUp]{
		Filename: "kifpool-topups.csv",
		Header: []string{t("csv.date_jalali"), t("csv.time_tehran"), t("csv.utc"), t("csv.amount_rials"), t("csv.amount_tomans"),
			t("csv.status"), t("csv.status_code"), t("receipt.id"), t("csv.public_id"), t("receipt.ref_id"), t("receipt.card"), t("paylist.col_gateway")},
		First: rows, Next: next, MaxRows: csvMaxRows,
		Cut: func(last topup.TopUp) []string {
			return []string{t("csv.cut"), "before=" + strconv.FormatInt(last.ID, 10)}
		},
		Page: func(after int64) ([]topup.TopUp, int64, error) {
			return h.Reads.ForPayer(ctx, userID, f, after, csvBatch)
		},
		Row: func(p topup.TopUp) []string {
			ref := ""
			if p.RefID != nil {
				ref = strconv.FormatInt(*p.RefID, 10)
			}
			return []string{i18n.JalaliDate(i18n.EN, p.CreatedAt), i18n.TehranClock(p.CreatedAt), p.CreatedAt.UTC().Format(time.RFC3339),
				strconv.FormatInt(p.AmountRials, 10), strconv.FormatInt(p.AmountRials/10, 10),
				i18n.T(l, "status."+string(p.Status.Public())), string(p.Status.Public()), views.ShortRef(p.PublicID), p.PublicID, ref, seam.CSVCell(p.CardPANMasked), gatewayName(p.Gateway)}
		},
	})
}
