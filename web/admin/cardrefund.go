package admin

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/topup"
	adminview "github.com/kifpool/kifpool/views/admin"
	"github.com/kifpool/kifpool/web/seam"
)

// "Refund to card" on a top-up's page: an admin gives part or all of a
// credited top-up back to the payer's card (cardrefund.Service.Start),
// after typing the second factor again; one under review is asked about
// again, or closed from the bank's own panel.

// cardRefundForm is the form as submitted, and what was wrong with it.
type cardRefundForm struct {
	Amount, Note string
	ErrorKey     string
	ErrorArgs    []any
}

// cardRefundsView is the section of the top-up's page (nil without the
// service).
func (h *handlers) cardRefundsView(c *fiber.Ctx, topUpID string, form cardRefundForm) (*adminview.CardRefundsView, error) {
	if h.CardRefunds == nil {
		return nil, nil
	}
	ctx := c.UserContext()
	st, err := h.CardRefunds.Offer(ctx, topUpID)
	if err != nil {
		return nil, err
	}
	o := st.Offer
	v := &adminview.CardRefundsView{TopUpPublicID: topUpID, OK: o.OK, Why: string(o.Why), Method: string(o.Method), MinRials: o.MinRials,
		MaxRials: o.MaxRials, Whole: o.Whole, LeftRials: o.LeftRials, SpentRials: o.SpentRials,
		Amount: form.Amount, Note: form.Note, ErrorKey: form.ErrorKey, ErrorArgs: form.ErrorArgs}
	if !o.Until.IsZero() {
		until := o.Until
		v.Until = &until
	}
	if o.OK && (v.Amount == "" || o.Whole) {
		// Tomans, in the page's digits, its odd rials after a decimal
		// mark (a top-up by the API need not be whole tomans, and a
		// whole refund must be its exact amount).
		v.Amount = i18n.TomansField(h.Lang(c), o.MaxRials)
	}
	ids := make([]int64, 0, len(st.Refunds))
	for _, r := range st.Refunds {
		ids = append(ids, r.AdminID)
	}
	emails, err := h.People.Emails(ctx, ids)
	if err != nil {
		return nil, err
	}
	l := h.Lang(c)
	for _, r := range st.Refunds {
		v.Refunds = append(v.Refunds, adminview.CardRefundRow{PublicID: r.PublicID, Status: string(r.Status),
			Reason: cardRefundReason(l, r.StatusReason), Method: string(r.Method), AmountRials: r.AmountRials, BankRef: r.BankReference,
			AdminEmail: emails[r.AdminID], Note: r.Note, CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
			UnderReview: r.Status == cardrefund.StatusNeedsReview})
	}
	return v, nil
}

// cardRefundReason is a card refund's reason in words ("" for none).
func cardRefundReason(l i18n.Lang, r cardrefund.Reason) string {
	if r == "" {
		return ""
	}
	key := "admin.cardrefund.reason." + string(r)
	if !i18n.Has(l, key) {
		return string(r)
	}
	return i18n.T(l, key)
}

// startedNotice is the ?done= of a started refund, as its row says: made,
// refused by the bank, never sent (its window closed, or the gateway went
// away: back in the wallet all the same, but no bank said no), held for
// the worker to send (the bank out of reach: nothing sent yet), or sent
// with its answer unknown.
func startedNotice(cr cardrefund.CardRefund) string {
	switch {
	case cr.Status == cardrefund.StatusRefunded:
		return "cardrefund_refunded"
	case cr.Status == cardrefund.StatusFailed && cr.StatusReason == cardrefund.ReasonBankRefused:
		return "cardrefund_failed"
	case cr.Status == cardrefund.StatusFailed:
		return "cardrefund_not_sent"
	case cr.Status == cardrefund.StatusHeld:
		return "cardrefund_queued"
	}
	return "cardrefund_submitted"
}

// cardRefundNotice turns ?done= of a card refund action's redirect into a
// message key and its kind ("", "" for none of them).
func cardRefundNotice(done string) (key, kind string) {
	switch done {
	case "cardrefund_refunded", "cardrefund_submitted", "cardrefund_queued", "cardrefund_recheck", "cardrefund_closed":
		return "admin.cardrefund.done." + done, "ok"
	case "cardrefund_failed", "cardrefund_not_sent", "cardrefund_busy", "cardrefund_not_review", "cardrefund_in_progress":
		return "admin.cardrefund.done." + done, "error"
	}
	return "", ""
}

// backToTopUp sends the admin back to the top-up's page with a result.
func backToTopUp(c *fiber.Ctx, topUpID, done string) error {
	return c.Redirect(routes.AdminTopUp(topUpID)+"?done="+done, fiber.StatusSeeOther)
}

