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
		clk, n, insert, scan, mails := settleFixture(t, db)

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
		if err := db.Gorm.Exec(`UPDATE transfers SET inserted_at = clock_timestamp() - interval '1 minute'
			WHERE id = (SELECT MAX(id) FROM transfers)`).Error; err != nil {
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

// settleFixture is a mail scan of transfers between two new people on db:
// the test's clock (at the real time: the database's own clock dates
// transactions), the notifier, insert (a transfer through tx, created at
// at by the app's clock), scan (ScanTransfers' count of mails queued) and
// mails (every mail queued but the sign-up's).
func settleFixture(t *testing.T, db *store.DB) (*testclock.Clock, *notify.Notifier, func(tx *gorm.DB, at time.Time), func() int, func() int64) {
	t.Helper()
	ctx := context.Background()
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
	return clk, n, insert, scan, mails
}

// A writer that begins between the scan's look at the table's open
// writers and its read of the rows (so the look did not see it) holds a
// lower id than a transfer committed after it: that later transfer, old
// by the app's clock, waits too, and once the writer commits both are
// mailed. (Had the scan passed the later transfer, the cursor would have
// moved past the writer's id for good.)
func TestScanPassesNothingOfAWriterBegunAfterItsLook(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clk, n, insert, scan, mails := settleFixture(t, db)
		if db.Dialect != store.Postgres {
			return // SQLite's writers take turns: no id commits behind a higher one
		}
		long := clk.Now().Add(-3 * n.Settle)
		var open *gorm.DB
		notify.SetAfterLook(n, func(table string) {
			if table != "transfers" || open != nil {
				return
			}
			open = db.Gorm.Begin()
			if open.Error != nil {
				t.Fatal(open.Error)
			}
			insert(open, long)
			insert(db.Gorm, long)
		})
		defer func() {
			if open != nil {
				open.Rollback()
			}
		}()
		if q := scan(); q != 0 || open == nil {
			t.Fatalf("a writer begun after the look (hooked: %v): %d mails queued, want the later transfer held back", open != nil, q)
		}
		if err := open.Commit().Error; err != nil {
			t.Fatal(err)
		}
		if q := scan(); q != 4 || mails() != 4 {
			t.Fatalf("once it committed: %d mails queued, %d in all; want both transfers' 4", q, mails())
		}
	})
}
