package server

import (
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Without SMTP_URL mail goes into DATA_DIR/mail; with it, to its server,
// trusting the options' roots.
func TestNewMailSender(t *testing.T) {
	db := storetest.New(t, store.SQLite)
	roots := x509.NewCertPool()
	t.Run("no SMTP_URL: a folder", func(t *testing.T) {
		cfg := testConfig(t, nil)
		m, err := newMail(testBase(cfg, db, Options{MailRootCAs: roots}))
		if err != nil {
			t.Fatal(err)
		}
		dir, ok := m.Outbox.Sender().(*mail.Dir)
		if !ok || dir.Path != filepath.Join(cfg.DataDir, "mail") {
			t.Errorf("sender %#v, want the folder DATA_DIR/mail", m.Outbox.Sender())
		}
		if m.Notifier == nil || m.Outbox.From() != cfg.MailFrom {
			t.Errorf("notifier %v, from %q; want one, from MAIL_FROM", m.Notifier, m.Outbox.From())
		}
	})
	t.Run("SMTP_URL: its server", func(t *testing.T) {
		m, err := newMail(testBase(testConfig(t, map[string]string{"SMTP_URL": "smtps://mail.example.com"}), db, Options{MailRootCAs: roots}))
		if err != nil {
			t.Fatal(err)
		}
		smtp, ok := m.Outbox.Sender().(*mail.SMTP)
		if !ok || smtp.RootCAs != roots {
			t.Errorf("sender %#v, want SMTP trusting the options' roots", m.Outbox.Sender())
		}
	})
}