// startCardRefund is POST …/card-refund: amount (tomans), note, code (the
// second factor again). Input the offer refuses re-renders the page with
// 422 (or 429 for too many codes) and changes nothing.
func (h *handlers) startCardRefund(c *fiber.Ctx) error {
	id := c.Params("id")
	if !topup.ValidPublicID(id) || h.CardRefunds == nil {
		return fiber.ErrNotFound
	}
	seam.WithTopUp(c, id)
	ctx := c.UserContext()
	form := cardRefundForm{Amount: h.FormValue(c, "amount"), Note: h.FormValue(c, "note")}
	refuse := func(status int, key string, args ...any) error {
		form.ErrorKey, form.ErrorArgs = key, args
		return h.renderTopUpDetail(c, status, form)
	}
	st, err := h.CardRefunds.Offer(ctx, id)
	if errors.Is(err, cardrefund.ErrTopUpNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	rials, err := money.ParseTomansRials(form.Amount) // typed in tomans (one digit after a decimal mark: rials), read in rials
	switch {
	case st.TopUp.UserID == h.User(c).ID:
		// Before the code: a refusal that needs none spends none (the
		// use case refuses it again).
		return refuse(fiber.StatusForbidden, "admin.cardrefund.error.own")
	case !st.Offer.OK:
		return refuse(fiber.StatusConflict, "admin.cardrefund.why."+string(st.Offer.Why))
	case err != nil:
		return refuse(fiber.StatusUnprocessableEntity, "admin.cardrefund.error.amount")
	case st.Offer.Check(rials) != nil:
		if st.Offer.Whole {
			return refuse(fiber.StatusUnprocessableEntity, "admin.cardrefund.whole", "amount", i18n.Tomans(h.Lang(c), st.Offer.MaxRials))
		}
		l := h.Lang(c)
		return refuse(fiber.StatusUnprocessableEntity, "admin.cardrefund.range",
			"min", i18n.Tomans(l, st.Offer.MinRials), "max", i18n.Tomans(l, st.Offer.MaxRials))
	case cardrefund.CheckNote(form.Note) != nil:
		return refuse(fiber.StatusUnprocessableEntity, "admin.cardrefund.error.note")
	}
	// The second factor again, only for input the offer takes: a code is
	// spent once.
	if ok, r, err := h.secondFactor(c); err != nil {
		return err
	} else if !ok {
		return refuse(r.status, r.key, r.args...)
	}
	u := h.User(c)
	cr, err := h.CardRefunds.Start(ctx, cardrefund.StartRequest{TopUpPublicID: id, AmountRials: rials, AdminID: u.ID, Note: form.Note})
	switch {
	case errors.Is(err, cardrefund.ErrOwnTopUp):
		return refuse(fiber.StatusForbidden, "admin.cardrefund.error.own")
	case errors.Is(err, cardrefund.ErrNoteRequired):
		return refuse(fiber.StatusUnprocessableEntity, "admin.cardrefund.error.note")
	case errors.Is(err, cardrefund.ErrInProgress):
		return backToTopUp(c, id, "cardrefund_in_progress")
	case errors.Is(err, cardrefund.ErrNotOffered), errors.Is(err, cardrefund.ErrAmountTooSmall), errors.Is(err, cardrefund.ErrAmountTooLarge),
		errors.Is(err, cardrefund.ErrOverRefunded), errors.Is(err, cardrefund.ErrSpent), errors.Is(err, cardrefund.ErrTopUpNotFound):
		// The figures changed since the page was read: look again.
		return refuse(fiber.StatusConflict, "admin.cardrefund.error.changed")
	case err != nil:
		return err
	}
	h.Log.WarnContext(ctx, "admin refunded a top-up to the card", "topup", id, "card_refund", cr.PublicID, "admin", u.ID,
		"amount", cr.AmountRials, "status", cr.Status)
	return backToTopUp(c, id, startedNotice(cr))
}

// secondFactor checks the form's code as a fresh second factor: ok when
// it passed, else the status and message of the refusal (err: neither).
func (h *handlers) secondFactor(c *fiber.Ctx) (ok bool, refusal cardRefundRefusal, err error) {
	err = h.Auth.ConfirmSecondFactor(c.UserContext(), h.User(c).ID, h.FormValue(c, "code"))
	var throttled *auth.ThrottledError
	switch {
	case err == nil:
		return true, cardRefundRefusal{}, nil
	case errors.As(err, &throttled):
		secs := int64(throttled.RetryAfter.Seconds() + 0.999)
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(secs, 10))
		return false, cardRefundRefusal{fiber.StatusTooManyRequests, "twofa.throttled", []any{"seconds", secs}}, nil
	case errors.Is(err, auth.ErrCodeInvalid), errors.Is(err, auth.ErrTOTPNotEnrolled):
		h.Log.WarnContext(c.UserContext(), "admin action refused: wrong second factor", "user", h.User(c).ID, "path", c.Path())
		return false, cardRefundRefusal{fiber.StatusUnprocessableEntity, "admin.cardrefund.error.code", nil}, nil
	}
	return false, cardRefundRefusal{}, err
}

// cardRefundRefusal is a refused card refund form: its status and message.
type cardRefundRefusal struct {
	status int
	key    string
	args   []any
}

