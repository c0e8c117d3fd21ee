package wallet

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/views"
)

const historyPageSize = 20

func (h *handlers) walletPage(c *fiber.Ctx) error {
	u := h.User(c)
	before, err := beforeCursor(c)
	if err != nil {
		return err
	}
	w, err := h.Wallets.Figures(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	items, next, err := h.Wallets.History(c.UserContext(), w, before, historyPageSize)
	if err != nil {
		return err
	}
	v := views.WalletView{BalanceRials: w.BalanceRials, HeldRials: w.HeldRials, AvailableRials: w.AvailableRials(), NextCursor: next, HasNewer: before > 0}
	open, err := h.Reads.OpenForUser(c.UserContext(), u.ID, 10)
	if err != nil {
		return err
	}
	ids := make([]int64, len(open))
	for i, p := range open {
		ids[i] = p.ID
	}
	dismissed, err := h.Reads.Dismissed(c.UserContext(), u.ID, ids)
	if err != nil {
		return err
	}
	for _, p := range open {
		if dismissed[p.ID] {
			continue // the payer will not pay it: not "in progress" for them
		}
		v.Open = append(v.Open, views.OpenTopUpRow{PublicID: p.PublicID, AmountRials: p.AmountRials, Status: string(p.Status.Public()), CreatedAt: p.CreatedAt})
	}
	// A transfer's row says who it went to or came from: its ledger
	// reference is the transfer's id.
	var refs []string
	for _, it := range items {
		if it.Kind == ledger.KindTransfer {
			refs = append(refs, it.Reference)
		}
	}
	transfers, err := h.Transfers.ByReferences(c.UserContext(), u.ID, refs)
	if err != nil {
		return err
	}
	wds, err := h.withdrawalsOf(c, u.ID, items)
	if err != nil {
		return err
	}
	charges, err := h.chargesOf(c, u.ID, items)
	if err != nil {
		return err
	}
	for _, it := range items {
		row := views.HistoryRow{AmountRials: it.AmountRials, BalanceAfter: it.BalanceAfterRials, Kind: string(it.Kind), CreatedAt: it.CreatedAt,
			TopUpPublicID: it.TopUpPublicID, Note: it.Note}
		if it.RefID != nil {
			row.RefID = *it.RefID
		}
		if t, ok := transfers[it.Reference]; ok && it.Kind == ledger.KindTransfer {
			row.TransferID, row.Who, row.Sent = t.PublicID, t.Counterparty(u.ID), t.SenderUserID == u.ID
		}
		if ch, ok := charges[it.Reference]; ok && isChargeKind(it.Kind) {
			row.ChargeID, row.Merchant, row.Refund = ch.PublicID, ch.MerchantName, it.Kind == ledger.KindRefund
		}
		if w, ok := wds[it.Note]; ok && (it.Kind == ledger.KindWithdrawal || it.Kind == ledger.KindWithdrawalReturn) {
			row.WithdrawalPublicID, row.BankCode, row.Last4 = w.PublicID, w.BankCode, w.Last4()
		}
		v.Rows = append(v.Rows, row)
	}
	if h.Charges != nil {
		if _, err := h.Charges.Merchant(c.UserContext(), u.ID); err == nil {
			v.Merchant = true
		} else if !errors.Is(err, charge.ErrNotMerchant) {
			return err
		}
	}
	return h.Render(c, fiber.StatusOK, views.Wallet(h.Page(c, "wallet.title"), v))
}

// isChargeKind: a line of a charge (paid at once, captured from a hold,
// or refunded).
func isChargeKind(k ledger.Kind) bool {
	return k == ledger.KindCharge || k == ledger.KindCapture || k == ledger.KindRefund
}

// chargesOf are the charges the history's lines belong to, by their
// ledger references ("paid to {merchant}", "refund from {merchant}").
func (h *handlers) chargesOf(c *fiber.Ctx, userID int64, items []wallet.HistoryItem) (map[string]charge.Charge, error) {
	if h.Charges == nil {
		return nil, nil
	}
	var refs []string
	for _, it := range items {
		if isChargeKind(it.Kind) {
			refs = append(refs, it.Reference)
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return h.Charges.ByReferences(c.UserContext(), userID, refs)
}

// withdrawalsOf are the withdrawals the history's lines belong to (a
// withdrawal's transactions carry its public id as their note).
func (h *handlers) withdrawalsOf(c *fiber.Ctx, userID int64, items []wallet.HistoryItem) (map[string]withdrawal.Withdrawal, error) {
	if h.Withdrawals == nil {
		return nil, nil
	}
	var ids []string
	for _, it := range items {
		if (it.Kind == ledger.KindWithdrawal || it.Kind == ledger.KindWithdrawalReturn) && withdrawal.ValidPublicID(it.Note) {
			ids = append(ids, it.Note)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return h.Withdrawals.ByPublicIDs(c.UserContext(), userID, ids)
}

// beforeCursor is a list's ?before= (the keyset cursor: a positive id;
// 0 without one), 400 when it is not one.
func beforeCursor(c *fiber.Ctx) (int64, error) {
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
