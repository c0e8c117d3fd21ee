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
	Attempts      int // attempts begun: each claim counts one
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
	// Lease: a mail being sent is not picked by another instance for so
	// long from its claim (the clock read as it is claimed, not when the
	// call began).
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

// Kicks receives Kick's requests: the wake-up of the loop that runs DeliverDue
// (internal/server runs it on lifecycle.Loop).
func (o *Outbox) Kicks() <-chan struct{} { return o.kick }

func (o *Outbox) clock() time.Time { return o.now().UTC().Truncate(time.Microsecond) }

// dueBatch is how many due mails one DeliverDue reads at most.
const dueBatch = 50

// DeliverDue sends every mail due now (at most dueBatch per call, those
// with a time-limited link first) and returns
// how many were sent. Mails go one after another, each claimed first
// with a conditional update (claim), so instances never send one mail
// twice at once; a failed attempt is recorded only while its claim still
// holds (deliver).
func (o *Outbox) DeliverDue(ctx context.Context) (int, error) {
	now := o.clock()
	g := o.db.Gorm.WithContext(ctx)
	// Reset links past their use are not sent late.
	if err := g.Model(&Row{}).Where("status = ? AND expires_at IS NOT NULL AND expires_at <= ?", StatusQueued, now).
		Updates(map[string]any{"status": StatusExpired, "text_body": "", "html_body": ""}).Error; err != nil {
		return 0, fmt.Errorf("expire mail: %w", err)
	}
	// The mails whose link has a time limit (a reset, a confirmation)
	// first, then the rest: a flood of receipts (transfers bounced back
	// and forth) must not hold a reset link behind it until it expires.
	var due, rest []Row
	// The status as a literal (StatusQueued): the partial index of the
	// links (migration 00054) names it so, and a generic plan of a
	// prepared statement matches a literal only.
	if err := g.Where("status = 'queued' AND expires_at IS NOT NULL AND next_attempt_at <= ?", now).
		Order("next_attempt_at, id").Limit(dueBatch).Find(&due).Error; err != nil {
		return 0, fmt.Errorf("due mail: %w", err)
	}
	if left := dueBatch - len(due); left > 0 {
		if err := g.Where("status = ? AND expires_at IS NULL AND next_attempt_at <= ?", StatusQueued, now).
			Order("next_attempt_at, id").Limit(left).Find(&rest).Error; err != nil {
			return 0, fmt.Errorf("due mail: %w", err)
		}
		due = append(due, rest...)
	}
	sent := 0
	for _, r := range due {
		if ctx.Err() != nil {
			break
		}
		lease, ok, err := o.claim(ctx, r)
		if err != nil {
			return sent, err
		}
		if !ok {
			continue // another instance took it, or it expired meanwhile
		}
		r.Attempts++
		if o.deliver(ctx, r, lease) {
			sent++
		}
	}
	return sent, nil
}

// claim takes r, as DeliverDue read it, for one attempt: unless another
// instance took it since, or it has expired by now (the mails sent before
// it in this call took their time), it moves next_attempt_at to the
// clock read now plus Lease and counts the attempt. lease is the
// attempt's, the mark its outcome is recorded under.
func (o *Outbox) claim(ctx context.Context, r Row) (lease time.Time, ok bool, err error) {
	now := o.clock()
	lease = now.Add(o.Lease)
	res := o.db.Gorm.WithContext(ctx).Model(&Row{}).
		Where("id = ? AND status = ? AND next_attempt_at = ? AND (expires_at IS NULL OR expires_at > ?)", r.ID, StatusQueued, r.NextAttemptAt, now).
		Updates(map[string]any{"next_attempt_at": lease, "attempts": gorm.Expr("attempts + 1")})
	if res.Error != nil {
		return lease, false, fmt.Errorf("claim mail %d: %w", r.ID, res.Error)
	}
	return lease, res.RowsAffected == 1, nil
}

// deliver sends one claimed mail (r.Attempts its attempt, counted) and
// records the outcome. Sent is recorded whoever holds the mail now (the
// mail is out); a failure only while lease is still its claim, so that
// an attempt that outlived its lease does not overwrite what the
// instance that took it over recorded.
func (o *Outbox) deliver(ctx context.Context, r Row, lease time.Time) bool {
	m := Message{To: r.ToAddr, Subject: r.Subject, Text: r.TextBody, HTML: r.HTMLBody}
	raw, err := Build(o.from, m, o.clock())
	if err == nil {
		err = o.sender.Send(ctx, o.from, m, raw)
	}
	g := o.db.Gorm.WithContext(context.WithoutCancel(ctx))
	now := o.clock()
	if err == nil {
		upd := map[string]any{"status": StatusSent, "sent_at": now, "last_error": ""}
		if r.Secret {
			upd["text_body"], upd["html_body"] = "", ""
		}
		res := g.Model(&Row{}).Where("id = ? AND status = ?", r.ID, StatusQueued).Updates(upd)
		switch {
		case res.Error != nil:
			o.log.Error("mail sent but not marked sent", "mail", r.ID, "err", res.Error)
		case res.RowsAffected == 0:
			o.log.Warn("mail sent; another attempt had already ended it", "mail", r.ID, "kind", r.Kind)
		default:
			o.log.Info("mail sent", "mail", r.ID, "kind", r.Kind)
		}
		return true
	}
	upd := map[string]any{"last_error": usertext.Cut(err.Error(), 500)}
	var perm *PermanentError
	failed := errors.As(err, &perm) || r.Attempts >= o.MaxAttempts
	if failed {
		upd["status"] = StatusFailed
		if r.Secret {
			upd["text_body"], upd["html_body"] = "", ""
		}
	} else {
		upd["next_attempt_at"] = now.Add(o.backoff(r.Attempts))
	}
	res := g.Model(&Row{}).Where("id = ? AND status = ? AND next_attempt_at = ?", r.ID, StatusQueued, lease).Updates(upd)
	switch {
	case res.Error != nil:
		o.log.Error("record mail failure", "mail", r.ID, "err", res.Error)
	case res.RowsAffected == 0:
		o.log.Warn("mail not sent; its lease had passed, another attempt records it", "mail", r.ID, "kind", r.Kind, "err", err)
	case failed:
		o.log.Error("mail failed for good", "mail", r.ID, "kind", r.Kind, "attempts", r.Attempts, "err", err)
	default:
		o.log.Warn("mail not sent, will retry", "mail", r.ID, "kind", r.Kind, "attempts", r.Attempts, "err", err)
	}
	return false
}

func (o *Outbox) backoff(attempts int) time.Duration {
	return lifecycle.Backoff(attempts, o.BaseBackoff, o.MaxBackoff, o.Jitter())
}
