package server

import (
	"fmt"
	"path/filepath"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/notify"
)

// mailer is an instance's outgoing mail: the queue and what fills it.
type mailer struct {
	// Outbox delivers queued mail through SMTP_URL's server or, when
	// there is none, into DATA_DIR/mail.
	Outbox *mail.Outbox
	// Notifier queues receipts, notices and password reset links.
	Notifier *notify.Notifier
}

// newMail builds the queue over the configuration's sender.
func newMail(b base) (mailer, error) {
	sender, err := mailSender(b)
	if err != nil {
		return mailer{}, err
	}
	return mailer{
		Outbox:   mail.NewOutbox(b.db, sender, b.cfg.MailFrom, b.now, b.log("mail")),
		Notifier: notify.New(b.db, b.cfg.BaseURL, b.cfg.Operator, b.now, b.log("notify")),
	}, nil
}

// mailSender is SMTP_URL's server (trusting the options' roots when set),
// or without it a folder under DATA_DIR (printed too in development).
func mailSender(b base) (mail.Sender, error) {
	if b.cfg.SMTPURL == "" {
		return &mail.Dir{Path: filepath.Join(b.cfg.DataDir, "mail"), Log: b.log("mail"), PrintText: b.cfg.Dev}, nil
	}
	smtp, err := mail.ParseSMTPURL(b.cfg.SMTPURL)
	if err != nil {
		return nil, fmt.Errorf("SMTP_URL: %w", err)
	}
	smtp.RootCAs = b.o.MailRootCAs
	return smtp, nil
}
