package admin

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/usertext"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/seam"
)

// listQuery reads the payment list's query parameters (q, status
// repeatable, gateway, from, to, min, max, sort, cursor) into a filter and
// the form's values. errKey names the first bad parameter's message.
func (h *handlers) listQuery(c *fiber.Ctx) (f topupread.Filter, after *topupread.Cursor, form adminview.TopUpListView, errKey string) {
	args := c.Request().URI().QueryArgs()
	form.Query = strings.TrimSpace(c.Query("q"))
	form.Query = usertext.Cut(form.Query, 200)
	f.Query = form.Query
	bad := func(key string) {
		if errKey == "" {
			errKey = key
		}
	}
	for _, v := range args.PeekMulti("status") {
		st := string(v)
		if !topupread.ValidStatus(st) {
			bad("admin.error.filter")
			continue
		}
		f.Statuses = append(f.Statuses, st)
	}
	form.Gateway = strings.TrimSpace(c.Query("gateway"))
	if len(form.Gateway) > 40 {
		bad("admin.error.filter")
		form.Gateway = ""
	}
	f.Gateway = form.Gateway
	form.From, form.To = strings.TrimSpace(c.Query("from")), strings.TrimSpace(c.Query("to"))
	if form.From != "" {
		t, err := i18n.ParseDay(form.From)
		if err != nil {
			bad("admin.error.date")
		}
		f.From = t
	}
	if form.To != "" {
		t, err := i18n.ParseDay(form.To)
		if err != nil {
			bad("admin.error.date")
		} else {
			f.To = t.Add(24 * time.Hour) // the whole last day
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		bad("admin.error.range")
	}
	form.Min, form.Max = strings.TrimSpace(c.Query("min")), strings.TrimSpace(c.Query("max"))
	if form.Min != "" {
		n, err := money.ParseTomans(form.Min)
		if err != nil {
			bad("admin.error.amount")
		}
		f.MinRials = n
	}
	if form.Max != "" {
		n, err := money.ParseTomans(form.Max)
		if err != nil {
			bad("admin.error.amount")
		}
		f.MaxRials = n
	}
	if f.MinRials > 0 && f.MaxRials > 0 && f.MinRials > f.MaxRials {
		bad("admin.error.range")
	}
	switch form.Sort = c.Query("sort"); form.Sort {
	case "", "newest":
		form.Sort = "newest"
	case "oldest":
		f.Oldest = true
	default:
		bad("admin.error.filter")
		form.Sort = "newest"
	}
	if cur := c.Query("cursor"); cur != "" {
		cc, err := topupread.ParseCursor(cur)
		if err != nil {
			bad("admin.error.filter")
		} else {
			after = &cc
		}
	}
	return f, after, form, errKey
}

// fragmentTooWide is the message key asking for a longer search when f
// searches by a part of an e-mail address too short for the index to find
// (fewer than three letters or digits in a row) or that more than
// topupread.FragmentUsers addresses contain ("" otherwise).
func (h *handlers) fragmentTooWide(c *fiber.Ctx, f topupread.Filter) (string, error) {
	short, err := h.Reads.FragmentTooShort(c.UserContext(), f)
	if err != nil {
		return "", err
	}
	if short {
		return "admin.error.fragment_short", nil
	}
	wide, err := h.Reads.FragmentTooWide(c.UserContext(), f)
	if err != nil || !wide {
		return "", err
	}
	return "admin.error.fragment_wide", nil
}

// paymentList is the admin's payment list.
func (h *handlers) topUpList(c *fiber.Ctx) error {
	ctx := c.UserContext()
	f, after, v, errKey := h.listQuery(c)
	if errKey == "" {
		var err error
		if errKey, err = h.fragmentTooWide(c, f); err != nil {
			return err
		}
	}
	status := fiber.StatusOK
	checked := map[string]bool{}
	for _, st := range f.Statuses {
		checked[st] = true
	}
	v.Gateways = nil
	for _, name := range h.GatewayNames {
		v.Gateways = append(v.Gateways, adminview.Option{Value: name, Label: h.gatewayLabel(h.Lang(c), name)})
	}
	if errKey != "" {
		status, v.ErrorKey = fiber.StatusBadRequest, errKey
		for _, st := range topupread.Statuses {
			v.Counts = append(v.Counts, adminview.FilterCount{Status: st, Checked: checked[st]})
		}
	} else {
		rows, next, err := h.Reads.List(ctx, f, after, topupread.PageSize)
		if err != nil {
			return err
		}
		counts, err := h.Reads.StatusCounts(ctx, f, topupread.CountCap)
		if err != nil {
			return err
		}
		for _, st := range topupread.Statuses {
			n := counts[st]
			fc := adminview.FilterCount{Status: st, N: n, Checked: checked[st]}
			if n > topupread.CountCap {
				fc.N, fc.More = topupread.CountCap, true
			}
			v.Counts = append(v.Counts, fc)
		}
		for _, r := range rows {
			v.Rows = append(v.Rows, h.topUpRow(h.Lang(c), r))
		}
		if next != nil {
			v.NextURL = routes.AdminTopUps + "?" + queryWith(c, "cursor", next.String())
		}
		if after != nil {
			v.FirstURL = routes.AdminTopUps + "?" + queryWith(c, "cursor", "")
		}
	}
	v.CSVURL = routes.AdminTopUpsCSV + "?" + queryWith(c, "cursor", "")
	return h.Render(c, status, adminview.TopUpList(h.Page(c, "admin.topups.title"), v))
}

// paymentsCSV exports the list under the current filter (the same
// query parameters, every page) as CSV, streamed a batch at a time, with a
// UTF-8 byte order mark so that Excel reads Persian text right.
func (h *handlers) topUpsCSV(c *fiber.Ctx) error {
	f, after, _, errKey := h.listQuery(c)
	if errKey == "" {
		var err error
		if errKey, err = h.fragmentTooWide(c, f); err != nil {
			return err
		}
	}
	if errKey != "" {
		return fiber.NewError(fiber.StatusBadRequest, "bad filter")
	}
	seam.SetDownload(c, "text/csv; charset=utf-8", "payments-"+h.Now().UTC().Format("20060102-150405")+".csv")
	ctx := c.UserContext()
	l := h.Lang(c)
	seam.Stream(c, h.Log, "csv export", func(w *bufio.Writer) error {
		_, _ = w.WriteString("\ufeff")
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"public_id", "created_at_utc", "status", "amount_rials", "amount_tomans", "gateway",
			"email", "user_id", "authority", "ref_id", "card_pan_masked", "resolved_at_utc",
			"created_date_jalali", "created_time_tehran", "status_" + string(l)})
		n := 0
		var last topupread.Cursor
		err := h.Reads.EachTopUp(ctx, f, after, func(p topupread.TopUp) error {
			if n >= adminCSVMaxRows {
				// More remain: said in the file's last row, which names
				// the list's cursor after the last row written (in the
				// list's order, newest or oldest first).
				_ = cw.Write([]string{i18n.T(l, "csv.cut"), "cursor=" + last.String()})
				return errCSVCut
			}
			last = topupread.Cursor{CreatedAt: p.CreatedAt, ID: p.ID}
			rec := []string{p.PublicID, p.CreatedAt.UTC().Format(time.RFC3339Nano), p.Status,
				strconv.FormatInt(p.AmountRials, 10), i18n.TomansNumber(i18n.EN, p.AmountRials), h.gatewayLabel(i18n.EN, p.Gateway),
				seam.CSVCell(p.Email), strconv.FormatInt(p.UserID, 10), "", "", seam.CSVCell(p.CardPANMasked), "",
				i18n.JalaliDate(i18n.EN, p.CreatedAt), i18n.TehranClock(p.CreatedAt), i18n.T(l, "status."+p.Status)}
			if p.Authority != nil {
				rec[8] = seam.CSVCell(*p.Authority)
			}
			if p.RefID != nil {
				rec[9] = strconv.FormatInt(*p.RefID, 10)
			}
			if p.ResolvedAt != nil {
				rec[11] = p.ResolvedAt.UTC().Format(time.RFC3339Nano)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
			if n++; n%500 == 0 {
				cw.Flush()
				if err := cw.Error(); err != nil {
					return err
				}
				return w.Flush() // to the client: nothing piles up here
			}
			return nil
		})
		cw.Flush()
		if err == nil || errors.Is(err, errCSVCut) {
			err = cw.Error()
		}
		if err != nil {
			return fmt.Errorf("after %d rows: %w", n, err)
		}
		return w.Flush()
	})
	return nil
}

// adminCSVMaxRows bounds one export of the payments list: a filter that
// matches more (every payment ever) is cut there, the file's last row
// saying so, rather than holding a database reader for many minutes.
const adminCSVMaxRows = 200_000

// errCSVCut stops the export's walk at adminCSVMaxRows.
var errCSVCut = errors.New("csv export cut at its row limit")
