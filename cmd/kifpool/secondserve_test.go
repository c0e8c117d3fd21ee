package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testport"
)

// Issue 31, item 11: a second serve on the SQLite file a serve is using is
// refused before it serves anything (its worker would ask its own
// in-memory sandbox bank about the first one's payments and send them to
// review), and the refusal names the first one's process id and address.
// When the first one stops, the file is free again.
func TestSecondServeOnOneSQLiteFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	dbURL := "sqlite:" + filepath.Join(dir, "k.db")
	serve := func(ctx context.Context, addr string) <-chan error {
		done := make(chan error, 1)
		env := map[string]string{"DATABASE_URL": dbURL, "DATA_DIR": dir, "LISTEN_ADDR": addr, "BASE_URL": "http://" + addr}
		go func() {
			done <- run(ctx, []string{"serve"}, envOf(env), strings.NewReader(""), io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		return done
	}
	first := testport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := serve(ctx, first)
	waitHealthy(t, "http://"+first, done)

	// The second one, a newer build: it has a migration the running one
	// has not (the newest one's record removed). It is refused before it
	// migrates anything under the running serve (it would fail on the
	// migration made twice otherwise).
	db, err := store.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var newest int64
	if err := db.Gorm.Raw(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&newest).Error; err != nil || newest == 0 {
		t.Fatalf("newest migration: %d %v", newest, err)
	}
	if err := db.Gorm.Exec(`DELETE FROM goose_db_version WHERE version_id = ?`, newest).Error; err != nil {
		t.Fatal(err)
	}
	second := testport.Addr(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	select {
	case err := <-serve(ctx2, second):
		if err == nil || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), first) {
			t.Fatalf("second serve: %v, want a refusal naming pid %d and %s", err, os.Getpid(), first)
		}
	case <-ctx2.Done():
		t.Fatal("a second serve on the same SQLite file started")
	}
	var applied int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM goose_db_version WHERE version_id = ?`, newest).Scan(&applied)
	if applied != 0 {
		t.Fatal("the refused serve ran the migrations")
	}
	if err := db.Gorm.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`, newest, true).Error; err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", second); err == nil {
		c.Close()
		t.Fatal("the refused serve listens")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first serve: %v", err)
	}
	// The file is free again: a serve starts on it.
	ctx3, cancel3 := context.WithCancel(context.Background())
	third := testport.Addr(t)
	done3 := serve(ctx3, third)
	waitHealthy(t, "http://"+third, done3)
	cancel3()
	if err := <-done3; err != nil {
		t.Fatalf("serve after the first stopped: %v", err)
	}
}
