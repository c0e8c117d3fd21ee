package mail_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/mail/mailtest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

type row struct {
	Status    string
	Attempts  int
	TextBody  string
	LastError string
}

func rowOf(t *testing.T, db *store.DB, id int64) row {
	t.Helper()
	var r row
	if err := db.Gorm.Raw(`SELECT status, attempts, text_body, last_error FROM mails WHERE id = ?`, id).Scan(&r).Error; err != nil {
		t.Fatal(err)
	}
	return r
}

// Queued mail is delivered over SMTP by DeliverDue; a temporary refusal is
// retried after the backoff, a permanent one fails the mail; a dedupe key
// queues once; a secret mail's body is blanked once sent; an expired one
// is never sent.
func TestOutbox(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		srv := mailtest.Start(t, mailtest.Options{TLS: mailtest.StartTLS})
		s, err := mail.ParseSMTPURL(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		s.RootCAs = srv.RootCAs
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		o := mail.NewOutbox(db, s, "Kifpool <noreply@example.com>", clk.Now, nil)
		// The least jitter: the first retry half the base back-off
		// (15 s) after the failure, not sooner.
		o.Jitter = func() float64 { return 0 }
		enqueue := func(r mail.Row) int64 {
			t.Helper()
			r.CreatedAt = clk.Now()
			if err := mail.Enqueue(db.Gorm, r); err != nil {
				t.Fatal(err)
			}
			var id int64
			db.Gorm.Raw(`SELECT MAX(id) FROM mails`).Scan(&id)
			return id
		}
		key := "receipt:1"
		receipt := enqueue(mail.Row{Kind: "receipt", DedupeKey: &key, ToAddr: "a@example.com", Subject: "receipt", TextBody: "paid", HTMLBody: "<p>paid</p>"})
		enqueue(mail.Row{Kind: "receipt", DedupeKey: &key, ToAddr: "a@example.com", Subject: "receipt again", TextBody: "paid"})
		exp := clk.Now().Add(30 * time.Minute)
		reset := enqueue(mail.Row{Kind: "password_reset", Secret: true, ExpiresAt: &exp, ToAddr: "b@example.com", Subject: "reset", TextBody: "link http://x/password/reset/SECRET"})
		late := enqueue(mail.Row{Kind: "password_reset", Secret: true, ExpiresAt: &exp, ToAddr: "c@example.com", Subject: "late", TextBody: "link"})
		var n int64
		db.Gorm.Raw(`SELECT COUNT(*) FROM mails`).Scan(&n)
		if n != 3 {
			t.Fatalf("%d mails queued, want 3 (the dedupe key queues once)", n)
		}

		// The first goes through; the second is refused for now (451),
		// the third for good (550).
		srv.FailNext(451, 550)
		sent, err := o.DeliverDue(ctx)
		if err != nil || sent != 1 {
			t.Fatalf("deliver: %d sent, %v", sent, err)
		}
		r1, r2, r3 := rowOf(t, db, receipt), rowOf(t, db, reset), rowOf(t, db, late)
		byStatus := map[string][]row{}
		for _, r := range []row{r1, r2, r3} {
			byStatus[r.Status] = append(byStatus[r.Status], r)
		}
		if len(byStatus["sent"]) != 1 || len(byStatus["failed"]) != 1 || len(byStatus["queued"]) != 1 {
			t.Fatalf("after the first round: %+v", []row{r1, r2, r3})
		}
		if q := byStatus["queued"][0]; q.Attempts != 1 || !strings.Contains(q.LastError, "451") {
			t.Fatalf("temporarily refused mail: %+v", q)
		}
		if f := byStatus["failed"][0]; !strings.Contains(f.LastError, "550") {
			t.Fatalf("permanently refused mail: %+v", f)
		}
		// Not retried before its backoff.
		if sent, _ := o.DeliverDue(ctx); sent != 0 {
			t.Fatalf("retried at once: %d", sent)
		}
		clk.Add(14 * time.Second)
		if sent, _ := o.DeliverDue(ctx); sent != 0 {
			t.Fatalf("retried 14 s after: %d", sent)
		}
		clk.Add(time.Second)
		if sent, err := o.DeliverDue(ctx); err != nil || sent != 1 {
			t.Fatalf("retry: %d sent, %v", sent, err)
		}
		if n := len(srv.Messages()); n != 2 {
			t.Fatalf("%d messages at the server, want 2", n)
		}
		// A sent or failed reset mail keeps no link.
		db.Gorm.Raw(`SELECT COUNT(*) FROM mails WHERE secret AND text_body <> ''`).Scan(&n)
		if n != 0 {
			t.Fatalf("%d secret mails still hold their link", n)
		}

		// A reset mail not sent before its link expires is never sent.
		exp2 := clk.Now().Add(time.Minute)
		stale := enqueue(mail.Row{Kind: "password_reset", Secret: true, ExpiresAt: &exp2, ToAddr: "d@example.com", Subject: "stale", TextBody: "link"})
		clk.Add(2 * time.Minute)
		if sent, _ := o.DeliverDue(ctx); sent != 0 {
			t.Fatal("an expired reset link was sent")
		}
		if r := rowOf(t, db, stale); r.Status != "expired" || r.TextBody != "" {
			t.Fatalf("stale reset mail: %+v", r)
		}
	})
}
