package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Wallet is the token owner's wallet.
type Wallet struct {
	BalanceRials int64     `json:"balance_rials"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// getWallet is GET /api/v1/wallet.
func (h *handler) getWallet(c *fiber.Ctx) error {
	w, err := h.Wallets.ForUser(c.UserContext(), principal(c).UserID)
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, Wallet{BalanceRials: w.BalanceRials, UpdatedAt: w.UpdatedAt.UTC()})
}

// LedgerEntry is one change of the balance.
type LedgerEntry struct {
	ID                int64     `json:"id"`
	Kind              string    `json:"kind"`
	AmountRials       int64     `json:"amount_rials"`
	BalanceAfterRials int64     `json:"balance_after_rials"`
	TopUpID           *string   `json:"topup_id"`
	RefID             *int64    `json:"ref_id"`
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
	items, next, err := h.Wallets.History(c.UserContext(), w.ID, before, limit)
	if err != nil {
		return err
	}
	page := LedgerPage{Items: []LedgerEntry{}, NextCursor: cursorString(next)}
	for _, it := range items {
		e := LedgerEntry{ID: it.ID, Kind: it.Kind, AmountRials: it.AmountRials, BalanceAfterRials: it.BalanceAfter, RefID: it.RefID, CreatedAt: it.CreatedAt.UTC()}
		if it.PaymentPublicID != "" {
			id := it.PaymentPublicID
			e.TopUpID = &id
		}
		page.Items = append(page.Items, e)
	}
	return sendJSON(c, fiber.StatusOK, page)
}
