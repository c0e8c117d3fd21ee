package ledger

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// LockAccounts locks accounts in tx in ascending id order, the one global
// order every posting takes its locks in: a transaction that then posts
// two movements (a capture into an account in flight, then on to a
// gateway's clearing) takes every lock it needs at once, in that order,
// and cannot deadlock with a single movement (a top-up's credit) that
// takes two of them. On SQLite, whose writer holds the database, there
// is nothing to lock.
func (l *Ledger) LockAccounts(tx *gorm.DB, ids ...int64) error {
	if l.db.Dialect != store.Postgres || len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var got []int64
	if err := store.Scan(tx.Raw(`SELECT id FROM ledger_accounts WHERE id IN ? ORDER BY id FOR NO KEY UPDATE`, ids), &got); err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	if len(got) != len(ids) {
		return fmt.Errorf("lock accounts: %d of %d: %w", len(got), len(ids), ErrAccountNotFound)
	}
	return nil
}
