package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
)

// Admin two-factor sign-in: a TOTP authenticator (RFC 6238: 6 digits,
// 30-second steps, SHA-1, as every authenticator app does), plus ten
// single-use recovery codes.
const (
	totpIssuer        = "Kifpool"
	totpPeriod        = 30
	RecoveryCodeCount = 10
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// Second-factor errors.
var (
	ErrCodeInvalid     = errors.New("the code is wrong or was already used")
	ErrTOTPEnrolled    = errors.New("an authenticator is already enrolled")
	ErrTOTPNotEnrolled = errors.New("no authenticator is enrolled")
	// ErrEnrolmentCode: the one-time enrolment code is wrong, or none was
	// issued (an operator runs `kifpool user reset-2fa` for a new one).
	ErrEnrolmentCode = errors.New("the enrolment code is wrong or was not issued")
)

// Enrolment is not trust-on-first-use: before an admin's authenticator
// secret is made or shown, /admin/2fa asks for a one-time enrolment code
// that only the operator has (printed by `kifpool user create --admin`,
// `user promote` and `user reset-2fa`). Someone who only knows the
// admin's password never sees the secret.

func hashEnrolmentCode(code string) string {
	h := sha256.Sum256([]byte("enrol:" + normaliseCode(code)))
	return hex.EncodeToString(h[:])
}

// issueEnrolmentCode gives the (not yet enrolled) admin a new one-time
// enrolment code and forgets any pending secret (one made for an earlier
// code is never shown again).
func issueEnrolmentCode(tx *gorm.DB, userID int64) (string, error) {
	codes, err := newRecoveryCodes() // the same shape: 80 random bits in base32
	if err != nil {
		return "", fmt.Errorf("enrolment code: %w", err)
	}
	code := codes[0]
	res := tx.Model(&User{}).Where("id = ? AND totp_confirmed_at IS NULL", userID).
		Updates(map[string]any{"totp_enrol_hash": hashEnrolmentCode(code), "totp_secret": "", "totp_last_step": 0})
	if res.Error != nil {
		return "", fmt.Errorf("store enrolment code: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return "", ErrTOTPEnrolled
	}
	return code, nil
}

// IssueEnrolmentCode gives the admin with this address (not enrolled) a
// new one-time enrolment code, for `kifpool user create --admin` (which
// records itself with RecordAdminCreated).
func (s *Service) IssueEnrolmentCode(ctx context.Context, email string) (string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	var code string
	var userID int64
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("lower(email) = ?", email).Take(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNoUser
			}
			return err
		}
		if !u.IsAdmin() {
			return fmt.Errorf("%s is not an admin", email)
		}
		userID = u.ID
		var err error
		code, err = issueEnrolmentCode(tx, u.ID)
		return err
	})
	if err == nil {
		s.changed(userID) // after the commit
	}
	return code, err
}

// RecordAdminCreated writes `kifpool user create --admin` to the audit
// log.
func (s *Service) RecordAdminCreated(ctx context.Context, userID int64) error {
	return audit.Record(s.db.Gorm.WithContext(ctx), s.adminCreated(userID))
}

// adminCreated is the audit entry of `kifpool user create --admin`.
func (s *Service) adminCreated(userID int64) audit.Entry {
	return audit.Entry{Action: audit.ActionCLIAdmin, TargetUserID: &userID,
		ToStatus: RoleAdmin, Note: "from the command line", Result: audit.ResultDone, CreatedAt: s.now().UTC()}
}

// CreateAdmin is `kifpool user create --admin`: the admin, their wallet,
// their enrolment code and the audit entry in one transaction, so that a
// process killed half-way leaves either nothing (run it again) or an
// admin who can enrol with the code printed. The code is returned once.
func (s *Service) CreateAdmin(ctx context.Context, email, password, locale string) (User, string, error) {
	var code string
	u, err := s.signUp(ctx, email, password, RoleAdmin, locale, true, func(tx *gorm.DB, u User) error {
		var err error
		if code, err = issueEnrolmentCode(tx, u.ID); err != nil {
			return err
		}
		return audit.Record(tx, s.adminCreated(u.ID))
	})
	if err != nil {
		return User{}, "", err
	}
	return u, code, nil
}

