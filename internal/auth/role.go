package auth

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
)

// ErrNoUser is returned when no user has the email address given.
var ErrNoUser = errors.New("no user with this email address")

// ErrNotAdmin: the command is an admin's (reset-2fa), and the user with
// this address is not one; nothing was changed.
var ErrNotAdmin = errors.New("the user with this email address is not an admin")

// RoleChange is what SetRole did.
type RoleChange struct {
	User User
	// EnrolmentCode, when set, is the one-time code the new admin types
	// at /admin/2fa before their authenticator is enrolled (promoted and
	// not enrolled yet); shown once, only its hash is kept.
	EnrolmentCode string
}

// SetRole gives the user with this email the role (RoleUser or RoleAdmin)
// from the command line, and returns them. Setting the role a user already
// has is not an error. A change of role is written to the audit log and
// ends the second factor of every session of the user: an admin demoted
// and promoted again types a new code, in every browser. A promoted user
// without an enrolled authenticator gets a new enrolment code.
func (s *Service) SetRole(ctx context.Context, email, role string) (RoleChange, error) {
	if role != RoleUser && role != RoleAdmin {
		return RoleChange{}, fmt.Errorf("unknown role %q", role)
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return RoleChange{}, err
	}
	var out RoleChange
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("lower(email) = ?", email).Take(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNoUser
			}
			return err
		}
		// An admin's account must be its address's owner's: not one a
		// stranger signed up with (a confirmation is never undone).
		if role == RoleAdmin && !u.Verified() {
			return ErrAddressUnconfirmed
		}
		from := u.Role
		if err := tx.Model(&User{}).Where("id = ?", u.ID).Update("role", role).Error; err != nil {
			return err
		}
		if err := tx.Model(&Session{}).Where("user_id = ?", u.ID).Update("second_factor_at", nil).Error; err != nil {
			return err
		}
		u.Role = role
		if role == RoleAdmin && u.TOTPConfirmedAt == nil {
			code, err := issueEnrolmentCode(tx, u.ID)
			if err != nil {
				return err
			}
			out.EnrolmentCode = code
		}
		action := audit.ActionCLIPromote
		if role == RoleUser {
			action = audit.ActionCLIDemote
		}
		out.User = u
		return audit.Record(tx, audit.Entry{Action: action, TargetUserID: &u.ID, FromStatus: from, ToStatus: role,
			Note: "from the command line", Result: audit.ResultDone, CreatedAt: s.now().UTC()})
	})
	if err != nil {
		if errors.Is(err, ErrNoUser) {
			return RoleChange{}, err
		}
		return RoleChange{}, fmt.Errorf("set role of %s: %w", email, err)
	}
	s.changed(out.User.ID)
	return out, nil
}
