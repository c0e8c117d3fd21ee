// Package auth holds users, their passwords and their sign-in sessions.
//
// Passwords are changed by their owner, set by an operator (`kifpool user
// set-password`) or reset through a link sent by mail; roles say who is an
// admin. A new password or "sign out everywhere" ends the user's sessions,
// revokes their API tokens and turns off their webhook endpoints in one
// transaction, and a new password also spends the reset links asked for
// before.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/revocable"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Roles.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// User is a person who can sign in.
type User struct {
	ID           int64 `gorm:"primaryKey"`
	Email        string
	PasswordHash string
	Role         string
	Locale       string
	CreatedAt    time.Time
	// Admin two-factor sign-in (see totp.go).
	TOTPSecret      string     `gorm:"column:totp_secret"`
	TOTPConfirmedAt *time.Time `gorm:"column:totp_confirmed_at"`
	TOTPLastStep    int64      `gorm:"column:totp_last_step"`
	// TOTPEnrolHash is the hash of the one-time enrolment code ('': none).
	TOTPEnrolHash string `gorm:"column:totp_enrol_hash"`
	// EmailVerifiedAt is when the owner confirmed the address (verify.go;
	// nil: not yet).
	EmailVerifiedAt *time.Time
	// Merchant is set by the session lookup alone (the user has a row in
	// merchants): the site header's hint that links to /merchant, read in
	// the same statement as the session, so that a signed-in page costs
	// no second round trip. The merchant's pages decide by their own read.
	Merchant bool `gorm:"-"`
}

// IsAdmin reports whether the user may see the admin pages.
func (u User) IsAdmin() bool { return u.Role == RoleAdmin }

// Session is a signed-in browser. Only the hash of its token is stored.
type Session struct {
	ID        int64 `gorm:"primaryKey"`
	TokenHash string
	UserID    int64
	CreatedAt time.Time
	ExpiresAt time.Time
	// SecondFactorAt is when this session passed the admin's second
	// factor (nil: not yet).
	SecondFactorAt *time.Time
}

// Errors the web layer turns into messages.
var (
	ErrEmailInvalid      = errors.New("email address is not valid")
	ErrEmailTaken        = errors.New("email address is already registered")
	ErrPasswordTooShort  = errors.New("password is too short")
	ErrPasswordTooLong   = errors.New("password is too long")
	ErrPasswordTooSimple = errors.New("password uses only one kind of character")
	ErrPasswordCommon    = errors.New("password is on the list of common passwords")
	ErrBadCredentials    = errors.New("email or password is wrong")
	ErrNoSession         = errors.New("no valid session")
)

// Service signs people up and in.
type Service struct {
	db         *store.DB
	now        func() time.Time
	bcryptCost int
	sessionTTL time.Duration
	// dummyHash is compared against when the email is unknown, so that
	// sign-in takes the same time whether or not the account exists.
	dummyHash   []byte
	resetMailer ResetMailer
	// verifyMailer queues the link that confirms an address (verify.go).
	verifyMailer VerifyMailer
	// cache keeps looked-up sessions for a second (sessioncache.go).
	cache  *sessionCache
	listen store.ListenOptions
	// resetAfter and wait pad RequestReset's answer (reset.go).
	resetAfter time.Duration
	wait       func(ctx context.Context, d time.Duration)
}

// Options tune the service; zero values take defaults.
type Options struct {
	Now        func() time.Time
	BcryptCost int           // default bcrypt.DefaultCost; tests may lower it
	SessionTTL time.Duration // default 7 days
	// ResetMailer queues password reset mail (nil: resets are refused).
	ResetMailer ResetMailer
	// VerifyMailer queues the link that confirms a new account's address
	// (nil: Register is refused).
	VerifyMailer VerifyMailer
	// SessionCacheTTL is how long a looked-up session may be served from
	// memory (default DefaultSessionCacheTTL; negative: never), and only
	// while KeepSessionCache runs (sessioncache.go).
	SessionCacheTTL time.Duration
	// SessionCacheMax bounds the sessions kept (default
	// DefaultSessionCacheMax).
	SessionCacheMax int
	// Listen tunes KeepSessionCache's LISTEN connection.
	Listen store.ListenOptions
	// ResetAnswerAfter: RequestReset answers no sooner than this after it
	// began, whether or not an account has the address (0: at once; the
	// server uses DefaultResetAnswerAfter).
	ResetAnswerAfter time.Duration
	// Wait waits d or until ctx ends (nil: a timer).
	Wait func(ctx context.Context, d time.Duration)
}