// enrolmentCodeOK reports whether code is the user's current enrolment
// code.
func enrolmentCodeOK(u User, code string) bool {
	return u.TOTPEnrolHash != "" && subtle.ConstantTimeCompare([]byte(u.TOTPEnrolHash), []byte(hashEnrolmentCode(code))) == 1
}

// Enrolment is what an admin needs to add Kifpool to an authenticator.
type Enrolment struct {
	Secret string // base32
	URL    string // otpauth:// URL (what the QR code holds)
	key    *otp.Key
}

// QR returns the enrolment as a QR code image of size×size pixels.
func (e Enrolment) QR(size int) (image.Image, error) { return e.key.Image(size, size) }

// BeginTOTP checks the admin's one-time enrolment code (throttled like a
// second-factor code) and returns their pending authenticator secret,
// creating it on the first call; the same secret is returned until it is
// confirmed (two tabs show the same QR code). It is called on a POST: a
// GET writes nothing.
func (s *Service) BeginTOTP(ctx context.Context, userID int64, enrolCode string) (Enrolment, error) {
	var u User
	if err := s.db.Gorm.WithContext(ctx).Where("id = ?", userID).Take(&u).Error; err != nil {
		return Enrolment{}, fmt.Errorf("load user: %w", err)
	}
	if u.TOTPConfirmedAt != nil {
		return Enrolment{}, ErrTOTPEnrolled
	}
	// A wrong code counts as a failed second-factor attempt (throttled
	// like one); a right one takes none, so that showing the page again
	// after a wrong first code does not use up attempts. While the key is
	// locked even a right one is refused: otherwise the lock would cost a
	// guesser nothing.
	throttle := "2fa:" + strconv.FormatInt(userID, 10)
	if wait, err := s.lockedFor(ctx, throttle); err != nil {
		return Enrolment{}, err
	} else if wait > 0 {
		return Enrolment{}, &ThrottledError{RetryAfter: wait}
	}
	if !enrolmentCodeOK(u, enrolCode) {
		if err := s.takeAttempt(ctx, throttle); err != nil {
			return Enrolment{}, err
		}
		return Enrolment{}, ErrEnrolmentCode
	}
	if u.TOTPSecret == "" {
		key, err := totp.Generate(totp.GenerateOpts{Issuer: totpIssuer, AccountName: u.Email, Period: totpPeriod,
			SecretSize: 20, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1, Rand: rand.Reader})
		if err != nil {
			return Enrolment{}, fmt.Errorf("totp secret: %w", err)
		}
		// Only if still unset: a concurrent first visit keeps its secret.
		defer s.changed(userID)
		if err := s.db.Gorm.WithContext(ctx).Model(&User{}).Where("id = ? AND totp_secret = ''", userID).
			Update("totp_secret", key.Secret()).Error; err != nil {
			return Enrolment{}, fmt.Errorf("store totp secret: %w", err)
		}
		if err := s.db.Gorm.WithContext(ctx).Where("id = ?", userID).Take(&u).Error; err != nil {
			return Enrolment{}, fmt.Errorf("load user: %w", err)
		}
	}
	key, err := otp.NewKeyFromURL(totpURL(u.Email, u.TOTPSecret))
	if err != nil {
		return Enrolment{}, fmt.Errorf("totp key: %w", err)
	}
	return Enrolment{Secret: u.TOTPSecret, URL: key.URL(), key: key}, nil
}

