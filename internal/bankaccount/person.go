package bankaccount

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// SamePerson is the users who gave userID's national code, userID among
// them, in ascending id: one person, however many accounts it opened.
// userID alone when it has none on file. Limits that bind a person (Paya
// and Satna cap a person's orders a day by national code) count over
// them all.
//
// With lock, their national_codes rows stay locked until tx ends
// (PostgreSQL; SQLite's writers take turns), taken in id order so that
// two of the person's writes wait for each other instead of crossing: a
// count read after it sees every write of the person's that came first.
func SamePerson(tx *gorm.DB, dialect store.Dialect, userID int64, lock bool) ([]int64, error) {
	q := `SELECT user_id FROM national_codes
		WHERE national_code = (SELECT national_code FROM national_codes WHERE user_id = ?) ORDER BY user_id`
	if lock && dialect == store.Postgres {
		q += ` FOR UPDATE`
	}
	var ids []int64
	if err := store.Scan(tx.Raw(q, userID), &ids); err != nil {
		return nil, fmt.Errorf("accounts of the person of user %d: %w", userID, err)
	}
	if !slices.Contains(ids, userID) {
		ids = append(ids, userID)
	}
	return ids, nil
}
