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
