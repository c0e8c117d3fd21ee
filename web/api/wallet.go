package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/withdrawal"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Wallet is the token owner's wallet: its posted balance, what holds
// reserve of it, and what may be spent (available = balance − held).
type Wallet struct {
	BalanceRials   int64     `json:"balance_rials"`
	AvailableRials int64     `json:"available_rials"`
	HeldRials      int64     `json:"held_rials"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// getWallet is GET /api/v1/wallet.
func (h *handler) getWallet(c *fiber.Ctx) error {
	// A user without a wallet yet (made before wallets were) has an empty
	// one, never moved: every figure 0, updated_at the zero time.
	w, err := h.Wallets.Figures(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, Wallet{BalanceRials: w.BalanceRials, AvailableRials: w.AvailableRials(), HeldRials: w.HeldRials,
		UpdatedAt: w.UpdatedAt.UTC()})
}

// LedgerEntry is one ledger transaction that changed the balance: its
// kind, the signed amount it moved on this wallet and the balance after.
type LedgerEntry struct {
	ID                int64   `json:"id"`
	Kind              string  `json:"kind"`
	AmountRials       int64   `json:"amount_rials"`
	BalanceAfterRials int64   `json:"balance_after_rials"`
	TopUpID           *string `json:"topup_id"`
	RefID             *int64  `json:"ref_id"`
	ReversesID        *int64  `json:"reverses_id"`
	Note              string  `json:"note"`
	// Withdrawal names the bank account of a withdrawal's transaction
	// (kind withdrawal or withdrawal_return; null for the others).
	Withdrawal *LedgerWithdrawal `json:"withdrawal"`
	CreatedAt  time.Time         `json:"created_at"`
}

// LedgerWithdrawal is the withdrawal a ledger entry belongs to, with the
// history's words for it in both languages ("to your account at {bank}
// …1234", "back from …" for a return).
type LedgerWithdrawal struct {
	ID            string `json:"id"`
	Bank          Bank   `json:"bank"`
	IBANLast4     string `json:"iban_last4"`
	DescriptionFA string `json:"description_fa"`
	DescriptionEN string `json:"description_en"`
}

func ledgerWithdrawal(w withdrawal.Withdrawal, kind ledger.Kind) *LedgerWithdrawal {
	key := "withdraw.history_to"
	if kind == ledger.KindWithdrawalReturn {
		key = "withdraw.history_back"
	}
	b := bankOf(w.BankCode)
	return &LedgerWithdrawal{ID: w.PublicID, Bank: b, IBANLast4: w.Last4(),
		DescriptionFA: i18n.T(i18n.FA, key, "bank", b.NameFA, "last4", i18n.Digits(i18n.FA, w.Last4())),
		DescriptionEN: i18n.T(i18n.EN, key, "bank", b.NameEN, "last4", w.Last4())}
}

// LedgerPage is a page of ledger entries.
type LedgerPage struct {
	Items      []LedgerEntry `json:"items"`
	NextCursor *string       `json:"next_cursor"`
}

// listLedger is GET /api/v1/wallet/ledger: newest first, keyset paginated.
func (h *handler) listLedger(c *fiber.Ctx) error {
	before, limit, detail := cursorParams(c)
	if detail != "" {
		return problem(c, CodeInvalidParameter, detail)
	}
	w, err := h.Wallets.Figures(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	if w.ID == 0 { // no wallet yet: nothing ever moved
		return sendJSON(c, fiber.StatusOK, LedgerPage{Items: []LedgerEntry{}})
	}
	items, next, err := h.Wallets.History(c.UserContext(), w, before, limit)
	if err != nil {
		return err
	}
	// A withdrawal's transactions carry its public id as their note.
	var ids []string
	for _, it := range items {
		if (it.Kind == ledger.KindWithdrawal || it.Kind == ledger.KindWithdrawalReturn) && withdrawal.ValidPublicID(it.Note) {
			ids = append(ids, it.Note)
		}
	}
	wds := map[string]withdrawal.Withdrawal{}
	if len(ids) > 0 && h.Withdrawals != nil {
		if wds, err = h.Withdrawals.ByPublicIDs(c.UserContext(), principal(c).UserID, ids); err != nil {
			return err
		}
	}
	page := LedgerPage{Items: []LedgerEntry{}, NextCursor: cursorString(next)}
	for _, it := range items {
		e := LedgerEntry{ID: it.TransactionID, Kind: string(it.Kind), AmountRials: it.AmountRials, BalanceAfterRials: it.BalanceAfterRials,
			RefID: it.RefID, ReversesID: it.ReversesID, Note: it.Note, CreatedAt: it.CreatedAt.UTC()}
		if it.TopUpPublicID != "" {
			id := it.TopUpPublicID
			e.TopUpID = &id
		}
		if w, ok := wds[it.Note]; ok && (it.Kind == ledger.KindWithdrawal || it.Kind == ledger.KindWithdrawalReturn) {
			e.Withdrawal = ledgerWithdrawal(w, it.Kind)
		}
		page.Items = append(page.Items, e)
	}
	return sendJSON(c, fiber.StatusOK, page)
}
