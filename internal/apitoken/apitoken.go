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
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/revocable"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Scope is what a token may do.
type Scope string

const (
	// ScopeRead reads payments, the wallet and its ledger.
	ScopeRead Scope = "read"
	// ScopeTopUp also creates top-ups (and reads).
	ScopeTopUp Scope = "topup"
	// ScopeTransfer also sends money to other people (and reads); a read
	// or top-up token cannot.
	ScopeTransfer Scope = "transfer"
	// ScopeWithdraw also adds bank accounts and makes withdrawals (and
	// reads); it makes no top-ups.
	ScopeWithdraw Scope = "withdraw"
	// ScopeCharges makes and manages a merchant's charges (and reads);
	// only a merchant's token may have it.
	ScopeCharges Scope = "charges"
)

// Allows reports whether a token of scope s may act with scope need.
func (s Scope) Allows(need Scope) bool {
	return s == need || ((s == ScopeTopUp || s == ScopeTransfer || s == ScopeWithdraw || s == ScopeCharges) && need == ScopeRead)
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
	// ErrNameInvalid: the name holds control or invisible characters
	// (bidi overrides that make "\u202Egnp.exe" show as "exe.png").
	ErrNameInvalid = errors.New("token name holds control or invisible characters")
	ErrBadScope    = errors.New("scope must be read, topup, transfer, withdraw or charges")
	// ErrNotMerchant: the scope charges is for a merchant's tokens only.
	ErrNotMerchant = errors.New("only a merchant's token may have the scope charges")
	ErrBadExpiry   = errors.New("expiry must be a whole number of days from 1 to 365")
	ErrNotFound    = errors.New("token not found")
	// ErrTooMany: the user already has as many live tokens as allowed.
	ErrTooMany = errors.New("too many live tokens")
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

// Defaults of Options (API_TOKEN_DEFAULT_DAYS, API_TOKENS_PER_USER).
const (
	DefaultExpiresDays = 90
	DefaultMaxLive     = 10
)

// Options are the token rules; zero values take the defaults.
type Options struct {
	// DefaultDays is the validity of a token created without one.
	DefaultDays int
	// MaxLive is how many unrevoked, unexpired tokens a user may hold.
	MaxLive int
	// CacheTTL is how long a looked-up token may be served from memory
	// (default DefaultCacheTTL; negative: never), and only while KeepCache
	// runs (cache.go).
	CacheTTL time.Duration
	// CacheMax bounds the tokens kept (default DefaultCacheMax).
	CacheMax int
	// Listen tunes KeepCache's LISTEN connection.
	Listen store.ListenOptions
}

// Service creates, checks and revokes tokens.
type Service struct {
	db   *store.DB
	now  func() time.Time
	opts Options
	// lastUsedEvery: last_used_at is written at most this often per token
	// (a busy token does not write on every request).
	lastUsedEvery time.Duration
	// used are the last uses noted by Authenticate and not yet written
	// (token id → when): FlushLastUsed writes them in one transaction,
	// off the requests' path.
	usedMu sync.Mutex
	used   map[int64]time.Time
	// cache keeps looked-up tokens for a second (cache.go).
	cache  *tokenCache
	listen store.ListenOptions
}

// NewService returns the token service over db with the default rules.
func NewService(db *store.DB, now func() time.Time) *Service {
	return New(db, now, Options{})
}

// New returns the token service over db with the rules o.
func New(db *store.DB, now func() time.Time, o Options) *Service {
	if now == nil {
		now = time.Now
	}
	if o.DefaultDays <= 0 {
		o.DefaultDays = DefaultExpiresDays
	}
	if o.MaxLive <= 0 {
		o.MaxLive = DefaultMaxLive
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.CacheMax <= 0 {
		o.CacheMax = DefaultCacheMax
	}
	return &Service{db: db, now: now, opts: o, lastUsedEvery: time.Minute, used: map[int64]time.Time{},
		cache: newTokenCache(now, o.CacheTTL, o.CacheMax), listen: o.Listen}
}

// Rules returns the default validity in days and the live-token cap.
func (s *Service) Rules() (defaultDays, maxLive int) { return s.opts.DefaultDays, s.opts.MaxLive }

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
	ExpiresDays string // "" for the default validity (Options.DefaultDays)
	// Still, when set, runs in the insert's transaction once the user's
	// row is locked; its error refuses the token. It is how a token asked
	// for by a session is refused when a password change or "sign out
	// everywhere" ended that session meanwhile (they lock the same row).
	Still func(tx *gorm.DB) error
}

// ParseScope checks a scope's spelling.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeRead, ScopeTopUp, ScopeTransfer, ScopeWithdraw, ScopeCharges:
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
	case usertext.CheckName(name) != nil:
		return "", Token{}, ErrNameInvalid
	}
	scope, err := ParseScope(in.Scope)
	if err != nil {
		return "", Token{}, err
	}
	now := s.clock()
	days := s.opts.DefaultDays
	if d := strings.TrimSpace(money.LatinDigits(in.ExpiresDays)); d != "" {
		n, ok := parseDays(d)
		if !ok {
			return "", Token{}, ErrBadExpiry
		}
		days = n
	}
	e := now.Add(time.Duration(days) * 24 * time.Hour)
	expires := &e
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Token{}, fmt.Errorf("token secret: %w", err)
	}
	secret = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	t = Token{UserID: in.UserID, Name: name, TokenHash: Hash(secret), Prefix: secret[:prefixLen],
		Scope: scope, CreatedAt: now, ExpiresAt: expires}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The user's row is locked first (SQLite's immediate transaction
		// serialises writers already), so two creates at once cannot both
		// count MaxLive-1 live tokens and both insert; and an account
		// whose address is not confirmed gets none (owner.ErrUnconfirmed:
		// a stranger's token would outlast the owner's password reset
		// only if made before it, and it sends in the address's name).
		if err := owner.LockConfirmed(tx, s.db.Dialect, in.UserID); err != nil {
			return err
		}
		if in.Still != nil {
			if err := in.Still(tx); err != nil {
				return err
			}
		}
		if scope == ScopeCharges {
			var merchants int64
			if err := tx.Table("merchants").Where("user_id = ?", in.UserID).Count(&merchants).Error; err != nil {
				return err
			}
			if merchants == 0 {
				return ErrNotMerchant
			}
		}
		var live int64
		if err := tx.Model(&Token{}).Where("user_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", in.UserID, now).
			Count(&live).Error; err != nil {
			return err
		}
		if live >= int64(s.opts.MaxLive) {
			return ErrTooMany
		}
		return tx.Create(&t).Error
	})
	if errors.Is(err, ErrTooMany) || errors.Is(err, ErrNotMerchant) {
		return "", Token{}, err
	}
	if err != nil {
		return "", Token{}, fmt.Errorf("create token for user %d: %w", in.UserID, err)
	}
	return secret, t, nil
}

