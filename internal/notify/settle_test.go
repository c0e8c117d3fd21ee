package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/notify"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

// A transfer's mails go out once it is older than Settle; and on
// PostgreSQL, a transaction that wrote a transfer and is still open when
// the scan runs, older than Settle or not, holds the scan's cursor back:
// transfers inserted after it began (with higher ids) wait, whatever time
// the app stamped on them, and once the open one commits, all are mailed. (The cursor used to move past the
// open transaction's lower id for good once a later transfer was older
// than Settle: that transfer's mails were never sent.)
func TestScanWaitsForAnOpenWriter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		// The database's own clock dates the open transaction: the test's
		// clock starts at the real time.
		clk := testclock.New(time.Now().UTC().Truncate(time.Microsecond))
		users := auth.NewService(db, auth.Options{Now: clk.Now, BcryptCost: bcrypt.MinCost})
		a, err := users.SignUp(ctx, "settle-a@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		b, err := users.SignUp(ctx, "settle-b@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		n := notify.New(db, "https://kifpool.example", config.Operator{}, clk.Now, nil)
		mails := func() int64 {
			t.Helper()
			return storetest.Count(t, db, `SELECT COUNT(*) FROM mails WHERE kind <> ?`, notify.KindVerify)
		}
		seq := 0
		insert := func(tx *gorm.DB, at time.Time) {
			t.Helper()
			seq++
			if err := tx.Exec(`INSERT INTO transfers (public_id, sender_user_id, recipient_user_id, amount_rials, note, form_token, created_at)
				VALUES (?, ?, ?, 10000, '', ?, ?)`, fmt.Sprintf("tr_settle%d", seq), a.ID, b.ID, fmt.Sprint("settle-", seq), at).Error; err != nil {
				t.Fatal(err)
			}
		}
		scan := func() int {
			t.Helper()
			q, err := n.ScanTransfers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}

		// Committed, then older than Settle: mailed to both.
		insert(db.Gorm, clk.Now())
		if q := scan(); q != 0 {
			t.Fatalf("a transfer younger than Settle: %d mails", q)
		}
		clk.Add(n.Settle + time.Second)
		if q := scan(); q != 2 || mails() != 2 {
			t.Fatalf("a settled transfer: %d mails queued, %d in all; want 2", q, mails())
		}
		if db.Dialect != store.Postgres {
			return // SQLite's writers take turns: no id commits behind a higher one
		}

		// One transaction writes a transfer and stays open; two transfers
		// commit after it, with higher ids; all grow older than Settle by
		// the test's clock. The first of them was stamped long before (by
		// the app, before a stall): its time says nothing of when its id was
		// taken; the database's time of its insert does.
		// A transfer committed well before the writer began is not held by
		// it: its insert dated a minute back by the database's clock (past
		// the rule's one second of margin), as if it came a minute earlier.
		insert(db.Gorm, clk.Now())
		if err := db.Gorm.Exec(`UPDATE transfers SET inserted_at = clock_timestamp() - interval '1 minute' WHERE public_id = ?`,
			fmt.Sprintf("tr_settle%d", seq)).Error; err != nil {
			t.Fatal(err)
		}
		open := db.Gorm.Begin()
		if open.Error != nil {
			t.Fatal(open.Error)
		}
		defer open.Rollback()
		insert(open, clk.Now())
		insert(db.Gorm, clk.Now().Add(-3*n.Settle))
		insert(db.Gorm, clk.Now())
		clk.Add(n.Settle + time.Second)
		if q := scan(); q != 2 {
			t.Fatalf("with a writer still open: %d mails queued, want the earlier transfer's 2 and the later ones held back", q)
		}
		if err := open.Commit().Error; err != nil {
			t.Fatal(err)
		}
		if q := scan(); q != 6 || mails() != 10 {
			t.Fatalf("once it committed: %d mails queued, %d in all; want the three transfers' 6", q, mails())
		}
	})
}
