package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Instances share the lock; one that must be alone (the built-in sandbox
// bank) gets it only with no other instance, and keeps every other out
// until it releases it. Another schema is another database.
func TestInstanceLock(t *testing.T) {
	ctx := context.Background()
	url := storetest.URL(t, store.Postgres)
	open := func() *store.DB {
		db, err := store.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b, c := open(), open(), open()
	relA, err := a.InstanceLock(ctx, false, "")
	if err != nil {
		t.Fatal(err)
	}
	relB, err := b.InstanceLock(ctx, false, "")
	if err != nil {
		t.Fatalf("a second shared instance: %v", err)
	}
	if _, err := c.InstanceLock(ctx, true, ""); !errors.Is(err, store.ErrInstanceConflict) {
		t.Fatalf("an exclusive instance beside two others: %v", err)
	}
	relA()
	relB()
	relC, err := c.InstanceLock(ctx, true, "")
	if err != nil {
		t.Fatalf("an exclusive instance alone: %v", err)
	}
	if _, err := a.InstanceLock(ctx, false, ""); !errors.Is(err, store.ErrInstanceConflict) {
		t.Fatalf("an instance beside an exclusive one: %v", err)
	}
	// Another schema (another test's database) is not affected.
	other, err := store.Open(ctx, storetest.URL(t, store.Postgres), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	relO, err := other.InstanceLock(ctx, true, "")
	if err != nil {
		t.Fatalf("exclusive on another schema: %v", err)
	}
	relO()
	relC()
	relA2, err := a.InstanceLock(ctx, false, "")
	if err != nil {
		t.Fatalf("after the exclusive instance left: %v", err)
	}
	relA2()
	// The lock's connection comes on top of the pool: a pool of one still
	// has its one connection for the app's work.
	one := open()
	if err := one.SetPoolSize(1); err != nil {
		t.Fatal(err)
	}
	relOne, err := one.InstanceLock(ctx, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer relOne()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := one.SQL().PingContext(qctx); err != nil {
		t.Fatalf("a pool of one beside the lock: %v", err)
	}
	var x int
	if err := one.SQL().QueryRowContext(qctx, `SELECT 1`).Scan(&x); err != nil {
		t.Fatalf("a query in a pool of one beside the lock: %v", err)
	}
	// SQLite: a single-process database, nothing to lock.
	s := storetest.New(t, store.SQLite)
	rel, err := s.InstanceLock(ctx, true, "")
	if err != nil {
		t.Fatal(err)
	}
	rel()
}
