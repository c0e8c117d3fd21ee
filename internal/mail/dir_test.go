package mail_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Without SMTP_URL, queued mail is delivered into a folder (created
// private), one .eml file per message holding it whole, and each is
// logged with its file; in development the log shows the text too (so
// that a reset link can be followed), otherwise never.
func TestDirWritesEachMailAndLogsIt(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	ctx := context.Background()
	for _, printText := range []bool{true, false} {
		var logs bytes.Buffer
		dir := filepath.Join(t.TempDir(), "mail")
		d := &mail.Dir{Path: dir, Log: slog.New(slog.NewTextHandler(&logs, nil)), PrintText: printText}
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		o := mail.NewOutbox(db, d, "Kifpool <noreply@example.com>", func() time.Time { return now }, nil)
		if err := mail.Enqueue(db.Gorm, mail.Row{Kind: "password_reset", ToAddr: "dev@example.com", Subject: "Reset",
			TextBody: "open http://localhost:8080" + routes.PasswordReset("abc123"), HTMLBody: "<p>open</p>", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if sent, err := o.DeliverDue(ctx); err != nil || sent != 1 {
			t.Fatalf("deliver: %d %v", sent, err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		if len(files) != 1 {
			t.Fatalf("%d .eml files in %s, want 1", len(files), dir)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("mail folder mode %v %v, want 0700", fi.Mode().Perm(), err)
		}
		fi, _ := os.Stat(files[0])
		raw, _ := os.ReadFile(files[0])
		if fi.Mode().Perm() != 0o600 || !strings.Contains(string(raw), "To: dev@example.com") || !strings.Contains(string(raw), routes.PasswordReset("abc123")) {
			t.Fatalf("mail file (mode %v):\n%s", fi.Mode().Perm(), raw)
		}
		if !strings.Contains(logs.String(), "file="+files[0]) || strings.Contains(logs.String(), "abc123") != printText {
			t.Fatalf("log (text printed: %v):\n%s", printText, logs.String())
		}
	}
}
