package bankaccount

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// SamePerson is the users who gave userID's national code and have a
// verified bank account (the provider's word that a Sheba of theirs is
// that code's), userID among them, in ascending id: one person, however
// many accounts it opened. userID alone when it has no code on file, or
// no verified account itself. Limits
// that bind a person (Paya and Satna cap a person's orders a day by
// national code) count over them all. A code given without that word
// (the inquiry unanswered, the account rejected) joins no one: typing
// someone's code must not read or spend their day.
//
// With lock, their national_codes rows stay locked until tx ends
// (PostgreSQL; SQLite's writers take turns), taken in id order so that
// two of the person's writes wait for each other instead of crossing: a
// count read after it sees every write of the person's that came first.
func SamePerson(tx *gorm.DB, dialect store.Dialect, userID int64, lock bool) ([]int64, error) {
	q := `SELECT n.user_id FROM national_codes n
		WHERE n.national_code = (SELECT national_code FROM national_codes WHERE user_id = ?)
		AND EXISTS (SELECT 1 FROM bank_accounts b WHERE b.user_id = n.user_id AND b.status = 'verified')
		ORDER BY n.user_id`
	if lock && dialect == store.Postgres {
		q += ` FOR UPDATE OF n`
	}
	var ids []int64
	if err := store.Scan(tx.Raw(q, userID), &ids); err != nil {
		return nil, fmt.Errorf("accounts of the person of user %d: %w", userID, err)
	}
	if !slices.Contains(ids, userID) {
		// No verified account of its own: alone (and it withdraws nothing).
		return []int64{userID}, nil
	}
	return ids, nil
}
