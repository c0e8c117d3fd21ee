package mail_test

import (
	"context"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// QueueStats counts the queued mails only, and how long the one due
// longest has waited past its attempt time: a mail in backoff (due
// later) is not overdue, sent and failed ones are not counted.
func TestQueueStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		q, err := mail.QueueStats(ctx, db, now)
		if err != nil {
			t.Fatal(err)
		}
		if q != (mail.Queue{}) {
			t.Fatalf("empty queue: %+v", q)
		}
		add := func(status string, next time.Time) {
			t.Helper()
			if err := mail.Enqueue(db.Gorm, mail.Row{Kind: "receipt", ToAddr: "a@example.com", Subject: "s", TextBody: "b",
				Status: status, CreatedAt: now.Add(-time.Hour), NextAttemptAt: next}); err != nil {
				t.Fatal(err)
			}
		}
		add(mail.StatusQueued, now.Add(10*time.Minute)) // in backoff
		add(mail.StatusSent, now.Add(-5*time.Hour))
		add(mail.StatusFailed, now.Add(-4*time.Hour))
		q, err = mail.QueueStats(ctx, db, now)
		if err != nil {
			t.Fatal(err)
		}
		if q.Queued != 1 || q.Overdue != 0 {
			t.Fatalf("one mail in backoff: %+v, want 1 queued, none overdue", q)
		}
		add(mail.StatusQueued, now.Add(-20*time.Minute))
		add(mail.StatusQueued, now.Add(-time.Minute))
		q, err = mail.QueueStats(ctx, db, now)
		if err != nil {
			t.Fatal(err)
		}
		if q.Queued != 3 || q.Overdue != 20*time.Minute {
			t.Fatalf("%+v, want 3 queued, 20m overdue", q)
		}
	})
}
