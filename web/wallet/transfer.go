package wallet

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/views"
	"github.com/kifpool/kifpool/web/seam"
)

// newTransferForm is an empty form with a fresh token and the sender's
// available balance; until the sender confirms their address, the page
// says so instead of offering a form the service would refuse
// (ErrSenderUnconfirmed).
func (h *handlers) newTransferForm(c *fiber.Ctx) (views.TransferForm, error) {
	cfg := h.Transfers.Config()
	f := views.TransferForm{Token: formtoken.New(), MinRials: cfg.MinRials, DailyMaxRials: cfg.DailyMaxRials, Unconfirmed: !h.User(c).Verified()}
	w, err := h.Wallets.Figures(c.UserContext(), h.User(c).ID)
	if err != nil {
		return f, err
	}
	f.AvailableRials = w.AvailableRials()
	return f, nil
}

// transferForm is GET /wallet/transfer: the empty form.
func (h *handlers) transferForm(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	f, err := h.newTransferForm(c)
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, views.Transfer(h.Page(c, "transfer.title"), f))
}

// transfer is POST /wallet/transfer, the form's three submits: "Continue"
// (the confirmation step: nothing is written), "Edit" (the form again,
// filled in), and "Send" (confirmed=1: the transfer, then its receipt).
// Every submit of one form carries its token, so a double click, a
// resubmission or Back then Send makes one transfer, and the receipt
// answers every one of them.
func (h *handlers) transfer(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	u := h.User(c)
	f, err := h.newTransferForm(c)
	if err != nil {
		return err
	}
	token := h.FormValue(c, "token")
	f.To, f.Amount, f.Note = strings.TrimSpace(h.FormValue(c, "to")), h.FormValue(c, "amount"), h.FormValue(c, "note")
	if f.Unconfirmed {
		// Nothing of the form is looked at (nor any address: the
		// unknown-recipient allowance is not touched), unless its token
		// made a transfer already: that one's receipt.
		if formtoken.Valid(token) {
			rials, _ := money.ParseTomans(f.Amount)
			if done, err := h.answerMade(c, transfer.Request{SenderUserID: u.ID, FormToken: token, ToEmail: f.To, Note: f.Note, AmountRials: rials}); done || err != nil {
				return err
			}
		}
		return h.Render(c, fiber.StatusForbidden, views.Transfer(h.Page(c, "transfer.title"), f))
	}
	if !formtoken.Valid(token) {
		f.ErrorKey = "transfer.error_form_expired"
		return h.Render(c, fiber.StatusBadRequest, views.Transfer(h.Page(c, "transfer.title"), f))
	}
	f.Token = token
	if h.FormValue(c, "edit") == "1" {
		return h.Render(c, fiber.StatusOK, views.Transfer(h.Page(c, "transfer.title"), f))
	}
	// Only read here: the amount's limits are Quote's and Send's, after
	// the form's token is looked up, so that the form of a transfer made
	// before the operator changed them answers with its receipt.
	rials, err := money.ParseTomans(f.Amount)
	if err != nil {
		return h.transferRefused(c, f, err)
	}
	r := transfer.Request{SenderUserID: u.ID, FormToken: token, ToEmail: f.To, AmountRials: rials, Note: f.Note}
	allowance := "u" + strconv.FormatInt(u.ID, 10)
	// Whether an address has an account must not be asked without end:
	// every submit reserves a place in the user's allowance of unknown
	// addresses before any address is looked up (so that submits at once
	// cannot all pass), counted only if its address turned out unknown.
	unknown := false
	if h.UnknownRecipients != nil {
		place, wait, ok := h.UnknownRecipients.Reserve(allowance)
		if !ok {
			// A form whose transfer was made is answered with it all the
			// same (a double click, Back then Send): only new ones wait.
			if done, err := h.answerMade(c, r); done || err != nil {
				return err
			}
			secs := seam.RetryAfter(c, wait)
			if h.FormValue(c, "confirmed") == "1" {
				// answerMade sees committed transfers only: the first
				// press of a double click may still be in flight (waiting
				// on a lock) and commit after this answer. So this page
				// never says nothing was sent, only that this press sent
				// nothing, and sends the user to their history before a
				// fresh form could pay twice.
				return h.Message(c, fiber.StatusTooManyRequests, "transfer.unknown_wait_title", "transfer.unknown_wait", routes.Wallet, "transfer.see_history")
			}
			f.ErrorKey, f.ErrorArgs, f.ErrorField = "transfer.error_too_many_unknown", []any{"minutes", (secs + 59) / 60}, "to"
			return h.Render(c, fiber.StatusTooManyRequests, views.Transfer(h.Page(c, "transfer.title"), f))
		}
		defer func() {
			if unknown {
				place.Count()
			} else {
				place.Release()
			}
		}()
	}
	refused := func(err error) error {
		unknown = errors.Is(err, transfer.ErrRecipientNotFound)
		return h.transferRefused(c, f, err)
	}
	if h.FormValue(c, "confirmed") != "1" {
		// The form again after its transfer was made (Back, then
		// Continue): where that transfer stands.
		if done, err := h.answerMade(c, r); done || err != nil {
			return err
		}
		// Each page that names a recipient counts: the names behind a
		// list of addresses are not read off one after another.
		named := false
		if h.RecipientPreviews != nil {
			place, wait, ok := h.RecipientPreviews.Reserve(allowance)
			if !ok {
				secs := seam.RetryAfter(c, wait)
				f.ErrorKey, f.ErrorArgs, f.ErrorField = "transfer.error_too_many_previews", []any{"minutes", (secs + 59) / 60}, "to"
				return h.Render(c, fiber.StatusTooManyRequests, views.Transfer(h.Page(c, "transfer.title"), f))
			}
			defer func() {
				if named {
					place.Count()
				} else {
					place.Release()
				}
			}()
		}
		q, err := h.Transfers.Quote(c.UserContext(), r)
		if err != nil {
			return refused(err)
		}
		named = true
		f.Confirm = &views.TransferConfirmView{RecipientMasked: transfer.MaskEmail(q.RecipientEmail), RecipientName: q.RecipientName, AmountRials: rials,
			AmountWords: i18n.Words(h.Lang(c), rials/money.RialsPerToman), AfterRials: q.AfterRials, Note: f.Note}
		return h.Render(c, fiber.StatusOK, views.Transfer(h.Page(c, "transfer.confirm_title"), f))
	}
	res, err := h.Transfers.Send(c.UserContext(), r)
	if errors.Is(err, transfer.ErrTokenReused) {
		return h.Message(c, fiber.StatusConflict, "transfer.reused_title", "transfer.reused", routes.Transfer, "transfer.another")
	}
	if err != nil {
		return refused(err)
	}
	return c.Redirect(routes.TransferReceipt(res.Transfer.PublicID), fiber.StatusSeeOther)
}

