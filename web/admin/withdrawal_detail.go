package admin

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/people"
	"github.com/kifpool/kifpool/internal/withdrawal"
	adminview "github.com/kifpool/kifpool/views/admin"
)

// withdrawalDetail is GET /admin/withdrawals/{id}: one withdrawal, its
// status changes, its ledger transactions (the amount taken to the
// provider's in-flight account, its settlement, a return), and the
// queue's actions its status allows, posting to the queue's handlers.
func (h *handlers) withdrawalDetail(c *fiber.Ctx) error {
	ctx := c.UserContext()
	w, err := h.Withdrawals.ByPublicID(ctx, c.Params("id"))
	if errors.Is(err, withdrawal.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := adminview.WithdrawalDetailView{Withdrawal: withdrawalRow(w), MaskedSheba: iban.Sheba(w.Sheba).Masked(), Rail: w.Rail,
		ReviewRequired: w.ReviewRequired, UpdatedAt: w.UpdatedAt, HoldID: w.HoldID,
		CanReview: w.Status == withdrawal.StatusRequested && w.ReviewRequired,
		// After "transferred", close as failed is offered once the
		// provider has contradicted it since with "failed", never after
		// its "not found" (refused at every press: it needs "failed"
		// now), where the page says what to do instead; the use case asks
		// it again and waits until that has stood long enough.
		CanFail: withdrawal.FailMayGo(w),
		FailWaitsForWord: w.Status == withdrawal.StatusNeedsReview && w.ProviderState == withdrawal.ProviderTransferred &&
			w.UnknownSince != nil && w.Contradiction == withdrawal.ContradictionNotFound,
		CanPay: w.Status == withdrawal.StatusNeedsReview && w.ProviderState == withdrawal.ProviderTransferred}
	u, err := h.People.Fresh().User(ctx, w.UserID)
	if err != nil && !errors.Is(err, people.ErrNotFound) {
		return err
	}
	v.Email = u.Email
	evs, err := h.Withdrawals.Events(ctx, w)
	if err != nil {
		return err
	}
	for _, e := range evs {
		row := adminview.WithdrawalEventRow{From: string(e.FromStatus), To: string(e.ToStatus), Actor: string(e.Actor), Reason: string(e.Reason),
			Note: e.Note, At: e.CreatedAt}
		if e.AdminID != nil {
			row.AdminID = *e.AdminID
		}
		v.Events = append(v.Events, row)
	}
	// The hold's capture (to payouts in flight, when paid), the
	// settlement (to the rail, when the provider's list settled it) and a
	// return (back to the wallet).
	var txs []ledger.Transaction
	for _, ref := range []struct {
		kind ledger.Kind
		ref  string
	}{{ledger.KindWithdrawal, "hold:" + strconv.FormatInt(w.HoldID, 10)}, {ledger.KindWithdrawal, "settle:" + w.PublicID},
		{ledger.KindWithdrawalReturn, w.PublicID}} {
		lt, err := h.Ledger.ByReference(ctx, ref.kind, ref.ref)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		txs = append(txs, lt)
	}
	if v.Transactions, err = h.ledgerRows(ctx, txs); err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, adminview.WithdrawalDetail(h.Page(c, "admin.wd.detail"), v))
}
