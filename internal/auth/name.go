package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/usertext"
)

// MaxDisplayNameRunes bounds a display name (the column's CHECK says the
// same).
const MaxDisplayNameRunes = 60

var (
	// ErrDisplayNameInvalid: the name holds a control or invisible
	// character (internal/usertext).
	ErrDisplayNameInvalid = errors.New("auth: display name holds invisible or control characters")
	// ErrDisplayNameTooLong: more than MaxDisplayNameRunes characters.
	ErrDisplayNameTooLong = errors.New("auth: display name too long")
)

// NormalizeDisplayName is the stored form of a typed display name: spaces
// trimmed and each run of them made one, the Arabic yeh and kaf written
// as the Persian ones (both keyboards type them), then checked. An empty
// result means "no name".
func NormalizeDisplayName(s string) (string, error) {
	if err := usertext.CheckName(s); err != nil {
		return "", fmt.Errorf("%w: %w", ErrDisplayNameInvalid, err)
	}
	s = strings.Join(strings.Fields(s), " ")
	s = strings.NewReplacer("ي", "ی", "ى", "ی", "ك", "ک").Replace(s)
	if utf8.RuneCountInString(s) > MaxDisplayNameRunes {
		return "", ErrDisplayNameTooLong
	}
	return s, nil
}

// DisplayName is the user's display name ("" when none was given).
func (s *Service) DisplayName(ctx context.Context, userID int64) (string, error) {
	var name string
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT display_name FROM users WHERE id = ?`, userID), &name); err != nil {
		return "", fmt.Errorf("display name of user %d: %w", userID, err)
	}
	return name, nil
}

// SetDisplayName stores the user's display name, normalized; "" removes
// it. A name that NormalizeDisplayName refuses changes nothing.
func (s *Service) SetDisplayName(ctx context.Context, userID int64, name string) (string, error) {
	name, err := NormalizeDisplayName(name)
	if err != nil {
		return "", err
	}
	if err := s.db.Gorm.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Update("display_name", name).Error; err != nil {
		return "", fmt.Errorf("set display name of user %d: %w", userID, err)
	}
	s.changed(userID)
	return name, nil
}
