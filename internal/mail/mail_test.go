package mail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
)

var msg = mail.Message{To: "sara@example.com", Subject: "رسید: ۵۰٬۰۰۰ تومان",
	Text: "سلام\nمبلغ ۵۰٬۰۰۰ تومان اضافه شد.", HTML: `<p dir="rtl">سلام</p>`}

// A message goes through a real SMTP exchange in each transport mode, with
// AUTH where the URL has a user, and arrives with both parts intact.
func TestSMTPModes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    mailtest.Options
		wantTLS bool
	}{
		{"plain", mailtest.Options{}, false},
		{"starttls with auth", mailtest.Options{TLS: mailtest.StartTLS, User: "kifpool", Pass: "s3cret pass"}, true},
		{"implicit tls with auth", mailtest.Options{TLS: mailtest.ImplicitT, User: "kifpool", Pass: "s3cret pass"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mailtest.Start(t, tc.opts)
			s, err := mail.ParseSMTPURL(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			s.RootCAs = srv.RootCAs
			raw, err := mail.Build("Kifpool <noreply@example.com>", msg, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(context.Background(), "Kifpool <noreply@example.com>", msg, raw); err != nil {
				t.Fatalf("send: %v", err)
			}
			got := srv.Wait(t, 5*time.Second, func(mailtest.Received) bool { return true })
			if got.From != "noreply@example.com" || got.To != "sara@example.com" || got.TLS != tc.wantTLS {
				t.Fatalf("envelope %q → %q, tls %v", got.From, got.To, got.TLS)
			}
			if got.Subject != msg.Subject || strings.TrimSpace(got.Text) != msg.Text || strings.TrimSpace(got.HTML) != msg.HTML {
				t.Fatalf("decoded %q / %q / %q", got.Subject, got.Text, got.HTML)
			}
			if got.Header.Get("Message-Id") == "" || got.Header.Get("Date") == "" {
				t.Fatal("no Message-ID or Date")
			}
		})
	}
}

// Wrong credentials, an untrusted certificate and a 5xx are errors; a 5xx
// is permanent, a 4xx is not.
func TestSMTPFailures(t *testing.T) {
	ctx := context.Background()
	raw, _ := mail.Build("noreply@example.com", msg, time.Now())

	srv := mailtest.Start(t, mailtest.Options{TLS: mailtest.StartTLS, User: "kifpool", Pass: "right"})
	bad, _ := mail.ParseSMTPURL(strings.Replace(srv.URL, "right", "wrong", 1))
	bad.RootCAs = srv.RootCAs
	if err := bad.Send(ctx, "noreply@example.com", msg, raw); err == nil {
		t.Fatal("wrong password accepted")
	}
	untrusted, _ := mail.ParseSMTPURL(srv.URL)
	if err := untrusted.Send(ctx, "noreply@example.com", msg, raw); err == nil {
		t.Fatal("a certificate nobody trusts was accepted")
	}

	plain := mailtest.Start(t, mailtest.Options{})
	s, _ := mail.ParseSMTPURL(plain.URL)
	plain.FailNext(451, 550)
	var perm *mail.PermanentError
	if err := s.Send(ctx, "noreply@example.com", msg, raw); err == nil || errors.As(err, &perm) {
		t.Fatalf("451: %v, want a temporary error", err)
	}
	if err := s.Send(ctx, "noreply@example.com", msg, raw); !errors.As(err, &perm) {
		t.Fatalf("550: %v, want a permanent error", err)
	}
	if err := s.Send(ctx, "noreply@example.com", msg, raw); err != nil {
		t.Fatalf("third: %v", err)
	}
	if n := len(plain.Messages()); n != 1 {
		t.Fatalf("%d messages delivered, want 1", n)
	}
}

func TestParseSMTPURL(t *testing.T) {
	for _, tc := range []struct{ in, desc string }{
		{"smtp://mail.example.com", "SMTP mail.example.com:587 (STARTTLS when offered)"},
		{"smtp://u:p@mail.example.com:2525", "SMTP mail.example.com:2525 (STARTTLS when offered)"},
		{"smtps://u:p@mail.example.com", "SMTP mail.example.com:465 (implicit TLS)"},
	} {
		s, err := mail.ParseSMTPURL(tc.in)
		if err != nil || s.Describe() != tc.desc {
			t.Errorf("%s: %v %q", tc.in, err, s.Describe())
		}
		if strings.Contains(s.Describe(), "p@") {
			t.Errorf("%s: the description shows the password", tc.in)
		}
	}
	for _, in := range []string{"http://x", "smtp://", "mail.example.com"} {
		if _, err := mail.ParseSMTPURL(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestBuildRefusesHeaderInjection(t *testing.T) {
	m := msg
	m.Subject = "hi\r\nBcc: victim@example.com"
	if _, err := mail.Build("noreply@example.com", m, time.Now()); err == nil {
		t.Fatal("a subject with a line break was built")
	}
	m = msg
	m.To = "a@example.com\r\nBcc: victim@example.com"
	if _, err := mail.Build("noreply@example.com", m, time.Now()); err == nil {
		t.Fatal("a recipient with a line break was built")
	}
}