// totpURL is the otpauth:// URL of an authenticator entry. The label
// (issuer:account) is path-escaped: an address may hold "%", "?" or "#",
// which written raw make the URL unparsable (a 500 on /admin/2fa) or cut it.
func totpURL(account, secret string) string {
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + totpIssuer + ":" + account}
	q := url.Values{"secret": {secret}, "issuer": {totpIssuer}, "algorithm": {"SHA1"}, "digits": {"6"}, "period": {strconv.Itoa(totpPeriod)}}
	u.RawQuery = q.Encode()
	return u.String()
}

// matchStep returns the time step (within one step of now, for clocks
// that drift) whose code is code, or 0.
func matchStep(secret, code string, now time.Time) int64 {
	if len(code) != 6 {
		return 0
	}
	step := now.Unix() / totpPeriod
	for st := step - 1; st <= step+1; st++ {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(st*totpPeriod, 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return st
		}
	}
	return 0
}

// useTOTP accepts code for the user if it is right and its time step is
// after the last one accepted, moving totp_last_step forward in the same
// conditional update: a code is accepted once, even by two instances at
// once.
func useTOTP(tx *gorm.DB, u User, code string, now time.Time, confirm bool) (bool, error) {
	st := matchStep(u.TOTPSecret, code, now)
	if st == 0 || u.TOTPSecret == "" {
		return false, nil
	}
	q := tx.Model(&User{}).Where("id = ? AND totp_secret = ? AND totp_last_step < ?", u.ID, u.TOTPSecret, st)
	set := map[string]any{"totp_last_step": st}
	if confirm {
		q = q.Where("totp_confirmed_at IS NULL")
		set["totp_confirmed_at"] = now
	} else {
		q = q.Where("totp_confirmed_at IS NOT NULL")
	}
	res := q.Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("use totp code: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// normaliseCode keeps the characters of a typed code that matter.
func normaliseCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		switch {
		case r >= '0' && r <= '9', r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '۰' && r <= '۹': // Persian digits, as a Persian keyboard types them
			b.WriteRune('0' + (r - '۰'))
		case r >= '٠' && r <= '٩':
			b.WriteRune('0' + (r - '٠'))
		}
	}
	return b.String()
}

func hashRecoveryCode(code string) string {
	h := sha256.Sum256([]byte("recovery:" + code))
	return hex.EncodeToString(h[:])
}

// newRecoveryCodes makes RecoveryCodeCount random codes of 16 base32
// characters (80 bits), written in groups of four.
func newRecoveryCodes() ([]string, error) {
	codes := make([]string, RecoveryCodeCount)
	for i := range codes {
		var b [10]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		c := base32.StdEncoding.EncodeToString(b[:])
		codes[i] = c[0:4] + "-" + c[4:8] + "-" + c[8:12] + "-" + c[12:16]
	}
	return codes, nil
}

// ConfirmTOTP finishes enrolment with a first code from the
// authenticator: the session is replaced by a new one that has passed the
// second factor (its token is returned), and ten recovery codes are made
// and returned (the only time they are shown; only their hashes are kept).
func (s *Service) ConfirmTOTP(ctx context.Context, userID, sessionID int64, enrolCode, code string) ([]string, string, error) {
	// The user's row and sessions change: their cached sessions go,
	// whatever the outcome (a spurious drop costs one read).
	defer s.changed(userID)
	key := "2fa:" + strconv.FormatInt(userID, 10)
	if err := s.takeAttempt(ctx, key); err != nil {
		return nil, "", err
	}
	now := s.now().UTC()
	codes, err := newRecoveryCodes()
	if err != nil {
		return nil, "", fmt.Errorf("recovery codes: %w", err)
	}
	var tok string
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("id = ?", userID).Take(&u).Error; err != nil {
			return err
		}
		if u.TOTPConfirmedAt != nil {
			return ErrTOTPEnrolled
		}
		if !enrolmentCodeOK(u, enrolCode) {
			return ErrEnrolmentCode
		}
		ok, err := useTOTP(tx, u, normaliseCode(code), now, true)
		if err != nil {
			return err
		}
		if !ok {
			return ErrCodeInvalid
		}
		if err := tx.Model(&User{}).Where("id = ?", userID).Update("totp_enrol_hash", "").Error; err != nil {
			return err // the enrolment code is used up
		}
		if err := tx.Exec(`DELETE FROM recovery_codes WHERE user_id = ?`, userID).Error; err != nil {
			return err
		}
		for _, c := range codes {
			if err := tx.Exec(`INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)`,
				userID, hashRecoveryCode(normaliseCode(c)), now).Error; err != nil {
				return err
			}
		}
		tok, err = passSession(tx, userID, sessionID, now)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrCodeInvalid) || errors.Is(err, ErrTOTPEnrolled) || errors.Is(err, ErrNoSession) || errors.Is(err, ErrEnrolmentCode) {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("confirm totp: %w", err)
	}
	return codes, tok, s.clearAttempts(ctx, key)
}

