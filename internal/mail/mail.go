// Package mail sends e-mail: a message with a text and an HTML part,
// built as MIME, and delivered through an SMTP server (SMTP_URL: smtp://
// with STARTTLS when the server offers it, smtps:// with implicit TLS) or,
// in development without SMTP_URL, written as .eml files into a folder.
// Delivery is never on a request's path: mail is queued as a row (see
// Outbox) and the background sender delivers and retries it.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Message is one e-mail to one person.
type Message struct {
	To      string
	Subject string
	Text    string // the plain-text part
	HTML    string // the HTML part ("" for text only)
}

// Sender delivers a built message.
type Sender interface {
	Send(ctx context.Context, from string, m Message, raw []byte) error
	// Describe says where mail goes, for the start banner and logs.
	Describe() string
}

// PermanentError is a refusal that retrying cannot change (an SMTP 5xx:
// no such mailbox, a refused sender).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Build writes m as a MIME message from from, dated now.
func Build(from string, m Message, now time.Time) ([]byte, error) {
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("from address %q: %w", from, err)
	}
	if _, err := mail.ParseAddress(m.To); err != nil {
		return nil, fmt.Errorf("to address: %w", err)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, errors.New("subject has a line break")
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	domain := fromAddr.Address[strings.LastIndexByte(fromAddr.Address, '@')+1:]
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", fromAddr.String())
	h("To", m.To)
	h("Subject", mime.BEncoding.Encode("utf-8", m.Subject))
	h("Date", now.Format(time.RFC1123Z))
	h("Message-ID", "<"+hex.EncodeToString(id[:])+"@"+domain+">")
	h("MIME-Version", "1.0")
	h("Auto-Submitted", "auto-generated")
	part := func(ctype, body string) error {
		b.WriteString("Content-Type: " + ctype + "; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
		w := quotedprintable.NewWriter(&b)
		if _, err := w.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n"))); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		b.WriteString("\r\n")
		return nil
	}
	if m.HTML == "" {
		return b.Bytes(), part("text/plain", m.Text)
	}
	boundary := "kp-" + hex.EncodeToString(id[:6])
	h("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n--" + boundary + "\r\n")
	if err := part("text/plain", m.Text); err != nil {
		return nil, err
	}
	b.WriteString("--" + boundary + "\r\n")
	if err := part("text/html", m.HTML); err != nil {
		return nil, err
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes(), nil
}

// SMTP delivers through an SMTP server.
type SMTP struct {
	host, port string
	implicit   bool // smtps://: TLS from the first byte
	user, pass string
	// RootCAs verifies the server's certificate (nil: the system's).
	RootCAs *x509.CertPool
	// Timeout bounds one whole delivery (default 30 s).
	Timeout time.Duration
}

// ParseSMTPURL reads SMTP_URL: smtp://[user:pass@]host[:port] (STARTTLS
// when offered; port 587 by default) or smtps://… (implicit TLS, 465).
func ParseSMTPURL(raw string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	s := &SMTP{host: u.Hostname(), port: u.Port(), Timeout: 30 * time.Second}
	switch u.Scheme {
	case "smtp":
		if s.port == "" {
			s.port = "587"
		}
	case "smtps":
		s.implicit = true
		if s.port == "" {
			s.port = "465"
		}
	default:
		return nil, fmt.Errorf("scheme must be smtp or smtps, got %q", u.Scheme)
	}
	if s.host == "" {
		return nil, errors.New("no host")
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	return s, nil
}

// Describe names the server (never the password).
func (s *SMTP) Describe() string {
	mode := "STARTTLS when offered"
	if s.implicit {
		mode = "implicit TLS"
	}
	return "SMTP " + net.JoinHostPort(s.host, s.port) + " (" + mode + ")"
}

// Send delivers raw from from to to in one SMTP session. A password is
// sent only over TLS (or to a server on this machine).
func (s *SMTP) Send(ctx context.Context, from string, m Message, raw []byte) error {
	to := m.To
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(s.host, s.port)
	tlsConf := &tls.Config{ServerName: s.host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}
	var conn net.Conn
	var err error
	d := &net.Dialer{}
	if s.implicit {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		return fmt.Errorf("smtp greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return fmt.Errorf("EHLO: %w", err)
	}
	if !s.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConf); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
		}
	}
	if s.user != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("the server offers no AUTH but SMTP_URL has a user")
		}
		// PlainAuth itself refuses to send the password in clear text to
		// anything but localhost.
		if err := c.Auth(smtp.PlainAuth("", s.user, s.pass, s.host)); err != nil {
			return classify("AUTH", err)
		}
	}
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("from address: %w", err)}
	}
	if err := c.Mail(fromAddr.Address); err != nil {
		return classify("MAIL FROM", err)
	}
	if err := c.Rcpt(to); err != nil {
		return classify("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return classify("DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	if err := w.Close(); err != nil {
		return classify("end of DATA", err)
	}
	_ = c.Quit()
	return nil
}

// classify marks an SMTP 5xx answer as permanent.
func classify(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return &PermanentError{Err: fmt.Errorf("%s: %w", step, err)}
	}
	return fmt.Errorf("%s: %w", step, err)
}

// Dir writes each message as an .eml file into a folder and logs where
// (development without SMTP_URL); with PrintText (development only: a
// reset link is a secret) the log shows the text part too.
type Dir struct {
	Path      string
	Log       *slog.Logger
	Now       func() time.Time
	PrintText bool
}

// Describe names the folder.
func (d *Dir) Describe() string { return "written to " + d.Path + " (no SMTP_URL)" }

// Send writes the message to the folder.
func (d *Dir) Send(_ context.Context, _ string, m Message, raw []byte) error {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return fmt.Errorf("mail folder: %w", err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	name := filepath.Join(d.Path, now().UTC().Format("20060102T150405.000000000Z")+"-"+hex.EncodeToString(r[:])+".eml")
	if err := os.WriteFile(name, raw, 0o600); err != nil {
		return fmt.Errorf("write mail: %w", err)
	}
	if d.Log != nil {
		args := []any{"to", m.To, "subject", m.Subject, "file", name}
		if d.PrintText {
			args = append(args, "text", m.Text)
		}
		d.Log.Info("mail written to a file (no SMTP_URL)", args...)
	}
	return nil
}
