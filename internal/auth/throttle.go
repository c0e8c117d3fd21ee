package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/kifpool/kifpool/internal/store"
)

// Throttling of guesses per account, kept in the database so that every
// instance counts the same attempts. Each attempt is counted before it is
// judged (so parallel guesses cannot all slip in before the first failure
// is written); a success clears the count. After FreeAttempts attempts in
// a row without a success, each further attempt waits twice as long as
// the last, up to MaxThrottleDelay.
const (
	FreeAttempts     = 5
	MaxThrottleDelay = 15 * time.Minute
	// throttleMemory: a key quiet this long starts counting afresh.
	throttleMemory = 24 * time.Hour
)

// ThrottledError says an attempt was not judged: too many failed attempts
// in a row for this account; try again after RetryAfter.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed attempts: try again in %s", e.RetryAfter.Round(time.Second))
}

// ErrThrottled matches every *ThrottledError with errors.Is.
var ErrThrottled = errors.New("too many failed attempts")

// Is makes errors.Is(err, ErrThrottled) true.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// throttleDelay is the wait after the n-th attempt in a row.
func throttleDelay(n int) time.Duration {
	if n < FreeAttempts {
		return 0
	}
	if n-FreeAttempts >= 10 {
		return MaxThrottleDelay
	}
	d := time.Second << (n - FreeAttempts)
	return min(d, MaxThrottleDelay)
}

type authThrottle struct {
	Key         string `gorm:"primaryKey"`
	Failures    int
	LockedUntil time.Time
	UpdatedAt   time.Time
}

func (authThrottle) TableName() string { return "auth_throttles" }

// takeAttempt counts an attempt on key, or refuses it with a
// *ThrottledError while the key is locked.
func (s *Service) takeAttempt(ctx context.Context, key string) error {
	return s.takeAttemptFree(ctx, key, FreeAttempts)
}

// lockedFor is how long key stays locked (0: it is not), counting
// nothing: for a check that must refuse while locked even an answer it
// would take (a right code), and count only the wrong ones.
func (s *Service) lockedFor(ctx context.Context, key string) (time.Duration, error) {
	var rows []authThrottle
	if err := s.db.Gorm.WithContext(ctx).Where("key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("throttle %s: %w", key, err)
	}
	now := s.now().UTC()
	if len(rows) == 0 || !rows[0].LockedUntil.After(now) {
		return 0, nil
	}
	return rows[0].LockedUntil.Sub(now), nil
}

// clearSignInThrottles lets an address sign in, and ask for links, at
// once from every client once its password was set anew (a reset, an
// operator's set-password, the owner's change): the guesses that locked
// it were against a password that is gone, and the owner must not wait
// out a stranger's lock with the new one.
func (s *Service) clearSignInThrottles(ctx context.Context, email string) {
	_ = s.clearAttemptsPrefix(ctx, resetKey(email))
	_ = s.clearAttemptsPrefix(ctx, signInKey(email))
	_ = s.clearAttempts(ctx, "signin:"+email)
}

// takeAttemptFree is takeAttempt with free attempts before the waits
// start (a client address shared by an office gets more than an account).
func (s *Service) takeAttemptFree(ctx context.Context, key string, free int) error {
	now := s.now().UTC()
	var wait time.Duration
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO auth_throttles (key, failures, locked_until, updated_at) VALUES (?, 0, ?, ?) ON CONFLICT (key) DO NOTHING`,
			key, now, now).Error; err != nil {
			return err
		}
		q := tx
		if s.db.Dialect == store.Postgres {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var row authThrottle
		if err := q.Where("key = ?", key).Take(&row).Error; err != nil {
			return err
		}
		if row.LockedUntil.After(now) {
			wait = row.LockedUntil.Sub(now)
			return nil
		}
		if now.Sub(row.UpdatedAt) > throttleMemory {
			row.Failures = 0
		}
		n := row.Failures + 1
		return tx.Model(&authThrottle{}).Where("key = ?", key).
			Updates(map[string]any{"failures": n, "locked_until": now.Add(throttleDelay(n - free + FreeAttempts)), "updated_at": now}).Error
	})
	if err != nil {
		return fmt.Errorf("throttle %s: %w", key, err)
	}
	if wait > 0 {
		return &ThrottledError{RetryAfter: wait}
	}
	return nil
}

// clearAttempts forgets the attempts on key (after a success).
func (s *Service) clearAttempts(ctx context.Context, key string) error {
	if err := s.db.Gorm.WithContext(ctx).Where("key = ?", key).Delete(&authThrottle{}).Error; err != nil {
		return fmt.Errorf("clear throttle: %w", err)
	}
	return nil
}

// clearAttemptsPrefix forgets the attempts on every key that starts with
// prefix (an address's keys of every client). Compared as a substring,
// not with LIKE: an address may hold "_" or "%".
func (s *Service) clearAttemptsPrefix(ctx context.Context, prefix string) error {
	if err := s.db.Gorm.WithContext(ctx).Where("substr(key, 1, ?) = ?", len([]rune(prefix)), prefix).Delete(&authThrottle{}).Error; err != nil {
		return fmt.Errorf("clear throttles: %w", err)
	}
	return nil
}

// PurgeThrottles deletes throttle rows quiet for longer than they are
// remembered.
func (s *Service) PurgeThrottles(ctx context.Context) (int64, error) {
	res := s.db.Gorm.WithContext(ctx).Where("updated_at < ? AND locked_until < ?", s.now().UTC().Add(-throttleMemory), s.now().UTC()).Delete(&authThrottle{})
	if res.Error != nil {
		return 0, fmt.Errorf("purge throttles: %w", res.Error)
	}
	return res.RowsAffected, nil
}
