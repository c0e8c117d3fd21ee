package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup/sqlstore"
)

// keptSwitches is an instance's store over db with its switches kept (as
// serve's background does) until stop or the test's end.
func keptSwitches(t *testing.T, db *store.DB, c *testclock.Clock) (st *sqlstore.Store, stop func()) {
	t.Helper()
	st = sqlstore.New(db).CacheSwitches(c.Now, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.KeepSwitches(ctx, store.ListenOptions{}) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	testwait.Eventually(t, 10*time.Second, "the switches' changes to be heard", st.SwitchesServing)
	return st, stop
}

// offReads reads the switches n times, each the same, and says how many
// statements it took.
func offReads(t *testing.T, st *sqlstore.Store, counter *storetest.Counter, n int) (map[string]bool, int) {
	t.Helper()
	counter.Reset()
	var first map[string]bool
	for i := range n {
		off, err := st.DisabledGateways(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = off
		} else if len(off) != len(first) {
			t.Fatalf("read %d: %v, the first %v", i, off, first)
		}
	}
	stmts, _ := counter.Take()
	return first, len(stmts)
}

// keptRead waits until a round of 3 reads makes at most one statement and
// returns what it read (another test's switch in the same PostgreSQL
// database notifies the same channel and may drop the copy once more).
func keptRead(t *testing.T, st *sqlstore.Store, counter *storetest.Counter) map[string]bool {
	t.Helper()
	var off map[string]bool
	n := 0
	if err := testwait.Until(5*time.Second, "the switches to be kept", func() bool {
		off, n = offReads(t, st, counter, 3)
		return n <= 1
	}); err != nil {
		t.Fatalf("%v: 3 reads made %d statements (serving: %v)", err, n, st.SwitchesServing())
	}
	return off
}

// The operator's gateway switches are kept in memory while their changes
// are heard, for a second at most on the store's clock: a switch made by
// this instance applies at its next read, one made by another instance
// or by hand (PostgreSQL's trigger) as soon as it is heard, and nothing is
// served once the changes are no longer heard.
func TestSwitchesKeptWhileHeard(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, storetest.New(t, d))
			dbB := f.db
			if d == store.Postgres {
				other, err := store.Reopen(f.db)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = other.Close() })
				dbB = other
			}
			c := testclock.New(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
			cA, counterA := storetest.Counting(t, f.db)
			a, stopA := keptSwitches(t, cA, c)
			cB, counterB := storetest.Counting(t, dbB)
			b, _ := keptSwitches(t, cB, c)
			entry := func(note string) audit.Entry {
				return audit.Entry{AdminID: f.user, Action: audit.ActionGatewaySwitch, Note: note, Result: audit.ResultDone, CreatedAt: f.now}
			}

			if off := keptRead(t, a, counterA); len(off) != 0 {
				t.Fatalf("switched off at the start: %v", off)
			}
			keptRead(t, b, counterB)

			// A's switch: A sees it at its next read, B once heard.
			if err := a.SwitchGateway(ctx, "zarinpal", true, entry("zarinpal off")); err != nil {
				t.Fatal(err)
			}
			if off, _ := offReads(t, a, counterA, 1); !off["zarinpal"] {
				t.Fatalf("A's read after its own switch: %v", off)
			}
			testwait.Eventually(t, 5*time.Second, "B to see A's switch", func() bool {
				off, _ := offReads(t, b, counterB, 1)
				return off["zarinpal"]
			})
			if off := keptRead(t, b, counterB); !off["zarinpal"] {
				t.Fatalf("B keeps %v", off)
			}

			// By hand: SQL on another connection (PostgreSQL's trigger);
			// on SQLite only the TTL bounds it.
			if err := dbB.Gorm.Exec(`UPDATE gateway_switches SET disabled = ? WHERE gateway = 'zarinpal'`, false).Error; err != nil {
				t.Fatal(err)
			}
			if d == store.Postgres {
				testwait.Eventually(t, 5*time.Second, "A to hear the switch made by hand", func() bool {
					off, _ := offReads(t, a, counterA, 1)
					return !off["zarinpal"]
				})
			} else {
				if off, n := offReads(t, a, counterA, 1); !off["zarinpal"] || n != 0 {
					t.Fatalf("within the second, unheard: %v in %d statements, want the kept copy", off, n)
				}
				c.Add(time.Second)
				if off, n := offReads(t, a, counterA, 1); off["zarinpal"] || n != 1 {
					t.Fatalf("a second later: %v in %d statements, want read again", off, n)
				}
			}

			// The bound: a kept copy is read again once a second passed.
			keptRead(t, a, counterA)
			c.Add(time.Second)
			if _, n := offReads(t, a, counterA, 2); n != 1 {
				t.Fatalf("2 reads a second later: %d statements, want 1", n)
			}

			// Changes no longer heard: every read goes to the database.
			stopA()
			if a.SwitchesServing() {
				t.Fatal("serving after its keeper stopped")
			}
			if _, n := offReads(t, a, counterA, 3); n != 3 {
				t.Fatalf("3 reads unheard: %d statements, want 3", n)
			}
		})
	}
}

// Without CacheSwitches (tests, the CLI), every read goes to the database.
func TestSwitchesReadEachTimeWithoutCache(t *testing.T) {
	t.Parallel()
	db, counter := storetest.Counting(t, storetest.New(t, store.SQLite))
	st := sqlstore.New(db)
	st.KeepSwitches(context.Background(), store.ListenOptions{}) // nothing to keep: returns at once
	if st.SwitchesServing() {
		t.Fatal("serving without a cache")
	}
	if _, n := offReads(t, st, counter, 3); n != 3 {
		t.Fatalf("3 reads: %d statements, want 3", n)
	}
}