// RevokeAllForUser revokes every live token of the user inside tx (sign
// out everywhere, a password change or reset): a stolen token dies with
// the stolen password. It returns how many it revoked. The caller calls
// Changed once tx has committed (the token cache).
func RevokeAllForUser(tx *gorm.DB, userID int64, now time.Time) (int64, error) {
	res := tx.Model(&Token{}).Where("user_id = ? AND revoked_at IS NULL", userID).
		Updates(map[string]any{"revoked_at": now.UTC().Truncate(time.Microsecond), "revoked_by": userID})
	if res.Error != nil {
		return 0, fmt.Errorf("revoke tokens of user %d: %w", userID, res.Error)
	}
	return res.RowsAffected, nil
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

// LastUsedFlushEvery is how often serve writes the tokens' noted last
// uses (FlushLastUsed): last_used_at is at most this late, and at most a
// minute early (written once a minute per token).
const LastUsedFlushEvery = 10 * time.Second

// FlushLastUsed writes the last uses Authenticate noted since the last
// flush, in one transaction, each only if newer by a minute than the one
// stored, and returns how many tokens it wrote. On failure the uses are
// kept for the next flush.
func (s *Service) FlushLastUsed(ctx context.Context) (int, error) {
	s.usedMu.Lock()
	used := s.used
	s.used = map[int64]time.Time{}
	s.usedMu.Unlock()
	if len(used) == 0 {
		return 0, nil
	}
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		for id, at := range used {
			if err := tx.Model(&Token{}).Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, at.Add(-s.lastUsedEvery)).
				Update("last_used_at", at).Error; err != nil {
				return fmt.Errorf("note token %d used: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		s.usedMu.Lock()
		for id, at := range used {
			if cur, ok := s.used[id]; !ok || cur.Before(at) {
				s.used[id] = at
			}
		}
		s.usedMu.Unlock()
		return 0, err
	}
	return len(used), nil
}

// ForUser lists a user's tokens, newest first (revoked ones included).
// This instance's noted last uses are written first.
func (s *Service) ForUser(ctx context.Context, userID int64) ([]Token, error) {
	if _, err := s.FlushLastUsed(ctx); err != nil {
		return nil, err
	}
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
		return nil
	}
	s.changed(userID)
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
	if _, err := s.FlushLastUsed(ctx); err != nil {
		return nil, err
	}
	q := s.db.Gorm.WithContext(ctx).Table("api_tokens AS t").
		Select("t.*, u.email").Joins("JOIN users u ON u.id = t.user_id")
	if e := strings.ToLower(strings.TrimSpace(money.LatinDigits(email))); e != "" {
		q = q.Where(`lower(u.email) LIKE ? ESCAPE '\'`, store.Containing(e))
	}
	var out []AdminRow
	if err := q.Order("t.id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
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
	s.changed(t.UserID)
	return t, nil
}

// Authenticate turns an Authorization header's bearer token into the
// principal it acts for, and notes when the token was last used.
//
// Every API request makes it: one round trip (the token joined to its
// owner, by the token hash's unique index). While KeepCache runs, a live
// token read is kept in memory for at most CacheTTL and dropped at once
// when it or its owner changes, on every instance (cache.go;
// TestTokenCacheRevokedAcrossInstances).
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 200 {
		return Principal{}, ErrUnauthorized
	}
	hash := Hash(secret)
	if e, ok := s.cache.Get(hash); ok {
		s.noteUse(hash, e.Value.p.TokenID, e.Value.lastUsed, s.clock())
		return e.Value.p, nil
	}
	epoch := s.cache.Begin()
	read := s.now()
	var row struct {
		Token
		Email string
	}
	err := s.db.Gorm.WithContext(ctx).Table("api_tokens AS t").Select("t.*, u.email").
		Joins("JOIN users u ON u.id = t.user_id").Where("t.token_hash = ?", hash).Take(&row).Error
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
	p := Principal{TokenID: row.ID, UserID: row.UserID, Email: row.Email, Scope: row.Scope}
	e := revocable.Entry[cachedToken]{Value: cachedToken{p: p, lastUsed: row.LastUsedAt}, UserID: p.UserID, Read: read}
	if row.ExpiresAt != nil {
		e.Expires = *row.ExpiresAt
	}
	s.cache.Put(epoch, hash, e)
	s.noteUse(hash, row.ID, row.LastUsedAt, now)
	return p, nil
}

// noteUse notes the token's use at now unless its last use (stored, or
// noted since) is within lastUsedEvery. Noted in memory; written by
// FlushLastUsed (serve's loop, every LastUsedFlushEvery, and at shutdown),
// never on the request's path.
func (s *Service) noteUse(hash string, id int64, last *time.Time, now time.Time) {
	if last != nil && now.Sub(*last) < s.lastUsedEvery {
		return
	}
	s.usedMu.Lock()
	s.used[id] = now
	s.usedMu.Unlock()
	s.cache.Update(hash, func(t *cachedToken) { t.lastUsed = &now })
}
