package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"
)

// ResetLifetime is how long a password reset link works.
const ResetLifetime = 30 * time.Minute

// maxLiveResets is how many unexpired, unused reset links an account may
// have at once: a flood of requests from many clients sends no more mail.
const maxLiveResets = 5

// ErrResetInvalid: the reset link is unknown, used or expired.
var ErrResetInvalid = errors.New("reset link is unknown, used or expired")

// ResetMailer queues the mail with the reset link inside tx (so the link
// exists if and only if its mail is queued). token is the secret of the
// link; it is never stored, only its hash.
type ResetMailer func(tx *gorm.DB, u User, token string, expires time.Time) error

type passwordReset struct {
	ID        int64 `gorm:"primaryKey"`
	UserID    int64
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

func (passwordReset) TableName() string { return "password_resets" }

// DefaultResetAnswerAfter is how long RequestReset takes at least, on the
// site: more than the work of either path (the password hash's compare,
// and for a known address the link's write and its mail's), so that both
// take the same time.
const DefaultResetAnswerAfter = 500 * time.Millisecond

// RequestReset sends a reset link to the address if an account has it.
// The caller answers the same either way, and no sooner than
// Options.ResetAnswerAfter after the call began: the link's write would
// otherwise tell who has an account. Requests are throttled per address
// (known or not) and per client (the requester's IP), as sign-in guesses
// are: a *ThrottledError says how long to wait (at once: the throttle
// answers alike for any address).
func (s *Service) RequestReset(ctx context.Context, email, client string) error {
	start := s.now()
	err := s.requestReset(ctx, email, client)
	var throttled *ThrottledError
	if s.resetAfter > 0 && !errors.As(err, &throttled) {
		// At most resetAfter: s.now is the database's clock, which a sync
		// may step back.
		if left := min(s.resetAfter-s.now().Sub(start), s.resetAfter); left > 0 {
			s.wait(ctx, left)
		}
	}
	return err
}

func (s *Service) requestReset(ctx context.Context, email, client string) error {
	// Per client: 20 free (an office behind one address), then waits
	// that double; per address and client: 5, as sign-in. The address's
	// throttle is the requester's, never the address's alone: a stranger
	// flooding someone's address delays only their own requests, not the
	// owner's (issue 31, item 10). What a flood from many clients can do
	// to the owner's inbox is bounded by maxLiveResets.
	if err := s.takeAttemptFree(ctx, "reset-client:"+client, 20); err != nil {
		return err
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(email)) // same time either way
		return nil
	}
	if err := s.takeAttempt(ctx, resetKey(email)+client); err != nil {
		return err
	}
	var u User
	err = s.db.Gorm.WithContext(ctx).Where("lower(email) = ?", email).Take(&u).Error
	// The same slow step whether or not an account has the address: were
	// it only on the unknown address's path, the quicker answer would
	// tell who has an account.
	_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(email))
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find user: %w", err)
	}
	if s.resetMailer == nil {
		return errors.New("password reset: no mailer configured")
	}
	tok, err := newSecret()
	if err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	r := passwordReset{UserID: u.ID, TokenHash: hashToken(tok), CreatedAt: now, ExpiresAt: now.Add(ResetLifetime)}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// At most maxLiveResets live links per account: past them no new
		// mail is sent (the same answer), and the owner already has a
		// working link in the inbox. Counted under the account's lock,
		// so that requests at once cannot each find room and queue more.
		if err := lockUser(tx, s.db, u.ID); err != nil {
			return err
		}
		var live int64
		if err := tx.Model(&passwordReset{}).
			Where("user_id = ? AND used_at IS NULL AND expires_at > ?", u.ID, now).Count(&live).Error; err != nil {
			return err
		}
		if live >= maxLiveResets {
			return nil
		}
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		return s.resetMailer(tx, u, tok, r.ExpiresAt)
	})
	if err != nil {
		return fmt.Errorf("password reset for user %d: %w", u.ID, err)
	}
	return nil
}

