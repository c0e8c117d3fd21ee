package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/owner"
)

// VerifyLifetime is how long a link that confirms an address works.
const VerifyLifetime = 48 * time.Hour

// maxLiveVerifications is how many unexpired, unused confirmation links an
// account may have at once: past them "send the link again" sends nothing
// more (the inbox already holds a working one).
const maxLiveVerifications = 5

// ErrVerifyInvalid: the confirmation link is unknown, used or expired.
var ErrVerifyInvalid = errors.New("confirmation link is unknown, used or expired")

// ErrAddressUnconfirmed: the account's address is not confirmed, and the
// act needs its owner (the account may be a stranger's who signed up
// with the address). It is owner.ErrUnconfirmed, which every service
// that checks the address answers.
var ErrAddressUnconfirmed = owner.ErrUnconfirmed

// VerifyMailer queues the mail with the link that confirms u's address,
// inside tx (so the link exists if and only if its mail is queued). token
// is the link's secret; only its hash is stored.
type VerifyMailer func(tx *gorm.DB, u User, token string, expires time.Time) error

type emailVerification struct {
	ID        int64 `gorm:"primaryKey"`
	UserID    int64
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

func (emailVerification) TableName() string { return "email_verifications" }

// Register is sign-up by the person who owns the address (the web form):
// the account, its wallet, and a link that confirms the address with its
// mail, in one transaction. Until the link is used the address is not
// confirmed, and no one can send the account money by it (transfer's
// recipient lookup): a stranger who signs up with someone else's address
// gets nothing meant for its owner. SignUp (an operator, a tool) makes an
// account whose address counts as confirmed.
func (s *Service) Register(ctx context.Context, email, password, locale string) (User, error) {
	if s.verifyMailer == nil {
		return User{}, errors.New("sign up: no mailer configured for the confirmation link")
	}
	return s.signUp(ctx, email, password, RoleUser, locale, false, nil)
}

// Verified reports whether the user's address is confirmed.
func (u User) Verified() bool { return u.EmailVerifiedAt != nil }

// RequestVerification mails the user a new link that confirms the address,
// unless it is confirmed already or maxLiveVerifications links are live
// (then nothing is sent, and nil is returned: the inbox has a working
// link). It reports whether a mail was queued.
func (s *Service) RequestVerification(ctx context.Context, userID int64) (bool, error) {
	if s.verifyMailer == nil {
		return false, errors.New("confirm address: no mailer configured")
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Take(&u, userID).Error; err != nil {
		return false, fmt.Errorf("confirm address of user %d: %w", userID, err)
	}
	if u.Verified() {
		return false, nil
	}
	queued := false
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The count and the insert are one writer per user on
		// PostgreSQL (the user's row locked), so that requests at once
		// cannot pass the limit together.
		if err := lockUser(tx, s.db, userID); err != nil {
			return err
		}
		// Confirmed meanwhile (read again under the lock): no link.
		var pending int64
		if err := tx.Model(&User{}).Where("id = ? AND email_verified_at IS NULL", userID).Count(&pending).Error; err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		var live int64
		if err := tx.Model(&emailVerification{}).
			Where("user_id = ? AND used_at IS NULL AND expires_at > ?", userID, s.now().UTC()).Count(&live).Error; err != nil {
			return err
		}
		if live >= maxLiveVerifications {
			return nil
		}
		queued = true
		return s.addVerification(tx, u)
	})
	if err != nil {
		return false, fmt.Errorf("confirm address of user %d: %w", userID, err)
	}
	return queued, nil
}

// addVerification stores a new confirmation link of u and queues its mail.
func (s *Service) addVerification(tx *gorm.DB, u User) error {
	tok, err := newSecret()
	if err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	v := emailVerification{UserID: u.ID, TokenHash: hashToken(tok), CreatedAt: now, ExpiresAt: now.Add(VerifyLifetime)}
	if err := tx.Create(&v).Error; err != nil {
		return err
	}
	return s.verifyMailer(tx, u, tok, v.ExpiresAt)
}

// CheckVerification reports whether a confirmation link still works, and
// for whom.
func (s *Service) CheckVerification(ctx context.Context, token string) (User, error) {
	if token == "" || len(token) > 100 {
		return User{}, ErrVerifyInvalid
	}
	var v emailVerification
	err := s.db.Gorm.WithContext(ctx).Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hashToken(token), s.now().UTC()).Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, ErrVerifyInvalid
	}
	if err != nil {
		return User{}, fmt.Errorf("confirmation link lookup: %w", err)
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Take(&u, v.UserID).Error; err != nil {
		return User{}, fmt.Errorf("confirmation link's user: %w", err)
	}
	return u, nil
}

// Verify uses a confirmation link once, for the account signed in
// (userID): the link alone proves the inbox, not the account, and the
// owner of an address a stranger signed up with must not confirm the
// stranger's account by answering "yes, this address is mine". In one
// transaction the link is spent (a conditional update: two uses at once
// cannot both succeed, and a link of another account is not used), every
// other link of the user dies, and the address is confirmed (its first
// confirmation's time is kept).
func (s *Service) Verify(ctx context.Context, token string, userID int64) (User, error) {
	if token == "" || len(token) > 100 {
		return User{}, ErrVerifyInvalid
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var u User
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&emailVerification{}).Where("token_hash = ? AND user_id = ? AND used_at IS NULL AND expires_at > ?", hashToken(token), userID, now).Update("used_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrVerifyInvalid
		}
		if err := tx.Model(&emailVerification{}).Where("user_id = ? AND used_at IS NULL", userID).Update("used_at", now).Error; err != nil {
			return err
		}
		if err := confirmEmail(tx, userID, now); err != nil {
			return err
		}
		return tx.Take(&u, userID).Error
	})
	if errors.Is(err, ErrVerifyInvalid) {
		return User{}, err
	}
	if err != nil {
		return User{}, fmt.Errorf("confirm address: %w", err)
	}
	s.changed(u.ID)
	return u, nil
}

// confirmEmail marks the user's address confirmed at now, unless it was
// before.
func confirmEmail(tx *gorm.DB, userID int64, now time.Time) error {
	return tx.Model(&User{}).Where("id = ? AND email_verified_at IS NULL", userID).Update("email_verified_at", now).Error
}

// PurgeVerifications deletes confirmation links a day past their expiry.
func (s *Service) PurgeVerifications(ctx context.Context) (int64, error) {
	res := s.db.Gorm.WithContext(ctx).Where("expires_at < ?", s.now().UTC().Add(-24*time.Hour)).Delete(&emailVerification{})
	if res.Error != nil {
		return 0, fmt.Errorf("purge confirmation links: %w", res.Error)
	}
	return res.RowsAffected, nil
}