// VerifySecondFactor checks a code from the admin's authenticator, or
// one of their recovery codes (each works once), and marks the session
// as having passed by replacing it with a new one, whose token is
// returned. Failures are throttled like sign-ins.
func (s *Service) VerifySecondFactor(ctx context.Context, userID, sessionID int64, code string) (string, error) {
	// The user's row and sessions change: their cached sessions go,
	// whatever the outcome (a spurious drop costs one read).
	defer s.changed(userID)
	key := "2fa:" + strconv.FormatInt(userID, 10)
	if err := s.takeAttempt(ctx, key); err != nil {
		return "", err
	}
	now := s.now().UTC()
	code = normaliseCode(code)
	var tok string
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("id = ?", userID).Take(&u).Error; err != nil {
			return err
		}
		if err := useSecondFactor(tx, u, code, now); err != nil {
			return err
		}
		var err error
		tok, err = passSession(tx, userID, sessionID, now)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrCodeInvalid) || errors.Is(err, ErrTOTPNotEnrolled) || errors.Is(err, ErrNoSession) {
			return "", err
		}
		return "", fmt.Errorf("verify second factor: %w", err)
	}
	return tok, s.clearAttempts(ctx, key)
}

// useSecondFactor spends code (normalised) for the enrolled admin u: a
// code of their authenticator after the last one accepted, or one of their
// unused recovery codes; ErrCodeInvalid otherwise.
func useSecondFactor(tx *gorm.DB, u User, code string, now time.Time) error {
	if u.TOTPConfirmedAt == nil {
		return ErrTOTPNotEnrolled
	}
	var ok bool
	if len(code) == 6 {
		var err error
		if ok, err = useTOTP(tx, u, code, now, false); err != nil {
			return err
		}
	} else if len(code) == 16 {
		res := tx.Exec(`UPDATE recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL`,
			now, u.ID, hashRecoveryCode(code))
		if res.Error != nil {
			return res.Error
		}
		ok = res.RowsAffected == 1
	}
	if !ok {
		return ErrCodeInvalid
	}
	return nil
}

// ConfirmSecondFactor is a fresh second factor for one act of an admin
// (a new password, a new API token): code is spent as VerifySecondFactor
// spends it (single use, throttled with it), whatever the session passed
// before, and the session is left as it is. ErrTOTPNotEnrolled for an
// admin who has no authenticator yet, ErrCodeInvalid for a wrong code.
//
// No code at all is no guess: refused without counting.
func (s *Service) ConfirmSecondFactor(ctx context.Context, userID int64, code string) error {
	code = normaliseCode(code)
	if code == "" {
		var u User
		if err := s.db.Gorm.WithContext(ctx).Where("id = ?", userID).Take(&u).Error; err != nil {
			return fmt.Errorf("confirm second factor: %w", err)
		}
		if u.TOTPConfirmedAt == nil {
			return ErrTOTPNotEnrolled
		}
		return ErrCodeInvalid
	}
	key := "2fa:" + strconv.FormatInt(userID, 10)
	if err := s.takeAttempt(ctx, key); err != nil {
		return err
	}
	now := s.now().UTC()
	defer s.changed(userID)
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var u User
		if err := tx.Where("id = ?", userID).Take(&u).Error; err != nil {
			return err
		}
		return useSecondFactor(tx, u, code, now)
	})
	if err != nil {
		if errors.Is(err, ErrCodeInvalid) || errors.Is(err, ErrTOTPNotEnrolled) {
			return err
		}
		return fmt.Errorf("confirm second factor: %w", err)
	}
	return s.clearAttempts(ctx, key)
}