// NewService returns the auth service over db.
func NewService(db *store.DB, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BcryptCost == 0 {
		o.BcryptCost = bcrypt.DefaultCost
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = 7 * 24 * time.Hour
	}
	if o.SessionCacheTTL == 0 {
		o.SessionCacheTTL = DefaultSessionCacheTTL
	}
	if o.SessionCacheMax <= 0 {
		o.SessionCacheMax = DefaultSessionCacheMax
	}
	if o.Wait == nil {
		o.Wait = waitTimer
	}
	dummy, _ := bcrypt.GenerateFromPassword([]byte("kifpool-timing-equaliser"), o.BcryptCost)
	return &Service{db: db, now: o.Now, bcryptCost: o.BcryptCost, sessionTTL: o.SessionTTL, dummyHash: dummy, resetMailer: o.ResetMailer, verifyMailer: o.VerifyMailer,
		cache: newSessionCache(o.Now, o.SessionCacheTTL, o.SessionCacheMax), listen: o.Listen, resetAfter: o.ResetAnswerAfter, wait: o.Wait}
}

// waitTimer waits d, or until ctx ends.
func waitTimer(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// SignUp creates a user and their wallet in one transaction, for an
// operator or a tool: the address counts as confirmed (the operator
// vouches for it). A person signing up on the site uses Register.
func (s *Service) SignUp(ctx context.Context, email, password, role, locale string) (User, error) {
	return s.signUp(ctx, email, password, role, locale, true, nil)
}

// signUp creates a user and their wallet in one transaction: with the
// address confirmed, or else with the mail of a link that confirms it;
// then (when set) runs in the same transaction.
func (s *Service) signUp(ctx context.Context, email, password, role, locale string, verified bool, then func(tx *gorm.DB, u User) error) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	if err := CheckPassword(password); err != nil {
		return User{}, err
	}
	if role == "" {
		role = RoleUser
	}
	if role != RoleUser && role != RoleAdmin {
		return User{}, fmt.Errorf("unknown role %q", role)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.bcryptCost)
	if err != nil {
		return User{}, fmt.Errorf("hash password: %w", err)
	}
	now := s.now().UTC()
	u := User{Email: email, PasswordHash: string(hash), Role: role, Locale: locale, CreatedAt: now}
	if verified {
		u.EmailVerifiedAt = &now
	}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&u).Error; err != nil {
			return err
		}
		if _, err := wallet.Create(tx, u.ID, now); err != nil {
			return err
		}
		if then != nil {
			if err := then(tx, u); err != nil {
				return err
			}
		}
		if verified {
			return nil
		}
		return s.addVerification(tx, u)
	})
	if store.IsUniqueViolation(err) {
		return User{}, ErrEmailTaken
	}
	if err != nil {
		return User{}, fmt.Errorf("sign up: %w", err)
	}
	return u, nil
}

// Authenticate checks an email and password from a client not named (a
// tool, a test): AuthenticateFrom with the client "".
func (s *Service) Authenticate(ctx context.Context, email, password string) (User, error) {
	return s.AuthenticateFrom(ctx, email, password, "")
}

// AccountFreeAttempts is how many failed sign-ins in a row an address
// takes from every client together before each further one waits (the
// waits of takeAttempt, doubling): past what one client can make in a
// day (about 110, its own waits capped at MaxThrottleDelay), so that no
// single stranger can lock an owner out, while guesses spread over many
// clients still slow down.
const AccountFreeAttempts = 200