// reviewTarget checks the ids of a card refund action's path: the card
// refund must be the top-up's.
func (h *handlers) reviewTarget(c *fiber.Ctx) (topUpID, refundID string, err error) {
	topUpID, refundID = c.Params("id"), c.Params("refund")
	if !topup.ValidPublicID(topUpID) || !cardrefund.ValidPublicID(refundID) || h.CardRefunds == nil {
		return "", "", fiber.ErrNotFound
	}
	seam.WithTopUp(c, topUpID)
	st, err := h.CardRefunds.Offer(c.UserContext(), topUpID)
	if errors.Is(err, cardrefund.ErrTopUpNotFound) {
		return "", "", fiber.ErrNotFound
	}
	if err != nil {
		return "", "", err
	}
	for _, r := range st.Refunds {
		if r.PublicID == refundID {
			return topUpID, refundID, nil
		}
	}
	return "", "", fiber.ErrNotFound
}

// recheckCardRefund asks the bank again about a card refund under review.
func (h *handlers) recheckCardRefund(c *fiber.Ctx) error {
	topUpID, refundID, err := h.reviewTarget(c)
	if err != nil {
		return err
	}
	cr, err := h.CardRefunds.Recheck(c.UserContext(), refundID, h.User(c).ID)
	switch {
	case errors.Is(err, cardrefund.ErrNotUnderReview):
		return backToTopUp(c, topUpID, "cardrefund_not_review")
	case errors.Is(err, cardrefund.ErrBusy):
		return backToTopUp(c, topUpID, "cardrefund_busy")
	case errors.Is(err, cardrefund.ErrBankMadeIt):
		// Asked first: the bank's record shows it made (or may hold it).
		return h.renderTopUpDetail(c, fiber.StatusConflict, cardRefundForm{ErrorKey: "admin.cardrefund.error.bank_made"})
	case errors.Is(err, cardrefund.ErrBankNoAnswer):
		return h.renderTopUpDetail(c, fiber.StatusConflict, cardRefundForm{ErrorKey: "admin.cardrefund.error.bank_no_answer"})
	case err != nil:
		return err
	}
	h.Log.WarnContext(c.UserContext(), "admin asked the bank again about a card refund", "card_refund", refundID, "status", cr.Status)
	return backToTopUp(c, topUpID, "cardrefund_recheck")
}

// closeCardRefund closes a card refund under review as made at the bank
// (made=yes: refunded) or not (made=no: failed, the money back to the
// wallet), with a note and the second factor again.
func (h *handlers) closeCardRefund(c *fiber.Ctx) error {
	topUpID, refundID, err := h.reviewTarget(c)
	if err != nil {
		return err
	}
	made := h.FormValue(c, "made")
	note := h.FormValue(c, "note")
	if (made != "yes" && made != "no") || cardrefund.CheckNote(note) != nil {
		return h.renderTopUpDetail(c, fiber.StatusUnprocessableEntity, cardRefundForm{ErrorKey: "admin.cardrefund.error.close"})
	}
	if cr, _, err := h.CardRefunds.Get(c.UserContext(), refundID); err == nil && cr.UserID == h.User(c).ID {
		// Before the code, as the start's (the use case refuses it again).
		return h.renderTopUpDetail(c, fiber.StatusForbidden, cardRefundForm{ErrorKey: "admin.cardrefund.error.own"})
	}
	if ok, r, err := h.secondFactor(c); err != nil {
		return err
	} else if !ok {
		return h.renderTopUpDetail(c, r.status, cardRefundForm{ErrorKey: r.key, ErrorArgs: r.args})
	}
	_, err = h.CardRefunds.Close(c.UserContext(), refundID, h.User(c).ID, made == "yes", note)
	switch {
	case errors.Is(err, cardrefund.ErrOwnTopUp):
		return h.renderTopUpDetail(c, fiber.StatusForbidden, cardRefundForm{ErrorKey: "admin.cardrefund.error.own"})
	case errors.Is(err, cardrefund.ErrNoteRequired):
		return h.renderTopUpDetail(c, fiber.StatusUnprocessableEntity, cardRefundForm{ErrorKey: "admin.cardrefund.error.close"})
	case errors.Is(err, cardrefund.ErrNotUnderReview):
		return backToTopUp(c, topUpID, "cardrefund_not_review")
	case errors.Is(err, cardrefund.ErrBusy):
		return backToTopUp(c, topUpID, "cardrefund_busy")
	case errors.Is(err, cardrefund.ErrBankMadeIt):
		// Asked first: the bank's record shows it made (or may hold it).
		return h.renderTopUpDetail(c, fiber.StatusConflict, cardRefundForm{ErrorKey: "admin.cardrefund.error.bank_made"})
	case errors.Is(err, cardrefund.ErrBankNoAnswer):
		return h.renderTopUpDetail(c, fiber.StatusConflict, cardRefundForm{ErrorKey: "admin.cardrefund.error.bank_no_answer"})
	case err != nil:
		return err
	}
	h.Log.WarnContext(c.UserContext(), "admin closed a card refund under review", "card_refund", refundID, "made", made)
	return backToTopUp(c, topUpID, "cardrefund_closed")
}
