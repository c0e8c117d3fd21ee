package admin

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/views"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// charges finds charges by id, order id, or the merchant's or the payer's
// e-mail (the newest without a query).
func (h *handlers) charges(c *fiber.Ctx) error {
	if h.Charges == nil {
		return fiber.ErrNotFound
	}
	q := c.Query("q")
	cs, err := h.Charges.Search(c.UserContext(), q, 100)
	if err != nil {
		return err
	}
	v := adminview.ChargesView{Query: q}
	for _, ch := range cs {
		v.Charges = append(v.Charges, views.ChargeRowOf(ch))
	}
	return h.Render(c, fiber.StatusOK, adminview.Charges(h.Page(c, "admin.charges.title"), v))
}

// chargeDetail is one charge with its history and its ledger
// transactions: its payment (kind charge), its capture (from its hold),
// and its refunds.
func (h *handlers) chargeDetail(c *fiber.Ctx) error {
	if h.Charges == nil {
		return fiber.ErrNotFound
	}
	ctx := c.UserContext()
	id := c.Params("id")
	if !charge.ValidPublicID(id) {
		return fiber.ErrNotFound
	}
	ch, err := h.Charges.Admin(ctx, id)
	if errors.Is(err, charge.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	events, err := h.Charges.Events(ctx, ch.ID)
	if err != nil {
		return err
	}
	type ref struct {
		kind ledger.Kind
		ref  string
	}
	refs := []ref{{ledger.KindCharge, ch.PublicID}}
	if ch.HoldID != 0 {
		refs = append(refs, ref{ledger.KindCapture, "hold:" + strconv.FormatInt(ch.HoldID, 10)})
	}
	for _, r := range ch.Refunds {
		refs = append(refs, ref{ledger.KindRefund, r.PublicID})
	}
	var txs []ledger.Transaction
	for _, r := range refs {
		lt, err := h.Ledger.ByReference(ctx, r.kind, r.ref)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		txs = append(txs, lt)
	}
	rows, err := h.ledgerRows(ctx, txs)
	if err != nil {
		return err
	}
	v := adminview.ChargeDetailView{Charge: views.ChargeDetailOf(ch, events), HoldID: ch.HoldID, Transactions: rows}
	return h.Render(c, fiber.StatusOK, adminview.ChargeDetail(h.Page(c, "admin.charges.detail"), v))
}