// AuthenticateFrom checks an email and password sent by client (the
// requester's IP). Attempts are throttled per address and client (known
// or not, so the throttle tells nothing about which accounts exist), and
// per address from every client together past AccountFreeAttempts: a
// stranger's guesses delay their own attempts, not the owner's from
// another address. A throttled attempt returns a *ThrottledError without
// the password being looked at; a success clears both counts.
func (s *Service) AuthenticateFrom(ctx context.Context, email, password, client string) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil || len(password) > MaxPasswordLen {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return User{}, ErrBadCredentials
	}
	key, account := signInKey(email)+client, "signin:"+email
	if err := s.takeAttempt(ctx, key); err != nil {
		return User{}, err
	}
	if err := s.takeAttemptFree(ctx, account, AccountFreeAttempts); err != nil {
		return User{}, err
	}
	var u User
	err = s.db.Gorm.WithContext(ctx).Where("lower(email) = ?", email).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return User{}, ErrBadCredentials
	}
	if err != nil {
		return User{}, fmt.Errorf("find user: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return User{}, ErrBadCredentials
	}
	if err := s.clearAttempts(ctx, key); err != nil {
		return User{}, err
	}
	if err := s.clearAttempts(ctx, account); err != nil {
		return User{}, err
	}
	return u, nil
}

// signInKey is the prefix of an address's sign-in throttles per client
// (the client follows it).
func signInKey(email string) string { return "signin:" + email + "|" }

// resetKey is the prefix of an address's reset throttles per client.
func resetKey(email string) string { return "reset:" + email + "|" }

func hashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// newSecret is a session's or a mailed link's secret: 256 random bits,
// URL-safe. Only its hash (hashToken) is stored.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// NewSession starts a session for the user and returns its secret token
// (for the cookie) and expiry.
func (s *Service) NewSession(ctx context.Context, userID int64) (string, time.Time, error) {
	tok, err := newSecret()
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now().UTC()
	sess := Session{TokenHash: hashToken(tok), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL)}
	if err := s.db.Gorm.WithContext(ctx).Create(&sess).Error; err != nil {
		return "", time.Time{}, fmt.Errorf("create session: %w", err)
	}
	return tok, sess.ExpiresAt, nil
}

// UserBySession returns the user of a live session token.
func (s *Service) UserBySession(ctx context.Context, token string) (User, error) {
	u, _, err := s.Lookup(ctx, token)
	return u, err
}

// Lookup returns the user and the session of a live session token.
//
// Every request of a signed-in browser makes it, so it is one round trip
// (the session joined to its user, by the token hash's unique index),
// read as a row and scanned into the fields by position: no reflection
// over the two structs on the hot path. While KeepSessionCache runs, a
// session read is kept in memory for at most SessionCacheTTL and dropped
// at once when it or its user changes, on every instance (sessioncache.go;
// TestSignOutEverywhere, TestSessionCacheRevokedAcrossInstances).
func (s *Service) Lookup(ctx context.Context, token string) (User, Session, error) {
	if token == "" || len(token) > 100 {
		return User{}, Session{}, ErrNoSession
	}
	hash := hashToken(token)
	if e, ok := s.cache.Get(hash); ok {
		return e.Value.u, e.Value.s, nil
	}
	epoch := s.cache.Begin()
	now := s.now()
	row := s.db.Gorm.WithContext(ctx).Raw(lookupSQL, hash, now.UTC()).Row()
	if row == nil {
		return User{}, Session{}, errors.New("session lookup: no row")
	}
	var u User
	var sess Session
	err := row.Scan(
		&sess.ID, &sess.TokenHash, &sess.UserID, &sess.CreatedAt, &sess.ExpiresAt, &sess.SecondFactorAt,
		&u.ID, &u.Email, &u.PasswordHash, &u.Role, &u.Locale, &u.CreatedAt,
		&u.TOTPSecret, &u.TOTPConfirmedAt, &u.TOTPLastStep, &u.TOTPEnrolHash, &u.EmailVerifiedAt, &u.Merchant)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return User{}, Session{}, ErrNoSession
	case err != nil:
		return User{}, Session{}, fmt.Errorf("session lookup: %w", err)
	}
	s.cache.Put(epoch, hash, revocable.Entry[cachedSession]{Value: cachedSession{u: u, s: sess}, UserID: u.ID, Expires: sess.ExpiresAt, Read: now})
	return u, sess, nil
}

// lookupSQL is the session lookup's statement.
const lookupSQL = `SELECT s.id, s.token_hash, s.user_id, s.created_at, s.expires_at, s.second_factor_at,
		u.id, u.email, u.password_hash, u.role, u.locale, u.created_at,
		u.totp_secret, u.totp_confirmed_at, u.totp_last_step, u.totp_enrol_hash, u.email_verified_at,
		m.user_id IS NOT NULL
		FROM sessions s JOIN users u ON u.id = s.user_id LEFT JOIN merchants m ON m.user_id = u.id
		WHERE s.token_hash = ? AND s.expires_at > ?`

