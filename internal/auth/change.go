package auth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
)

// ErrPasswordSame: the new password is the current one.
var ErrPasswordSame = errors.New("the new password is the current password")

// Ended says what a password change ended besides the password itself.
type Ended struct {
	Sessions  int64 // sessions signed out
	Tokens    int64 // API tokens revoked
	Endpoints int64 // webhook endpoints turned off
}

// VerifyPassword checks the signed-in user's password again (before a
// sensitive act: a new API token, a password change). Attempts are
// throttled per account like sign-in (*ThrottledError); a wrong password
// is ErrBadCredentials.
func (s *Service) VerifyPassword(ctx context.Context, userID int64, password string) error {
	key := "reauth:" + strconv.FormatInt(userID, 10)
	if password == "" || len(password) > MaxPasswordLen {
		// Never a password: not a guess, not counted (a form sent with the
		// field left empty does not bring the owner closer to a wait).
		return ErrBadCredentials
	}
	if err := s.takeAttempt(ctx, key); err != nil {
		return err
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Take(&u, userID).Error; err != nil {
		return fmt.Errorf("find user %d: %w", userID, err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return ErrBadCredentials
	}
	return s.clearAttempts(ctx, key)
}

// ChangePassword replaces the signed-in user's password after checking
// the current one (throttled as VerifyPassword). In one transaction it
// ends every other session (the one whose token is keepSession stays
// signed in), revokes every API token and turns off every webhook endpoint.
func (s *Service) ChangePassword(ctx context.Context, userID int64, keepSession, current, next string) (Ended, error) {
	if err := s.VerifyPassword(ctx, userID, current); err != nil {
		return Ended{}, err
	}
	if current == next {
		return Ended{}, ErrPasswordSame
	}
	ended, err := s.replacePassword(ctx, userID, keepSession, next, nil)
	if err != nil {
		return ended, err
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Take(&u, userID).Error; err == nil {
		s.clearSignInThrottles(ctx, u.Email)
	}
	return ended, nil
}

// SetPassword gives the user with this email a new password (the
// operator's `kifpool user set-password`), ends every session of theirs,
// revokes every API token and turns off every webhook endpoint.
func (s *Service) SetPassword(ctx context.Context, email, password string) (User, Ended, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, Ended{}, err
	}
	var u User
	err = s.db.Gorm.WithContext(ctx).Where("lower(email) = ?", email).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, Ended{}, ErrNoUser
	}
	if err != nil {
		return User{}, Ended{}, fmt.Errorf("find user %s: %w", email, err)
	}
	// Recorded in the audit log in the same transaction: the operator's
	// way into any account leaves a trace beside the log's line.
	ended, err := s.replacePassword(ctx, u.ID, "", password, func(tx *gorm.DB) error {
		return audit.Record(tx, audit.Entry{Action: audit.ActionCLISetPassword, TargetUserID: &u.ID, Note: "from the command line",
			Result: audit.ResultDone, CreatedAt: s.now().UTC()})
	})
	if err == nil {
		s.clearSignInThrottles(ctx, u.Email)
	}
	return u, ended, err
}

// replacePassword checks the password rules, stores the new hash, ends the
// user's sessions (but keep's), revokes their tokens, turns off their
// webhook endpoints and spends their reset
// links (one asked for before the change must not undo it), in one
// transaction.
func (s *Service) replacePassword(ctx context.Context, userID int64, keep, password string, record func(tx *gorm.DB) error) (Ended, error) {
	if err := CheckPassword(password); err != nil {
		return Ended{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.bcryptCost)
	if err != nil {
		return Ended{}, fmt.Errorf("hash password: %w", err)
	}
	var ended Ended
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&User{}).Where("id = ?", userID).Update("password_hash", string(hash))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNoUser
		}
		if err := tx.Model(&passwordReset{}).Where("user_id = ? AND used_at IS NULL", userID).
			Update("used_at", s.now().UTC().Truncate(time.Microsecond)).Error; err != nil {
			return err
		}
		ended.Sessions, ended.Tokens, ended.Endpoints, err = endEverything(tx, userID, keep, s.now())
		if err != nil || record == nil {
			return err
		}
		return record(tx)
	})
	if errors.Is(err, ErrNoUser) {
		return Ended{}, err
	}
	if err != nil {
		return Ended{}, fmt.Errorf("set password of user %d: %w", userID, err)
	}
	s.changed(userID)
	return ended, nil
}
