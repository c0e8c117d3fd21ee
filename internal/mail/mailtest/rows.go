package mailtest

import (
	"testing"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/store"
)

// Rows is every mail of the outbox (queued, sent, failed, expired),
// oldest first: tests above the mail package read the queue through it,
// never by SQL.
func Rows(t testing.TB, db *store.DB) []mail.Row {
	t.Helper()
	var out []mail.Row
	if err := db.Gorm.Table("mails").Order("id").Find(&out).Error; err != nil {
		t.Fatalf("read mails: %v", err)
	}
	return out
}

// DropQueued deletes the mails of kind to addr not sent yet (a fixture
// whose test has no use for them, so that its mail is only its own).
func DropQueued(t testing.TB, db *store.DB, kind, addr string) {
	t.Helper()
	if err := db.Gorm.Exec(`DELETE FROM mails WHERE kind = ? AND status = ? AND lower(to_addr) = lower(?)`, kind, mail.StatusQueued, addr).Error; err != nil {
		t.Fatalf("drop the queued %s mails to %s: %v", kind, addr, err)
	}
}