// EndAllSessions signs the user out everywhere: every session of theirs
// is deleted, on every instance at once, and every API token of theirs is
// revoked in the same transaction (a thief who kept a token is locked out
// too), and every webhook endpoint of theirs turned off (one a thief
// added hears nothing more).
func (s *Service) EndAllSessions(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The user's row first, as a new token's insert locks it (a
		// password change's update does too): a token being made by a
		// session this ends is either revoked here or refused there
		// (SessionLive), never left live. SQLite's transactions are one
		// at a time already.
		if err := lockUser(tx, s.db, userID); err != nil {
			return err
		}
		var err error
		n, _, _, err = endEverything(tx, userID, "", s.now())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("end sessions: %w", err)
	}
	s.changed(userID)
	return n, nil
}

// SessionLive is the check a new credential's write runs for the
// session asking for it, under the user's row lock (apitoken's
// CreateInput.Still; webhook's Still for an endpoint added or enabled
// again): ErrNoSession once a password change, a reset or "sign out
// everywhere" ended that session, even while the write was on its way.
func SessionLive(token string) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&Session{}).Where("token_hash = ?", hashToken(token)).Count(&n).Error; err != nil {
			return fmt.Errorf("is the session still live: %w", err)
		}
		if token == "" || n == 0 {
			return ErrNoSession
		}
		return nil
	}
}

// endEverything deletes the user's sessions (all but the one whose token
// is keep, when keep is not empty), revokes all their API tokens and turns
// off all their webhook endpoints.
func endEverything(tx *gorm.DB, userID int64, keep string, now time.Time) (sessions, tokens, endpoints int64, err error) {
	q := tx.Where("user_id = ?", userID)
	if keep != "" {
		q = q.Where("token_hash <> ?", hashToken(keep))
	}
	res := q.Delete(&Session{})
	if res.Error != nil {
		return 0, 0, 0, res.Error
	}
	if tokens, err = apitoken.RevokeAllForUser(tx, userID, now); err != nil {
		return 0, 0, 0, err
	}
	endpoints, err = webhook.DisableAllForUser(tx, userID, now)
	return res.RowsAffected, tokens, endpoints, err
}

// lockUser locks the user's row until tx ends, on PostgreSQL (SQLite's
// transactions are one at a time already).
func lockUser(tx *gorm.DB, db *store.DB, userID int64) error {
	if db.Dialect != store.Postgres {
		return nil
	}
	_, err := owner.Lock(tx, db.Dialect, userID)
	return err
}

// CountSessions is how many live sessions the user has.
func (s *Service) CountSessions(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.Gorm.WithContext(ctx).Model(&Session{}).Where("user_id = ? AND expires_at > ?", userID, s.now().UTC()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}

// EndSession deletes a session (sign-out).
func (s *Service) EndSession(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	var userIDs []int64
	if err := s.db.Gorm.WithContext(ctx).Model(&Session{}).Where("token_hash = ?", hashToken(token)).Pluck("user_id", &userIDs).Error; err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	if err := s.db.Gorm.WithContext(ctx).Where("token_hash = ?", hashToken(token)).Delete(&Session{}).Error; err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	for _, id := range userIDs {
		s.changed(id)
	}
	return nil
}

// SetLocale remembers the user's language.
func (s *Service) SetLocale(ctx context.Context, userID int64, locale string) error {
	if err := s.db.Gorm.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Update("locale", locale).Error; err != nil {
		return fmt.Errorf("set locale: %w", err)
	}
	s.changed(userID)
	return nil
}

// PurgeExpiredSessions deletes sessions past their expiry.
func (s *Service) PurgeExpiredSessions(ctx context.Context) (int64, error) {
	res := s.db.Gorm.WithContext(ctx).Where("expires_at <= ?", s.now().UTC()).Delete(&Session{})
	if res.Error != nil {
		return 0, fmt.Errorf("purge sessions: %w", res.Error)
	}
	return res.RowsAffected, nil
}
