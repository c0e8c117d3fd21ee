package mail

import (
	"context"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// Queue is the outgoing mail queue's figures (metrics).
type Queue struct {
	// Queued mails: not yet sent, failed or expired (retrying ones
	// included).
	Queued int64
	// Overdue is how long the queued mail due longest has waited past
	// its attempt time (zero: none due). A mail waiting out its backoff
	// is not due; one being sent is not either (its claim moved its time
	// a Lease ahead), so a queue that is delivered stays near zero.
	Overdue time.Duration
}

// QueueStats reads the queue's figures at now. It only reads: both
// statements name status = 'queued' as a literal and are answered from
// the index on (status, next_attempt_at) (mails_due_idx, migration 00014).
func QueueStats(ctx context.Context, db *store.DB, now time.Time) (Queue, error) {
	var q Queue
	g := db.Gorm.WithContext(ctx)
	if err := g.Model(&Row{}).Where("status = 'queued'").Count(&q.Queued).Error; err != nil {
		return q, fmt.Errorf("queued mail: %w", err)
	}
	if q.Queued == 0 {
		return q, nil
	}
	var due []time.Time
	if err := g.Model(&Row{}).Where("status = 'queued'").Order("next_attempt_at").Limit(1).Pluck("next_attempt_at", &due).Error; err != nil {
		return q, fmt.Errorf("oldest queued mail: %w", err)
	}
	if len(due) == 1 {
		q.Overdue = max(now.Sub(due[0]), 0)
	}
	return q, nil
}