// passSession replaces the session that passed the second factor with a
// new one (a new token, marked as passed, the same expiry) and returns the
// new token: whoever planted or knew the old token (an attacker who knows
// the admin's password and fixed the cookie before) is left with a dead
// session instead of an elevated one.
func passSession(tx *gorm.DB, userID, sessionID int64, now time.Time) (string, error) {
	var old Session
	if err := tx.Where("id = ? AND user_id = ?", sessionID, userID).Take(&old).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return "", ErrNoSession
		}
		return "", err
	}
	tok, err := newSecret()
	if err != nil {
		return "", err
	}
	if err := tx.Where("id = ?", old.ID).Delete(&Session{}).Error; err != nil {
		return "", err
	}
	sess := Session{TokenHash: hashToken(tok), UserID: userID, CreatedAt: now, ExpiresAt: old.ExpiresAt, SecondFactorAt: &now}
	if err := tx.Create(&sess).Error; err != nil {
		return "", err
	}
	return tok, nil
}

// RecoveryCodesLeft is how many unused recovery codes the user has.
func (s *Service) RecoveryCodesLeft(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM recovery_codes WHERE user_id = ? AND used_at IS NULL`, userID).Scan(&n).Error
	return n, err
}

// ResetTOTP removes a locked-out admin's authenticator and recovery
// codes (`kifpool user reset-2fa`) and returns a new one-time enrolment
// code for their next visit to /admin/2fa; none of their sessions counts
// as having passed any more. The reset is written to the audit log.
func (s *Service) ResetTOTP(ctx context.Context, email string) (User, string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, "", err
	}
	var u User
	var code string
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("lower(email) = ?", email).Take(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNoUser
			}
			return err
		}
		if !u.IsAdmin() {
			// Only the admin console asks for a second factor: an
			// enrolment code for anyone else opens nothing, and its audit
			// row would say an admin was reset.
			return ErrNotAdmin
		}
		if err := tx.Model(&User{}).Where("id = ?", u.ID).
			Updates(map[string]any{"totp_secret": "", "totp_confirmed_at": nil, "totp_last_step": 0}).Error; err != nil {
			return err
		}
		var err error
		if code, err = issueEnrolmentCode(tx, u.ID); err != nil {
			return err
		}
		if err := audit.Record(tx, audit.Entry{Action: audit.ActionCLIReset2FA, TargetUserID: &u.ID, Note: "from the command line",
			Result: audit.ResultDone, CreatedAt: s.now().UTC()}); err != nil {
			return err
		}
		if err := tx.Exec(`DELETE FROM recovery_codes WHERE user_id = ?`, u.ID).Error; err != nil {
			return err
		}
		if err := tx.Exec(`DELETE FROM auth_throttles WHERE key = ?`, "2fa:"+strconv.FormatInt(u.ID, 10)).Error; err != nil {
			return err
		}
		return tx.Model(&Session{}).Where("user_id = ?", u.ID).Update("second_factor_at", nil).Error
	})
	if err != nil {
		if errors.Is(err, ErrNoUser) || errors.Is(err, ErrNotAdmin) {
			return User{}, "", err
		}
		return User{}, "", fmt.Errorf("reset two-factor: %w", err)
	}
	s.changed(u.ID)
	return u, code, nil
}
