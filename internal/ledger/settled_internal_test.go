package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Which errors say for sure that a statement sent alone committed nothing
// (settled), and how a statement's error reads (statementErr).
func TestSettledAndStatementErr(t *testing.T) {
	pg := func(severity, code, constraint string) error {
		return fmt.Errorf("exec: %w", &pgconn.PgError{Severity: severity, SeverityUnlocalized: severity, Code: code, ConstraintName: constraint})
	}
	tests := []struct {
		name    string
		err     error
		settled bool
		reads   error // what statementErr makes of it; nil: passed on as is
	}{
		{"the Σ = 0 trigger", pg("ERROR", "23514", "ledger_transaction_balanced"), true, ErrUnbalanced},
		{"a balance's CHECK", pg("ERROR", "23514", "ledger_accounts_available_not_negative"), true, ErrInsufficientFunds},
		{"a held figure's CHECK", pg("ERROR", "23514", "ledger_accounts_held_rials_check"), true, ErrInsufficientFunds},
		// Any other CHECK is no short balance: passed on as it is.
		{"a top-up without its top-up (CHECK)", pg("ERROR", "23514", "ledger_transactions_topup_has_topup_id"), true, nil},
		{"a reversal's CHECK", pg("ERROR", "23514", "ledger_transactions_reversal_points"), true, nil},
		{"the append-only trigger", pg("ERROR", "23514", ""), true, nil},
		{"an account kind's CHECK", pg("ERROR", "23514", "ledger_accounts_negative_kinds"), true, nil},
		{"a reversal of a reversal", fmt.Errorf("reversal r: %w", ErrReversalReversed), true, ErrReversalReversed},
		{"a replay", pg("ERROR", "23505", "ledger_transactions_kind_reference_key"), true, ErrDuplicate},
		{"a deadlock", pg("ERROR", "40P01", ""), true, nil},
		{"the statement cancelled (statement_timeout)", pg("ERROR", "57014", ""), true, nil},
		{"the session ended by an administrator", pg("FATAL", "57P01", ""), false, nil},
		{"a crash", pg("PANIC", "XX000", ""), false, nil},
		{"no connection made", fmt.Errorf("open: %w", &pgconn.ConnectError{}), true, nil},
		{"the context ended mid-statement", context.DeadlineExceeded, false, nil},
		{"the context ended before sending", notSent(context.Canceled), true, nil},
		{"the connection lost", errors.New("unexpected EOF"), false, nil},
	}
	e := Entry{Kind: KindTransfer, Reference: "t1"}
	for _, tt := range tests {
		if got := settled(tt.err); got != tt.settled {
			t.Errorf("%s: settled = %v, want %v", tt.name, got, tt.settled)
		}
		got := statementErr(e, tt.err, 0, 2, func() string { return "an account" })
		if tt.reads != nil && !errors.Is(got, tt.reads) {
			t.Errorf("%s: statementErr = %v, want %v", tt.name, got, tt.reads)
		}
		if tt.reads == nil && (!errors.Is(got, tt.err) || errors.Is(got, ErrInsufficientFunds)) {
			t.Errorf("%s: statementErr = %v, want it passed on", tt.name, got)
		}
	}
}

// Only the balance guards' CHECKs read as a short balance, in either
// dialect's words (move, on SQLite and PostgreSQL).
func TestBalanceViolation(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{errors.New("constraint failed: CHECK constraint failed: ledger_accounts_available_not_negative (275)"), true},
		{errors.New("constraint failed: CHECK constraint failed: held_rials >= 0 (275)"), true},
		{errors.New("constraint failed: CHECK constraint failed: ledger_transactions is append-only (1811)"), false},
		{errors.New("constraint failed: CHECK constraint failed: ledger_accounts_negative_kinds (275)"), false},
		{&pgconn.PgError{Severity: "ERROR", Code: "23514", ConstraintName: "ledger_accounts_available_not_negative"}, true},
		{&pgconn.PgError{Severity: "ERROR", Code: "23514", ConstraintName: "ledger_transactions_topup_has_topup_id"}, false},
		{&pgconn.PgError{Severity: "ERROR", Code: "23514", Message: "ledger_postings is append-only: a correction is a reversal"}, false},
		{nil, false},
	} {
		if got := balanceViolation(tt.err); got != tt.want {
			t.Errorf("balanceViolation(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// The constraint names balanceViolation knows are the schema's own: on
// each dialect, an UPDATE that breaks a balance guard's CHECK reads as
// one, an UPDATE that breaks another CHECK of the same row does not.
func TestBalanceViolationNamesTheSchemasChecks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		l := New(db)
		id, err := l.EnsureAccount(context.Background(), AccountSuspense, CodeSuspense, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			set  string
			want bool
		}{
			{"held_rials = -1", true},
			{"posted_rials = -1", true},
			{"may_go_negative = TRUE", false},
		} {
			err := db.Gorm.Exec(`UPDATE ledger_accounts SET `+tt.set+` WHERE id = ?`, id).Error
			if !store.IsCheckViolation(err) {
				t.Fatalf("%s: %v, want a CHECK's refusal", tt.set, err)
			}
			if got := balanceViolation(err); got != tt.want {
				t.Errorf("%s: balanceViolation(%v) = %v, want %v", tt.set, err, got, tt.want)
			}
		}
	})
}
