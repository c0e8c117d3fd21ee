package integrity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Accounts of bank Melli (017) whose canonical check digits are 97, 98
// and 02, the ones 00, 01 and 99 alias (internal/iban's test vectors).
const (
	bban97 = "0170000000000000000011"
	bban98 = "0170000000000000000090"
	bban02 = "0170000000000000000072"
)

// The rule's aliases are iban's: each is refused by iban.Parse, and the
// spelling it stands for is the one iban.CheckDigits computes, which
// Parse accepts.
func TestShebaAliasesAreIbans(t *testing.T) {
	bbans := map[string]string{"97": bban97, "98": bban98, "02": bban02}
	aliases := integrity.ShebaAliases()
	if len(aliases) != 3 {
		t.Fatalf("aliases %v, want 00, 01 and 99", aliases)
	}
	for _, a := range aliases {
		bban, ok := bbans[a[1]]
		if !ok {
			t.Fatalf("alias %s stands for %s, no check digits of a known example", a[0], a[1])
		}
		if cd := iban.CheckDigits(bban); cd != a[1] {
			t.Errorf("iban.CheckDigits(%s) = %s, the rule says %s", bban, cd, a[1])
		}
		if _, err := iban.Parse("IR" + a[1] + bban); err != nil {
			t.Errorf("canonical IR%s%s: %v", a[1], bban, err)
		}
		if _, err := iban.Parse("IR" + a[0] + bban); !errors.Is(err, iban.ErrChecksum) {
			t.Errorf("alias IR%s%s: %v, want %v", a[0], bban, err, iban.ErrChecksum)
		}
	}
}

// seedBankAccounts stores, beside seed's user 1, a user 2 and bank
// accounts as they were before iban.Parse refused alias check digits:
//   - 11: user 1's IR00…0011 (an alias of 97), and 12 the same account
//     in its canonical spelling, added again since;
//   - 13: user 1's IR01…0090 (an alias of 98), alone;
//   - 14: user 1's IR02…0072, canonical;
//   - 15: user 2's IR99…0072 (an alias of 02): user 1's account 14 is
//     another person's, no duplicate of it.
func seedBankAccounts(t *testing.T, db *store.DB, now time.Time) {
	t.Helper()
	at := now.Add(-time.Hour).UTC()
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (id, email, password_hash, role, locale, created_at) VALUES (2, 'ali@example.com', 'x', 'user', 'fa', ?)`, []any{at}},
		{`INSERT INTO bank_accounts (id, user_id, sheba, bank_code, status, created_at, updated_at) VALUES
			(11, 1, ?, '017', 'verified', ?, ?), (12, 1, ?, '017', 'pending_review', ?, ?), (13, 1, ?, '017', 'rejected', ?, ?),
			(14, 1, ?, '017', 'verified', ?, ?), (15, 2, ?, '017', 'verified', ?, ?)`,
			[]any{"IR00" + bban97, at, at, "IR97" + bban97, at, at, "IR01" + bban98, at, at, "IR02" + bban02, at, at, "IR99" + bban02, at, at}},
	}
	for _, s := range stmts {
		if err := db.Gorm.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("seed %s: %v", s.sql, err)
		}
	}
}

// TestShebaAliasesNamed: each stored bank account spelt with alias check
// digits is named, once, by its id, with its Sheba masked (as in logs)
// and the user's account of the canonical spelling when there is one; a
// canonical account is never named, nor an alias taken for a duplicate
// of another user's account.
func TestShebaAliasesNamed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Now()
		seed(t, db, now)
		seedWithdrawals(t, db, now) // bank account 1, IR82…, canonical
		seedBankAccounts(t, db, now)
		rep, err := integrity.Check(context.Background(), db, options(now))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, v := range rep.Violations() {
			if v.Rule != "bank_account_sheba_canonical" {
				t.Errorf("another rule broken: %v", v)
				continue
			}
			if _, twice := got[v.Subject]; twice {
				t.Errorf("%s named twice", v.Subject)
			}
			got[v.Subject] = v.Detail
		}
		want := map[string]string{
			"bank account 11": "user 1, verified, " + iban.Sheba("IR00"+bban97).Masked() +
				": check digits 00 spell 97, the same account as bank account 12 (pending_review)",
			"bank account 13": "user 1, rejected, " + iban.Sheba("IR01"+bban98).Masked() + ": check digits 01 spell 98, not stored in that spelling",
			"bank account 15": "user 2, verified, " + iban.Sheba("IR99"+bban02).Masked() + ": check digits 99 spell 02, not stored in that spelling",
		}
		for subject, detail := range want {
			if got[subject] != detail {
				t.Errorf("%s: detail %q, want %q", subject, got[subject], detail)
			}
		}
		for subject, detail := range got {
			if _, ok := want[subject]; !ok {
				t.Errorf("%s named (%s): its Sheba is canonical", subject, detail)
			}
			for _, full := range []string{bban97, bban98, bban02} {
				if strings.Contains(detail, full) {
					t.Errorf("%s: detail %q shows the whole account number", subject, detail)
				}
			}
		}
	})
}
