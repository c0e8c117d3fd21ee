// Package apitoken holds personal API tokens: a signed-in user creates one
// (name, scope, optional expiry), sees it once, and sends it as
// "Authorization: Bearer kp_…". Only the SHA-256 of a token is stored.
// Owners revoke their own tokens; admins list and revoke anyone's, and
// every such revocation is recorded in the audit log.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/store"
)

// Scope is what a token may do.
type Scope string

const (
	// ScopeRead reads payments, the wallet and its ledger.
	ScopeRead Scope = "read"
	// ScopeTopUp also creates top-ups (and reads).
	ScopeTopUp Scope = "topup"
)

// Allows reports whether a token of scope s may act with scope need.
func (s Scope) Allows(need Scope) bool {
	return s == need || (s == ScopeTopUp && need == ScopeRead)
}

// Prefix starts every token, so that secret scanners and people can tell
// what it is.
const Prefix = "kp_"

// Limits of the form.
const (
	MaxNameLen     = 100
	MaxExpiresDays = 365
	prefixLen      = len(Prefix) + 6
)

// Errors the pages translate.
var (
	ErrNameRequired = errors.New("a token needs a name")
	ErrNameTooLong  = errors.New("token name is too long")
	ErrBadScope     = errors.New("scope must be read or topup")
	ErrBadExpiry    = errors.New("expiry must be a whole number of days from 1 to 365")
	ErrNotFound     = errors.New("token not found")
	// ErrUnauthorized: the bearer token is unknown, revoked or expired.
	ErrUnauthorized = errors.New("token is unknown, revoked or expired")
)

// Token is one API token (without its secret).
type Token struct {
	ID         int64 `gorm:"primaryKey"`
	UserID     int64
	Name       string
	TokenHash  string
	Prefix     string
	Scope      Scope
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	RevokedBy  *int64
}

// TableName maps Token to api_tokens.
func (Token) TableName() string { return "api_tokens" }

// Active reports whether the token still authenticates at now.
func (t Token) Active(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}

// Principal is who an API request acts for.
type Principal struct {
	TokenID int64
	UserID  int64
	Email   string
	Scope   Scope
}

// Service creates, checks and revokes tokens.
type Service struct {
	db  *store.DB
	now func() time.Time
	// lastUsedEvery: last_used_at is written at most this often per token
	// (a busy token does not write on every request).
	lastUsedEvery time.Duration
}

// NewService returns the token service over db.
func NewService(db *store.DB, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: db, now: now, lastUsedEvery: time.Minute}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Hash is what is stored for a token.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CreateInput is the submitted form.
type CreateInput struct {
	UserID      int64
	Name        string
	Scope       string
	ExpiresDays string // "" for a token that does not expire
}

// ParseScope checks a scope's spelling.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeRead, ScopeTopUp:
		return Scope(s), nil
	}
	return "", ErrBadScope
}

// Create makes a token and returns its secret, shown once.
func (s *Service) Create(ctx context.Context, in CreateInput) (secret string, t Token, err error) {
	name := strings.TrimSpace(in.Name)
	switch {
	case name == "":
		return "", Token{}, ErrNameRequired
	case utf8.RuneCountInString(name) > MaxNameLen || !utf8.ValidString(name):
		return "", Token{}, ErrNameTooLong
	}
	scope, err := ParseScope(in.Scope)
	if err != nil {
		return "", Token{}, err
	}
	now := s.clock()
	var expires *time.Time
	if d := strings.TrimSpace(in.ExpiresDays); d != "" {
		n, ok := parseDays(d)
		if !ok {
			return "", Token{}, ErrBadExpiry
		}
		e := now.Add(time.Duration(n) * 24 * time.Hour)
		expires = &e
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Token{}, fmt.Errorf("token secret: %w", err)
	}
	secret = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	t = Token{UserID: in.UserID, Name: name, TokenHash: Hash(secret), Prefix: secret[:prefixLen],
		Scope: scope, CreatedAt: now, ExpiresAt: expires}
	if err := s.db.Gorm.WithContext(ctx).Create(&t).Error; err != nil {
		return "", Token{}, fmt.Errorf("create token for user %d: %w", in.UserID, err)
	}
	return secret, t, nil
}

func parseDays(s string) (int, bool) {
	if len(s) > 3 {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, n >= 1 && n <= MaxExpiresDays
}

// ForUser lists a user's tokens, newest first (revoked ones included).
func (s *Service) ForUser(ctx context.Context, userID int64) ([]Token, error) {
	var out []Token
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("tokens of user %d: %w", userID, err)
	}
	return out, nil
}

