package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
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
	w, err := h.Wallets.ForUser(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, Wallet{BalanceRials: w.BalanceRials, AvailableRials: w.AvailableRials(), HeldRials: w.HeldRials,
		UpdatedAt: w.UpdatedAt.UTC()})
}

// LedgerEntry is one ledger transaction that changed the balance: its
// kind, the signed amount it moved on this wallet and the balance after.
type LedgerEntry struct {
	ID                int64     `json:"id"`
	Kind              string    `json:"kind"`
	AmountRials       int64     `json:"amount_rials"`
	BalanceAfterRials int64     `json:"balance_after_rials"`
	TopUpID           *string   `json:"topup_id"`
	RefID             *int64    `json:"ref_id"`
	ReversesID        *int64    `json:"reverses_id"`
	Note              string    `json:"note"`
	CreatedAt         time.Time `json:"created_at"`
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
	w, err := h.Wallets.ForUser(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	items, next, err := h.Wallets.History(c.UserContext(), w, before, limit)
	if err != nil {
		return err
	}
	page := LedgerPage{Items: []LedgerEntry{}, NextCursor: cursorString(next)}
	for _, it := range items {
		e := LedgerEntry{ID: it.TransactionID, Kind: string(it.Kind), AmountRials: it.AmountRials, BalanceAfterRials: it.BalanceAfterRials,
			RefID: it.RefID, ReversesID: it.ReversesID, Note: it.Note, CreatedAt: it.CreatedAt.UTC()}
		if it.TopUpPublicID != "" {
			id := it.TopUpPublicID
			e.TopUpID = &id
		}
		page.Items = append(page.Items, e)
	}
	return sendJSON(c, fiber.StatusOK, page)
}