// CheckReset reports whether a reset link still works, and for whom.
func (s *Service) CheckReset(ctx context.Context, token string) (User, error) {
	if token == "" || len(token) > 100 {
		return User{}, ErrResetInvalid
	}
	var r passwordReset
	err := s.db.Gorm.WithContext(ctx).Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hashToken(token), s.now().UTC()).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, ErrResetInvalid
	}
	if err != nil {
		return User{}, fmt.Errorf("reset lookup: %w", err)
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Take(&u, r.UserID).Error; err != nil {
		return User{}, fmt.Errorf("reset user: %w", err)
	}
	return u, nil
}

// ResetPassword uses a reset link once: in one transaction the link is
// spent (a conditional update: two uses at once cannot both succeed),
// every other link of the user dies, the password is replaced, the
// address is confirmed, every session ends, every API token is revoked
// and every webhook endpoint turned off.
func (s *Service) ResetPassword(ctx context.Context, token, password string) (User, Ended, error) {
	if token == "" || len(token) > 100 {
		return User{}, Ended{}, ErrResetInvalid
	}
	if err := CheckPassword(password); err != nil {
		return User{}, Ended{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.bcryptCost)
	if err != nil {
		return User{}, Ended{}, fmt.Errorf("hash password: %w", err)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var u User
	var ended Ended
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&passwordReset{}).Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hashToken(token), now).Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrResetInvalid
		}
		var r passwordReset
		if err := tx.Where("token_hash = ?", hashToken(token)).Take(&r).Error; err != nil {
			return err
		}
		if err := tx.Model(&passwordReset{}).Where("user_id = ? AND used_at IS NULL", r.UserID).Update("used_at", now).Error; err != nil {
			return err
		}
		if err := tx.Model(&User{}).Where("id = ?", r.UserID).Update("password_hash", string(hash)).Error; err != nil {
			return err
		}
		// The link reached the address's inbox: the address is
		// confirmed, as by its own link (verify.go), whose links die.
		// The owner whose address a stranger signed up with takes the
		// account back this way: every session and token of the
		// stranger ends, and the name the stranger chose goes (an
		// unconfirmed account got nothing else that lasts).
		if err := tx.Exec(`UPDATE users SET display_name = '' WHERE id = ? AND email_verified_at IS NULL`, r.UserID).Error; err != nil {
			return err
		}
		if err := confirmEmail(tx, r.UserID, now); err != nil {
			return err
		}
		if err := tx.Model(&emailVerification{}).Where("user_id = ? AND used_at IS NULL", r.UserID).Update("used_at", now).Error; err != nil {
			return err
		}
		if err := tx.Take(&u, r.UserID).Error; err != nil {
			return err
		}
		ended.Sessions, ended.Tokens, ended.Endpoints, err = endEverything(tx, r.UserID, "", now)
		return err
	})
	if errors.Is(err, ErrResetInvalid) {
		return User{}, Ended{}, err
	}
	if err != nil {
		return User{}, Ended{}, fmt.Errorf("reset password: %w", err)
	}
	s.changed(u.ID)
	// The address may ask for links again, and sign in, at once, from
	// every client (the owner's own guesses before the reset included).
	s.clearSignInThrottles(ctx, u.Email)
	return u, ended, nil
}

// ReceiptsEnabled reports whether the user wants receipts by e-mail.
func (s *Service) ReceiptsEnabled(ctx context.Context, userID int64) (bool, error) {
	var on bool
	if err := s.db.Gorm.WithContext(ctx).Raw(`SELECT receipts_enabled FROM users WHERE id = ?`, userID).Scan(&on).Error; err != nil {
		return false, fmt.Errorf("receipts setting of user %d: %w", userID, err)
	}
	return on, nil
}

// SetReceipts turns receipts by e-mail on or off for the user.
func (s *Service) SetReceipts(ctx context.Context, userID int64, on bool) error {
	if err := s.db.Gorm.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Update("receipts_enabled", on).Error; err != nil {
		return fmt.Errorf("set receipts of user %d: %w", userID, err)
	}
	s.changed(userID)
	return nil
}

// PurgeResets deletes reset links a day past their expiry.
func (s *Service) PurgeResets(ctx context.Context) (int64, error) {
	res := s.db.Gorm.WithContext(ctx).Where("expires_at < ?", s.now().UTC().Add(-24*time.Hour)).Delete(&passwordReset{})
	if res.Error != nil {
		return 0, fmt.Errorf("purge resets: %w", res.Error)
	}
	return res.RowsAffected, nil
}
