// Package bankaccount holds the bank accounts people cash out to: a
// Sheba, checked (mod-97, a known bank) and owned by the user's national
// code, which is given once and never changes. Ownership is the payout
// provider's inquiry (payout.Ops.CheckOwner): a match verifies the
// account; a mismatch is refused and nothing is stored; no answer either
// way ("no upstream provider", a time-out, a provider without an
// inquiry) leaves the account pending_review for an admin, never called
// a mismatch. Only a verified account can receive a withdrawal.
package bankaccount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/payout"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Status is where an account stands.
type Status string

// The statuses.
const (
	StatusVerified      Status = "verified"
	StatusPendingReview Status = "pending_review"
	StatusRejected      Status = "rejected"
)

// Account is one bank account of a user.
type Account struct {
	ID         int64
	UserID     int64
	Sheba      string
	BankCode   string
	Status     Status
	CheckedBy  string // the provider whose inquiry answered ("" for none)
	ReviewedBy *int64
	ReviewNote string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// TableName maps Account to bank_accounts.
func (Account) TableName() string { return "bank_accounts" }

// Bank is the account's bank.
func (a Account) Bank() iban.Bank {
	b, _ := iban.BankByCode(a.BankCode)
	return b
}

// Last4 is the account's last four digits.
func (a Account) Last4() string { return iban.Sheba(a.Sheba).Last4() }

// Verified reports whether withdrawals may go to the account.
func (a Account) Verified() bool { return a.Status == StatusVerified }

// The refusals of Add and Review (test them with errors.Is).
var (
	// ErrMismatch: the provider says the Sheba is not the national
	// code's. Nothing is stored.
	ErrMismatch = errors.New("bank account: the Sheba does not belong to this national code")
	// ErrNationalCodeDiffers: the user gave another national code before;
	// it is given once.
	ErrNationalCodeDiffers = errors.New("bank account: another national code is on file")
	// ErrRejected: an admin rejected this Sheba for the user.
	ErrRejected = errors.New("bank account: rejected by an admin")
	// ErrTooMany: the user has as many accounts as allowed.
	ErrTooMany = errors.New("bank account: too many accounts")
	// ErrTooManyInquiries: the user's new accounts made InquiriesPerDay
	// ownership inquiries in the last 24 hours; nothing was asked.
	ErrTooManyInquiries = errors.New("bank account: too many ownership checks today")
	ErrNotFound         = errors.New("bank account: not found")
	// ErrNotPending: an admin reviewed an account not waiting for review.
	ErrNotPending   = errors.New("bank account: not waiting for review")
	ErrNoteRequired = errors.New("bank account: a note is required")
	// ErrOwnAccount: an admin does not review their own account (its
	// Sheba would skip the ownership check on their word alone).
	ErrOwnAccount = errors.New("bank account: an admin's own account is reviewed by another admin")
)

// MaxPerUser is how many accounts a user may have.
const MaxPerUser = 10

// InquiriesPerDay is how many ownership inquiries one user's new
// accounts may make in 24 hours (bank_inquiries, counted in the write, on
// every instance alike): each costs the provider's credit, and a
// mismatch stores nothing, so without a count it could be asked without
// end (whose a Sheba is, pair by pair).
const InquiriesPerDay = 10

// Inquiry is the ownership inquiry the service asks (the first provider
// offered that has one); nil: none, every account waits for an admin.
type Inquiry func(ctx context.Context, sheba, nationalCode string) (payout.Ownership, error)

// Service adds, lists and reviews bank accounts.
type Service struct {
	db      *store.DB
	now     func() time.Time
	inquiry Inquiry
	by      string // the inquiry's provider
	log     *slog.Logger
}

// New returns the service over db; inquiry (of provider by) may be nil.
func New(db *store.DB, now func() time.Time, by string, inquiry Inquiry, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, now: now, inquiry: inquiry, by: by, log: log}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// NationalCode is the user's national code on file (ok false: none yet).
func (s *Service) NationalCode(ctx context.Context, userID int64) (iban.NationalCode, bool, error) {
	var codes []string
	if err := s.db.Gorm.WithContext(ctx).Raw(`SELECT national_code FROM national_codes WHERE user_id = ?`, userID).Scan(&codes).Error; err != nil {
		return "", false, fmt.Errorf("national code of user %d: %w", userID, err)
	}
	if len(codes) == 0 {
		return "", false, nil
	}
	return iban.NationalCode(codes[0]), true, nil
}

// Added is what Add did.
type Added struct {
	Account Account
	// Existed: the user had this Sheba already (nothing was asked or
	// written).
	Existed bool
}

// Add checks and stores a bank account of the user, one whose address is
// confirmed (owner.ErrUnconfirmed): typed Sheba and
// national code are parsed (iban's errors), the national code must be
// the one on file (given once), and the provider's inquiry decides
// verified, refused (ErrMismatch, nothing stored) or pending_review. A
// Sheba the user has already is answered with its account, asking
// nothing.
func (s *Service) Add(ctx context.Context, userID int64, typedSheba, typedNationalCode string) (Added, error) {
	// Only for an account whose address is confirmed (before the
	// provider is asked): money leaves for it.
	if err := owner.RequireConfirmed(s.db.Gorm.WithContext(ctx), userID); err != nil {
		return Added{}, err
	}
	sh, err := iban.Parse(typedSheba)
	if err != nil {
		return Added{}, err
	}
	nc, err := iban.ParseNationalCode(typedNationalCode)
	if err != nil {
		return Added{}, err
	}
	onFile, has, err := s.NationalCode(ctx, userID)
	if err != nil {
		return Added{}, err
	}
	if has && onFile != nc {
		return Added{}, ErrNationalCodeDiffers
	}
	var existing []Account
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("id").Find(&existing).Error; err != nil {
		return Added{}, fmt.Errorf("bank accounts of user %d: %w", userID, err)
	}
	for _, a := range existing {
		if a.Sheba == string(sh) {
			if a.Status == StatusRejected {
				return Added{Account: a, Existed: true}, ErrRejected
			}
			return Added{Account: a, Existed: true}, nil
		}
	}
	if len(existing) >= MaxPerUser {
		return Added{}, ErrTooMany
	}
	status, by := StatusPendingReview, ""
	if s.inquiry != nil {
		if err := s.countInquiry(ctx, userID); err != nil {
			return Added{}, err
		}
		owner, err := s.inquiry(ctx, string(sh), string(nc))
		switch {
		case err != nil:
			// A time-out, a 5xx, the breaker: unknown, a person decides.
			s.log.WarnContext(ctx, "ownership inquiry without an answer: the account waits for review", "user", userID, "err", err)
		case owner == payout.OwnerMismatch:
			return Added{}, ErrMismatch
		case owner == payout.OwnerMatch:
			status, by = StatusVerified, s.by
		}
	}
	now := s.clock()
	a := Account{UserID: userID, Sheba: string(sh), BankCode: sh.BankCode(), Status: status, CheckedBy: by, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The cap, in the write: the user's row locked (PostgreSQL;
		// SQLite's writers take turns), so that adds at once cannot
		// each see room for one more.
		if err := lockAccounts(tx, s.db.Dialect, userID, MaxPerUser); err != nil {
			return err
		}
		if err := tx.Exec(`INSERT INTO national_codes (user_id, national_code, created_at) VALUES (?, ?, ?) ON CONFLICT (user_id) DO NOTHING`,
			userID, string(nc), now).Error; err != nil {
			return fmt.Errorf("national code: %w", err)
		}
		var kept string
		if err := tx.Raw(`SELECT national_code FROM national_codes WHERE user_id = ?`, userID).Scan(&kept).Error; err != nil {
			return fmt.Errorf("national code: %w", err)
		}
		if kept != string(nc) {
			return ErrNationalCodeDiffers // given meanwhile, another
		}
		return tx.Create(&a).Error
	})
	if err != nil && (store.IsUniqueViolation(err) || errors.Is(err, ErrTooMany)) {
		// The same Sheba added meanwhile (a double click; its insert may
		// also have taken the last place): that one.
		var again Account
		if rerr := s.db.Gorm.WithContext(ctx).Where("user_id = ? AND sheba = ?", userID, string(sh)).Take(&again).Error; rerr == nil {
			return Added{Account: again, Existed: true}, nil
		}
	}
	if err != nil {
		return Added{}, fmt.Errorf("add bank account: %w", err)
	}
	s.log.InfoContext(ctx, "bank account added", "user", userID, "account", a.ID, "bank", a.BankCode, "status", a.Status)
	return Added{Account: a}, nil
}

