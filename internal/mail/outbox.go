package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Mail statuses.
const (
	StatusQueued  = "queued"
	StatusSent    = "sent"
	StatusFailed  = "failed"  // permanently refused, or out of attempts
	StatusExpired = "expired" // not sent before it stopped being useful (a reset link)
)

// Row is one queued mail (table mails).
type Row struct {
	ID     int64 `gorm:"primaryKey"`
	UserID *int64
	Kind   string
	// DedupeKey, when set, is unique: one receipt per payment however many
	// times it is enqueued.
	DedupeKey     *string
	ToAddr        string
	Subject       string
	TextBody      string
	HTMLBody      string `gorm:"column:html_body"`
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	ExpiresAt     *time.Time
	LastError     string
	CreatedAt     time.Time
	SentAt        *time.Time
	// Secret: the bodies are blanked once sent or expired (a reset link).
	Secret bool
}

// TableName maps Row to mails.
func (Row) TableName() string { return "mails" }

// Enqueue adds a mail to the queue inside tx (so it is sent if and only
// if what it tells about is committed). A mail whose DedupeKey is already
// queued is dropped silently. It never talks to a mail server.
func Enqueue(tx *gorm.DB, r Row) error {
	if r.Status == "" {
		r.Status = StatusQueued
	}
	if r.NextAttemptAt.IsZero() {
		r.NextAttemptAt = r.CreatedAt
	}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&r).Error; err != nil {
		return fmt.Errorf("queue %s mail: %w", r.Kind, err)
	}
	return nil
}

// Outbox delivers queued mail and retries what failed, with backoff.
type Outbox struct {
	db     *store.DB
	sender Sender
	from   string
	now    func() time.Time
	log    *slog.Logger
	kick   chan struct{}
	// MaxAttempts: after so many failed attempts a mail is failed.
	MaxAttempts int
	// BaseBackoff is the wait after the first failure (doubling, up to
	// MaxBackoff), of which Jitter takes a random part of the second half
	// (lifecycle.Backoff): instances whose SMTP relay was down together
	// do not all retry at the same second.
	BaseBackoff, MaxBackoff time.Duration
	// Jitter returns a number in [0, 1) (math/rand/v2's Float64).
	Jitter func() float64
	// Lease: a mail being sent is not picked by another instance for so long.
	Lease time.Duration
}

// NewOutbox returns an outbox delivering through sender as from.
func NewOutbox(db *store.DB, sender Sender, from string, now func() time.Time, log *slog.Logger) *Outbox {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{db: db, sender: sender, from: from, now: now, log: log, kick: make(chan struct{}, 1),
		MaxAttempts: 12, BaseBackoff: 30 * time.Second, MaxBackoff: time.Hour, Jitter: rand.Float64, Lease: 2 * time.Minute}
}

// Sender is where mail goes (for the start banner).
func (o *Outbox) Sender() Sender { return o.sender }

// From is the sender address of every mail.
func (o *Outbox) From() string { return o.from }

// Kick asks the running outbox to look for due mail now (a reset link
// should not wait for the next tick). It never blocks.
func (o *Outbox) Kick() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Kicks receives Kick's requests: the wake-up of the loop that runs Tick
// (internal/server runs it on lifecycle.Loop).
func (o *Outbox) Kicks() <-chan struct{} { return o.kick }

// Tick delivers the mail due now, logging a failure: one beat of the
// background loop.
func (o *Outbox) Tick(ctx context.Context) {
	if _, err := o.DeliverDue(ctx); err != nil && ctx.Err() == nil {
		o.log.Error("deliver mail", "err", err)
	}
}

func (o *Outbox) clock() time.Time { return o.now().UTC().Truncate(time.Microsecond) }

// DeliverDue sends every mail due now (at most 50 per call) and returns
// how many were sent. Each is claimed first with a conditional update, so
// instances never send one mail twice at once.
func (o *Outbox) DeliverDue(ctx context.Context) (int, error) {
	now := o.clock()
	g := o.db.Gorm.WithContext(ctx)
	// Reset links past their use are not sent late.
	if err := g.Model(&Row{}).Where("status = ? AND expires_at IS NOT NULL AND expires_at <= ?", StatusQueued, now).
		Updates(map[string]any{"status": StatusExpired, "text_body": "", "html_body": ""}).Error; err != nil {
		return 0, fmt.Errorf("expire mail: %w", err)
	}
	var due []Row
	if err := g.Where("status = ? AND next_attempt_at <= ?", StatusQueued, now).Order("next_attempt_at, id").Limit(50).Find(&due).Error; err != nil {
		return 0, fmt.Errorf("due mail: %w", err)
	}
	sent := 0
	for _, r := range due {
		if ctx.Err() != nil {
			break
		}
		res := g.Model(&Row{}).Where("id = ? AND status = ? AND next_attempt_at = ?", r.ID, StatusQueued, r.NextAttemptAt).
			Update("next_attempt_at", now.Add(o.Lease))
		if res.Error != nil {
			return sent, fmt.Errorf("claim mail %d: %w", r.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			continue // another instance took it
		}
		if o.deliver(ctx, r) {
			sent++
		}
	}
	return sent, nil
}

// deliver sends one claimed mail and records the outcome.
func (o *Outbox) deliver(ctx context.Context, r Row) bool {
	m := Message{To: r.ToAddr, Subject: r.Subject, Text: r.TextBody, HTML: r.HTMLBody}
	now := o.clock()
	raw, err := Build(o.from, m, now)
	if err == nil {
		err = o.sender.Send(ctx, o.from, m, raw)
	}
	g := o.db.Gorm.WithContext(context.WithoutCancel(ctx))
	if err == nil {
		upd := map[string]any{"status": StatusSent, "sent_at": o.clock(), "attempts": r.Attempts + 1, "last_error": ""}
		if r.Secret {
			upd["text_body"], upd["html_body"] = "", ""
		}
		if err := g.Model(&Row{}).Where("id = ?", r.ID).Updates(upd).Error; err != nil {
			o.log.Error("mail sent but not marked sent", "mail", r.ID, "err", err)
		}
		o.log.Info("mail sent", "mail", r.ID, "kind", r.Kind)
		return true
	}
	attempts := r.Attempts + 1
	upd := map[string]any{"attempts": attempts, "last_error": usertext.Cut(err.Error(), 500)}
	var perm *PermanentError
	switch {
	case errors.As(err, &perm) || attempts >= o.MaxAttempts:
		upd["status"] = StatusFailed
		if r.Secret {
			upd["text_body"], upd["html_body"] = "", ""
		}
		o.log.Error("mail failed for good", "mail", r.ID, "kind", r.Kind, "attempts", attempts, "err", err)
	default:
		upd["next_attempt_at"] = now.Add(o.backoff(attempts))
		o.log.Warn("mail not sent, will retry", "mail", r.ID, "kind", r.Kind, "attempts", attempts, "err", err)
	}
	if err := g.Model(&Row{}).Where("id = ?", r.ID).Updates(upd).Error; err != nil {
		o.log.Error("record mail failure", "mail", r.ID, "err", err)
	}
	return false
}

func (o *Outbox) backoff(attempts int) time.Duration {
	return lifecycle.Backoff(attempts, o.BaseBackoff, o.MaxBackoff, o.Jitter())
}
