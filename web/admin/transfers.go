package admin

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/transfer"
	adminview "github.com/kifpool/kifpool/views/admin"
)

func transferRow(t transfer.Transfer) adminview.TransferRow {
	return adminview.TransferRow{PublicID: t.PublicID, From: t.SenderEmail, To: t.RecipientEmail, AmountRials: t.AmountRials,
		Note: t.Note, CreatedAt: t.CreatedAt}
}

// transfers finds transfers by id or by either person's e-mail (the
// newest without a query).
func (h *handlers) transfers(c *fiber.Ctx) error {
	q := c.Query("q")
	ts, err := h.Transfers.Search(c.UserContext(), q, 100)
	if err != nil {
		return err
	}
	v := adminview.TransfersView{Query: q}
	for _, t := range ts {
		v.Transfers = append(v.Transfers, transferRow(t))
	}
	return h.Render(c, fiber.StatusOK, adminview.Transfers(h.Page(c, "admin.transfers.title"), v))
}

// transferDetail is one transfer with its ledger transactions (its own,
// and its reversal if an operator made one), each with its postings.
func (h *handlers) transferDetail(c *fiber.Ctx) error {
	ctx := c.UserContext()
	t, err := h.Transfers.Admin(ctx, c.Params("id"))
	if errors.Is(err, transfer.ErrNotFound) {
		return fiber.ErrNotFound
	}
	if err != nil {
		return err
	}
	v := adminview.TransferDetailView{Transfer: transferRow(t)}
	var txs []ledger.Transaction
	if lt, err := h.Ledger.ByReference(ctx, ledger.KindTransfer, t.PublicID); err == nil {
		txs = append(txs, lt)
		if rev, err := h.Ledger.ByReference(ctx, ledger.KindReversal, ledger.ReversalReference(lt.ID)); err == nil {
			txs = append(txs, rev)
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return err
	}
	rows, err := h.ledgerRows(ctx, txs)
	if err != nil {
		return err
	}
	v.Transactions = rows
	return h.Render(c, fiber.StatusOK, adminview.TransferDetail(h.Page(c, "admin.transfers.detail"), v))
}

// ledgerRows are ledger transactions as the console shows them, each
// posting with its account's code.
func (h *handlers) ledgerRows(ctx context.Context, txs []ledger.Transaction) ([]adminview.LedgerTransactionRow, error) {
	var out []adminview.LedgerTransactionRow
	for _, lt := range txs {
		row := adminview.LedgerTransactionRow{ID: lt.ID, Kind: string(lt.Kind), Reference: lt.Reference, CreatedAt: lt.CreatedAt}
		for _, ps := range lt.Postings {
			a, err := h.Ledger.Account(ctx, ps.AccountID)
			if err != nil {
				return nil, err
			}
			row.Postings = append(row.Postings, adminview.LedgerPostingRow{AccountCode: a.Code, AmountRials: ps.AmountRials,
				BalanceAfterRials: ps.BalanceAfterRials})
		}
		out = append(out, row)
	}
	return out, nil
}
