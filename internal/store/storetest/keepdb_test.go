package storetest_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// TestKeepDBFailing is the failing test TestKeepDB runs in a child
// process; on its own it does nothing.
func TestKeepDBFailing(t *testing.T) {
	if os.Getenv("STORETEST_KEEPDB_CHILD") != "1" {
		t.Skip("run by TestKeepDB")
	}
	db := storetest.New(t, store.SQLite)
	if err := db.Gorm.Exec(`CREATE TABLE kept_marker (n integer)`).Error; err != nil {
		t.Fatal(err)
	}
	t.Fatal("failing on purpose")
}

// KEEPDB=1 keeps a failing test's SQLite database and says where; without
// it the file goes.
func TestKeepDB(t *testing.T) {
	kept := regexp.MustCompile(`KEEPDB=1: kept the SQLite database of TestKeepDBFailing: (\S+)`)
	for _, keepdb := range []string{"1", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeepDBFailing$", "-test.v") // #nosec G204 -- this test binary
		cmd.Env = append(os.Environ(), "STORETEST_KEEPDB_CHILD=1", "KEEPDB="+keepdb)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "failing on purpose") {
			t.Fatalf("KEEPDB=%q: the child test did not fail as planned: %v\n%s", keepdb, err, out)
		}
		m := kept.FindStringSubmatch(string(out))
		if keepdb == "" {
			if m != nil {
				t.Errorf("without KEEPDB the database was kept:\n%s", out)
			}
			continue
		}
		if m == nil {
			t.Fatalf("KEEPDB=1 printed no kept database:\n%s", out)
		}
		t.Cleanup(func() { _ = os.RemoveAll(strings.TrimSuffix(m[1], "/kifpool.db")) })
		db, err := store.Open(t.Context(), "sqlite:"+m[1], nil)
		if err != nil {
			t.Fatalf("open the kept database %s: %v", m[1], err)
		}
		var n int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM kept_marker`).Scan(&n).Error; err != nil {
			t.Errorf("the kept database %s lacks the failing test's table: %v", m[1], err)
		}
		_ = db.Close()
	}
}
