package mail_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// stubSender is a mail server whose every delivery takes step on the
// test's clock and ends with err; during, when set, runs inside the n-th
// delivery (from 1), after the clock moved.
type stubSender struct {
	clk    *testclock.Clock
	step   time.Duration
	err    error
	during func(n int, m mail.Message)
	mu     sync.Mutex
	to     []string
}

func (s *stubSender) Send(_ context.Context, _ string, m mail.Message, _ []byte) error {
	s.mu.Lock()
	s.to = append(s.to, m.To)
	n := len(s.to)
	s.mu.Unlock()
	s.clk.Add(s.step)
	if s.during != nil {
		s.during(n, m)
	}
	return s.err
}

func (s *stubSender) Describe() string { return "stub" }

func (s *stubSender) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.to...)
}

// mailTo is the one mail to addr.
func mailTo(t *testing.T, db *store.DB, addr string) mail.Row {
	t.Helper()
	for _, r := range mailtest.Rows(t, db) {
		if r.ToAddr == addr {
			return r
		}
	}
	t.Fatalf("no mail to %s", addr)
	return mail.Row{}
}

// Mails go one after another, each as slow as the server: each is
// claimed with the clock read at its claim (its lease runs from then),
// so another instance ticking while it is sent leaves it alone; a reset
// link that expired while the mails before it went is not sent; and an
// attempt that outlived its lease does not overwrite what the instance
// that took the mail over recorded.
func TestOutboxLeaseIsEachMails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		const from = "Kifpool <noreply@example.com>"
		enqueue := func(r mail.Row) {
			t.Helper()
			r.Kind, r.Subject, r.TextBody, r.CreatedAt = "notice", "hello", "text", clk.Now()
			if err := mail.Enqueue(db.Gorm, r); err != nil {
				t.Fatal(err)
			}
		}
		outbox := func(s mail.Sender) *mail.Outbox {
			o := mail.NewOutbox(db, s, from, clk.Now, nil)
			o.Jitter = func() float64 { return 0 }
			return o
		}

		// Each delivery takes three quarters of a lease: the second mail
		// is claimed after the first lease of the tick has run out.
		other := &stubSender{clk: clk}
		b := outbox(other)
		a := &stubSender{clk: clk}
		o := outbox(a)
		a.step = o.Lease * 3 / 4
		a.during = func(n int, m mail.Message) {
			if n != 2 {
				return
			}
			claimedAt := clk.Now().Add(-a.step)
			if lease := mailTo(t, db, m.To).NextAttemptAt; !lease.Equal(claimedAt.Add(o.Lease)) {
				t.Errorf("the second mail's lease ends %s, want %s (its claim at %s and the lease)", lease, claimedAt.Add(o.Lease), claimedAt)
			}
			// Another instance ticks while the second mail is being sent.
			if sent, err := b.DeliverDue(ctx); sent != 0 || err != nil {
				t.Errorf("another instance sent %d (%v) while the second mail was being sent", sent, err)
			}
		}
		enqueue(mail.Row{ToAddr: "one@example.com"})
		enqueue(mail.Row{ToAddr: "two@example.com"})
		if sent, err := o.DeliverDue(ctx); sent != 2 || err != nil {
			t.Fatalf("sent %d, %v", sent, err)
		}
		if got := other.sent(); len(got) != 0 {
			t.Errorf("the other instance sent %v too", got)
		}
		for _, to := range []string{"one@example.com", "two@example.com"} {
			if r := mailTo(t, db, to); r.Status != mail.StatusSent || r.Attempts != 1 {
				t.Errorf("mail to %s: %s after %d attempts", to, r.Status, r.Attempts)
			}
		}

		// A reset link that expires while the mail before it is sent is
		// not sent after it, and ends expired. (Links go before other
		// mail: the one before it is a confirmation link's.)
		a.during = nil
		exp, later := clk.Now().Add(time.Minute), clk.Now().Add(time.Hour)
		enqueue(mail.Row{ToAddr: "three@example.com", Secret: true, ExpiresAt: &later})
		enqueue(mail.Row{ToAddr: "reset@example.com", Secret: true, ExpiresAt: &exp})
		if sent, err := o.DeliverDue(ctx); sent != 1 || err != nil {
			t.Errorf("sent %d (%v), want only the first", sent, err)
		}
		if got := a.sent(); got[len(got)-1] != "three@example.com" {
			t.Errorf("sent %v: the expired reset link went", got)
		}
		if _, err := o.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
		if r := mailTo(t, db, "reset@example.com"); r.Status != mail.StatusExpired || r.TextBody != "" {
			t.Errorf("the expired reset link: %s, body %q", r.Status, r.TextBody)
		}

		// An attempt longer than its lease, refused: the other instance
		// took the mail over meanwhile (refused too) and recorded its
		// attempt; the late one does not overwrite it.
		a.step, a.err = o.Lease+time.Minute, errors.New("first instance: 451 try later")
		other.err = errors.New("other instance: 451 try later")
		a.during = func(int, mail.Message) {
			if sent, err := b.DeliverDue(ctx); sent != 0 || err != nil {
				t.Errorf("the other instance: %d sent, %v", sent, err)
			}
		}
		enqueue(mail.Row{ToAddr: "slow@example.com"})
		if sent, err := o.DeliverDue(ctx); sent != 0 || err != nil {
			t.Fatalf("sent %d, %v", sent, err)
		}
		r := mailTo(t, db, "slow@example.com")
		if r.Status != mail.StatusQueued || r.Attempts != 2 || !strings.Contains(r.LastError, "other instance") ||
			!r.NextAttemptAt.Equal(clk.Now().Add(b.BaseBackoff)) {
			t.Fatalf("after both attempts: %s, %d attempts, next %s, last error %q", r.Status, r.Attempts, r.NextAttemptAt, r.LastError)
		}
	})
}

// Mails with a time-limited link (a reset, a confirmation) go before the
// rest, whatever was queued first: a flood of receipts does not hold a
// reset link in the queue until it expires.
func TestOutboxSendsLinksFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := testclock.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		for i := range 120 {
			r := mail.Row{ToAddr: fmt.Sprintf("r%d@example.com", i), Kind: "receipt", Subject: "paid", TextBody: "text", CreatedAt: clk.Now()}
			if err := mail.Enqueue(db.Gorm, r); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(time.Second)
		exp := clk.Now().Add(30 * time.Minute)
		if err := mail.Enqueue(db.Gorm, mail.Row{ToAddr: "reset@example.com", Kind: "reset", Subject: "reset", TextBody: "link",
			Secret: true, ExpiresAt: &exp, CreatedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		s := &stubSender{clk: clk}
		o := mail.NewOutbox(db, s, "Kifpool <noreply@example.com>", clk.Now, nil)
		if sent, err := o.DeliverDue(ctx); sent != 50 || err != nil {
			t.Fatalf("sent %d, %v", sent, err)
		}
		if got := s.sent(); got[0] != "reset@example.com" {
			t.Fatalf("first sent %q of %d, want the reset link", got[0], len(got))
		}
	})
}
