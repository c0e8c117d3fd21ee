package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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
		if tt.reads == nil && !errors.Is(got, tt.err) {
			t.Errorf("%s: statementErr = %v, want it passed on", tt.name, got)
		}
	}
}
