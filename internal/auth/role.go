package auth

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoUser is returned when no user has the email address given.
var ErrNoUser = errors.New("no user with this email address")

// SetRole gives the user with this email the role (RoleUser or RoleAdmin)
// and returns them. Setting the role a user already has is not an error.
func (s *Service) SetRole(ctx context.Context, email, role string) (User, error) {
	if role != RoleUser && role != RoleAdmin {
		return User{}, fmt.Errorf("unknown role %q", role)
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	res := s.db.Gorm.WithContext(ctx).Model(&User{}).Where("lower(email) = ?", email).Update("role", role)
	if res.Error != nil {
		return User{}, fmt.Errorf("set role of %s: %w", email, res.Error)
	}
	if res.RowsAffected == 0 {
		return User{}, ErrNoUser
	}
	var u User
	if err := s.db.Gorm.WithContext(ctx).Where("lower(email) = ?", email).Take(&u).Error; err != nil {
		return User{}, fmt.Errorf("read user %s: %w", email, err)
	}
	return u, nil
}
