package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// The pools' sessions run with PostgreSQL's JIT off (a session's first
// plan above jit_above_cost loaded LLVM: 65 ms at 10M top-ups), on the
// primary and on the read database, unless the URL sets jit itself.
func TestPostgresSessionsRunWithoutJIT(t *testing.T) {
	url := storetest.URL(t, store.Postgres)
	ctx := context.Background()
	jit := func(db *store.DB) string {
		t.Helper()
		defer db.Close()
		var v string
		if err := db.SQL().QueryRowContext(ctx, "SHOW jit").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	open := func(u string) *store.DB {
		t.Helper()
		db, err := store.Open(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	if v := jit(open(url)); v != "off" {
		t.Errorf("primary: jit %q, want off", v)
	}
	rdb, err := store.OpenReplica(url)
	if err != nil {
		t.Fatal(err)
	}
	if v := jit(rdb); v != "off" {
		t.Errorf("read database: jit %q, want off", v)
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	if v := jit(open(url + sep + "jit=on")); v != "on" {
		t.Errorf("URL with jit=on: jit %q, want the URL's on", v)
	}
}

func TestWithoutJITKeepsTheURLsOwnSetting(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u@h/db", "postgres://u@h/db?jit=off"},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable&jit=off"},
		{"postgres://u@h/db?sslmode=disable&jit=on", "postgres://u@h/db?sslmode=disable&jit=on"},
		{"postgres://u@h/db?jitter=1", "postgres://u@h/db?jitter=1&jit=off"},
		{"host=h dbname=db", "host=h dbname=db jit=off"},
		{"host=h jit=on", "host=h jit=on"},
	} {
		if got := store.WithoutJIT(c.in); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// A primary's session that holds a transaction open and does nothing
// (a frozen process) is ended by PostgreSQL after
// store.IdleInTransactionTimeout, its locks with it; the URL may set its
// own.
func TestPostgresSessionsEndWhenIdleInATransaction(t *testing.T) {
	url := storetest.URL(t, store.Postgres)
	ctx := context.Background()
	show := func(u string) string {
		t.Helper()
		db, err := store.Open(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.SQL().QueryRowContext(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show(url); v != "1min" {
		t.Errorf("idle_in_transaction_session_timeout %q, want 1min", v)
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	if v := show(url + sep + "idle_in_transaction_session_timeout=5000"); v != "5s" {
		t.Errorf("with the URL's own: %q, want 5s", v)
	}
}