// Revoke revokes one of the user's own tokens. Revoking a revoked token
// is a no-op; another user's token is ErrNotFound.
func (s *Service) Revoke(ctx context.Context, userID, tokenID int64) error {
	res := s.db.Gorm.WithContext(ctx).Model(&Token{}).
		Where("id = ? AND user_id = ? AND revoked_at IS NULL", tokenID, userID).
		Updates(map[string]any{"revoked_at": s.clock(), "revoked_by": userID})
	if res.Error != nil {
		return fmt.Errorf("revoke token %d: %w", tokenID, res.Error)
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := s.db.Gorm.WithContext(ctx).Model(&Token{}).Where("id = ? AND user_id = ?", tokenID, userID).Count(&n).Error; err != nil {
			return fmt.Errorf("find token %d: %w", tokenID, err)
		}
		if n == 0 {
			return ErrNotFound
		}
	}
	return nil
}

// AdminRow is a token with its owner, for the admin page.
type AdminRow struct {
	Token
	Email string
}

// All lists every user's tokens for admins, newest first; email, when not
// empty, keeps the tokens of users whose address contains it.
func (s *Service) All(ctx context.Context, email string, limit int) ([]AdminRow, error) {
	if limit <= 0 || limit > 500 {
		limit = 200
	}
	q := s.db.Gorm.WithContext(ctx).Table("api_tokens AS t").
		Select("t.*, u.email").Joins("JOIN users u ON u.id = t.user_id")
	if e := strings.ToLower(strings.TrimSpace(email)); e != "" {
		q = q.Where("lower(u.email) LIKE ?", "%"+escapeLike(e)+"%")
	}
	var out []AdminRow
	if err := q.Order("t.id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

func escapeLike(s string) string {
	return strings.NewReplacer(`%`, ``, `_`, ``, `\`, ``).Replace(s)
}

// AdminRevoke revokes any user's token and records it in the audit log,
// in one transaction. A token already revoked is left as it is (and the
// attempt is recorded as skipped).
func (s *Service) AdminRevoke(ctx context.Context, adminID, tokenID int64) (Token, error) {
	var t Token
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Take(&t, tokenID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		now := s.clock()
		res := tx.Model(&Token{}).Where("id = ? AND revoked_at IS NULL", tokenID).
			Updates(map[string]any{"revoked_at": now, "revoked_by": adminID})
		if res.Error != nil {
			return res.Error
		}
		owner := t.UserID
		e := audit.Entry{AdminID: adminID, Action: audit.ActionTokenRevoke, TargetUserID: &owner,
			Note: fmt.Sprintf("token %d %q (%s, scope %s)", t.ID, t.Name, t.Prefix, t.Scope), Result: audit.ResultDone, CreatedAt: now}
		if res.RowsAffected == 0 {
			e.Result = audit.ResultSkipped
		} else {
			t.RevokedAt, t.RevokedBy = &now, &adminID
		}
		return audit.Record(tx, e)
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Token{}, err
		}
		return Token{}, fmt.Errorf("admin %d revokes token %d: %w", adminID, tokenID, err)
	}
	return t, nil
}

// Authenticate turns an Authorization header's bearer token into the
// principal it acts for, and notes when the token was last used.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 200 {
		return Principal{}, ErrUnauthorized
	}
	var row struct {
		Token
		Email string
	}
	err := s.db.Gorm.WithContext(ctx).Table("api_tokens AS t").Select("t.*, u.email").
		Joins("JOIN users u ON u.id = t.user_id").Where("t.token_hash = ?", Hash(secret)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, fmt.Errorf("token lookup: %w", err)
	}
	now := s.clock()
	if !row.Active(now) {
		return Principal{}, ErrUnauthorized
	}
	if row.LastUsedAt == nil || now.Sub(*row.LastUsedAt) >= s.lastUsedEvery {
		err := s.db.Gorm.WithContext(ctx).Model(&Token{}).
			Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", row.ID, now.Add(-s.lastUsedEvery)).
			Update("last_used_at", now).Error
		if err != nil {
			return Principal{}, fmt.Errorf("note token %d used: %w", row.ID, err)
		}
	}
	return Principal{TokenID: row.ID, UserID: row.UserID, Email: row.Email, Scope: row.Scope}, nil
}