// countInquiry counts one ownership inquiry of the user's, refused
// (ErrTooManyInquiries, nothing counted) when InquiriesPerDay were made
// in the last 24 hours, or (ErrTooMany) when the user has no room for
// another account. Counted before the inquiry is asked: one that fails
// counts too, as the provider may charge for it.
func (s *Service) countInquiry(ctx context.Context, userID int64) error {
	now := s.clock()
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := lockAccounts(tx, s.db.Dialect, userID, MaxPerUser); err != nil {
			return err
		}
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM bank_inquiries WHERE user_id = ? AND created_at > ?`, userID, now.Add(-24*time.Hour)).
			Scan(&n).Error; err != nil {
			return fmt.Errorf("ownership inquiries of user %d: %w", userID, err)
		}
		if n >= InquiriesPerDay {
			s.log.WarnContext(ctx, "ownership inquiries refused: the user's daily count is used", "user", userID, "count", n)
			return ErrTooManyInquiries
		}
		if err := tx.Exec(`INSERT INTO bank_inquiries (user_id, created_at) VALUES (?, ?)`, userID, now).Error; err != nil {
			return fmt.Errorf("count an ownership inquiry of user %d: %w", userID, err)
		}
		return nil
	})
}

// lockAccounts locks the user's row until tx ends (PostgreSQL; SQLite's
// writers take turns), refusing an unconfirmed address, and refuses
// (ErrTooMany) when the user has max accounts already.
func lockAccounts(tx *gorm.DB, dialect store.Dialect, userID int64, max int) error {
	if err := owner.LockConfirmed(tx, dialect, userID); err != nil {
		return err
	}
	var n int64
	if err := tx.Raw(`SELECT COUNT(*) FROM bank_accounts WHERE user_id = ?`, userID).Scan(&n).Error; err != nil {
		return fmt.Errorf("bank accounts of user %d: %w", userID, err)
	}
	if n >= int64(max) {
		return ErrTooMany
	}
	return nil
}

// List is the user's accounts, oldest first.
func (s *Service) List(ctx context.Context, userID int64) ([]Account, error) {
	var out []Account
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("bank accounts of user %d: %w", userID, err)
	}
	return out, nil
}

// Get is one of the user's accounts (ErrNotFound for another's).
func (s *Service) Get(ctx context.Context, userID, id int64) (Account, error) {
	var a Account
	err := s.db.Gorm.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Account{}, ErrNotFound
	}
	if err != nil {
		return Account{}, fmt.Errorf("bank account %d: %w", id, err)
	}
	return a, nil
}

// Waiting is an account waiting for an admin, with its owner.
type Waiting struct {
	Account
	Email        string
	NationalCode string
}

// AwaitingAdmin counts the accounts waiting for an admin's review, with
// the creation of the oldest (zero: none).
func (s *Service) AwaitingAdmin(ctx context.Context) (int64, time.Time, error) {
	q := func() *gorm.DB {
		return s.db.Gorm.WithContext(ctx).Table("bank_accounts").Where("status = 'pending_review'")
	}
	var n int64
	if err := q().Count(&n).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("bank accounts awaiting an admin: %w", err)
	}
	var oldest []Account
	if n > 0 {
		if err := q().Select("id, created_at").Order("created_at").Limit(1).Find(&oldest).Error; err != nil {
			return 0, time.Time{}, fmt.Errorf("oldest bank account awaiting an admin: %w", err)
		}
	}
	if len(oldest) == 0 {
		return n, time.Time{}, nil
	}
	return n, oldest[0].CreatedAt, nil
}

// Pending lists the accounts waiting for an admin, oldest first.
func (s *Service) Pending(ctx context.Context, limit int) ([]Waiting, error) {
	var out []Waiting
	err := s.db.Gorm.WithContext(ctx).Raw(`SELECT b.*, u.email, COALESCE(n.national_code, '') AS national_code
		FROM bank_accounts b JOIN users u ON u.id = b.user_id LEFT JOIN national_codes n ON n.user_id = b.user_id
		WHERE b.status = 'pending_review' ORDER BY b.created_at, b.id LIMIT ` + strconv.Itoa(limit)).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("pending bank accounts: %w", err)
	}
	return out, nil
}

// CheckNote is an admin's note on a review: required, one line of
// printable text (ErrNoteRequired otherwise); a page checks it before it
// spends a code.
func CheckNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	if note == "" || len(note) > 500 || usertext.CheckName(note) != nil {
		return "", ErrNoteRequired
	}
	return note, nil
}

// Review is an admin's decision on an account waiting for one (after
// checking ownership by other means): verified or rejected, with a note,
// recorded in the audit log in the same transaction.
func (s *Service) Review(ctx context.Context, adminID, id int64, approve bool, note string) (Account, error) {
	note, err := CheckNote(note)
	if err != nil {
		return Account{}, err
	}
	to, action := StatusRejected, audit.ActionBankAccountReject
	if approve {
		to, action = StatusVerified, audit.ActionBankAccountApprove
	}
	now := s.clock()
	var a Account
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Account{}).Where("id = ? AND status = ? AND user_id <> ?", id, StatusPendingReview, adminID).
			Updates(map[string]any{"status": to, "reviewed_by": adminID, "review_note": note, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			err := tx.Where("id = ?", id).Take(&a).Error
			switch {
			case errors.Is(err, gorm.ErrRecordNotFound):
				return ErrNotFound
			case err != nil:
				return err
			case a.UserID == adminID:
				return ErrOwnAccount
			}
			return ErrNotPending
		}
		if err := tx.Where("id = ?", id).Take(&a).Error; err != nil {
			return err
		}
		uid := a.UserID
		return audit.Record(tx, audit.Entry{AdminID: adminID, Action: action, TargetUserID: &uid,
			Note:       fmt.Sprintf("bank account %d (%s, …%s): %s", a.ID, a.BankCode, a.Last4(), note),
			FromStatus: string(StatusPendingReview), ToStatus: string(to), Result: audit.ResultDone, CreatedAt: now})
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}