// answerMade answers r when its form token made a transfer already
// (done: the answer is sent, or err); not done, nothing was written to c.
func (h *handlers) answerMade(c *fiber.Ctx, r transfer.Request) (done bool, err error) {
	first, err := h.Transfers.ByToken(c.UserContext(), r.SenderUserID, r.FormToken)
	switch {
	case errors.Is(err, transfer.ErrNotFound):
		return false, nil
	case err != nil:
		return true, err
	}
	return true, h.transferDone(c, r, first)
}

// transferDone answers a form whose token made a transfer already: its
// receipt when the form asks for the same, else "already sent".
func (h *handlers) transferDone(c *fiber.Ctx, r transfer.Request, first transfer.Transfer) error {
	if transfer.SameRequest(r, first) {
		return c.Redirect(routes.TransferReceipt(first.PublicID), fiber.StatusSeeOther)
	}
	return h.Message(c, fiber.StatusConflict, "transfer.reused_title", "transfer.reused", routes.Transfer, "transfer.another")
}

// isPace: a transfer refused by the sender's RATE_LIMIT_TRANSFERS.
func isPace(err error) bool {
	var pace *transfer.PaceError
	return errors.As(err, &pace)
}

// transferRefused shows the form again with the refusal's one sentence;
// nothing was written, and the form keeps its token.
func (h *handlers) transferRefused(c *fiber.Ctx, f views.TransferForm, err error) error {
	cfg := h.Transfers.Config()
	status := fiber.StatusUnprocessableEntity
	switch {
	case errors.Is(err, transfer.ErrSenderUnconfirmed):
		f.Unconfirmed, status = true, fiber.StatusForbidden
	case errors.Is(err, transfer.ErrInsufficientFunds):
		f.ErrorKey, f.ErrorArgs, f.ErrorField = "transfer.error_funds", []any{"available", i18n.Money(f.AvailableRials)}, "amount"
	case errors.Is(err, transfer.ErrRecipientNotFound):
		f.ErrorKey, f.ErrorField = "transfer.error_recipient", "to"
	case errors.Is(err, transfer.ErrToSelf):
		f.ErrorKey, f.ErrorField = "transfer.error_self", "to"
	case errors.Is(err, transfer.ErrDailyLimit):
		f.ErrorKey, f.ErrorArgs, f.ErrorField = "transfer.error_daily", []any{"limit", i18n.Money(cfg.DailyMaxRials)}, "amount"
	case errors.Is(err, transfer.ErrNoteTooLong):
		f.ErrorKey, f.ErrorField = "transfer.error_note_long", "note"
	case errors.Is(err, transfer.ErrNoteInvalid):
		f.ErrorKey, f.ErrorField = "transfer.error_note_invalid", "note"
	case errors.Is(err, transfer.ErrBadFormToken):
		f.ErrorKey, status = "transfer.error_form_expired", fiber.StatusBadRequest
	case isPace(err):
		var pace *transfer.PaceError
		errors.As(err, &pace)
		secs := seam.RetryAfter(c, pace.Wait)
		f.ErrorKey, f.ErrorArgs, status = "transfer.error_too_many", []any{"seconds", secs}, fiber.StatusTooManyRequests
	case errors.Is(err, money.ErrEmpty):
		f.ErrorKey, f.ErrorField = "transfer.error_empty", "amount"
	case errors.Is(err, money.ErrTooSmall):
		f.ErrorKey, f.ErrorArgs, f.ErrorField = "transfer.error_min", []any{"min", i18n.Money(cfg.MinRials)}, "amount"
	case errors.Is(err, money.ErrTooLarge), errors.Is(err, money.ErrTooLong):
		f.ErrorKey, f.ErrorField = "transfer.error_max", "amount"
	case errors.Is(err, money.ErrNotPositive):
		f.ErrorKey, f.ErrorField = "topup.error_positive", "amount"
	case isAmountError(err), errors.Is(err, money.ErrNegative), errors.Is(err, money.ErrDecimal):
		f.ErrorKey, f.ErrorField = "transfer.error_amount", "amount"
	default:
		return err
	}
	return h.Render(c, status, views.Transfer(h.Page(c, "transfer.title"), f))
}

// transferReceipt is GET /transfers/{id}: the receipt, for its sender and
// its recipient only (anyone else: 404, whether it exists or not).
func (h *handlers) transferReceipt(c *fiber.Ctx) error {
	u := h.User(c)
	t, err := h.Transfers.Get(c.UserContext(), u.ID, c.Params("id"))
	if errors.Is(err, transfer.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	v := views.TransferReceiptView{PublicID: t.PublicID, Sent: t.SenderUserID == u.ID, Who: t.Counterparty(u.ID), AmountRials: t.AmountRials,
		Note: t.Note, CreatedAt: t.CreatedAt}
	return h.Render(c, fiber.StatusOK, views.TransferReceipt(h.Page(c, "transfer.receipt_title"), v))
}
