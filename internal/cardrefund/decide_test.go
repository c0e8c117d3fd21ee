package cardrefund_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/cardrefund"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/drivers"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func caps(name string) gateway.Capabilities {
	d, _ := drivers.Lookup(name)
	return d.Capabilities
}

// TestOfferFor is the decision of what may go back to the card, gateway
// by gateway.
func TestOfferFor(t *testing.T) {
	cfg := cardrefund.DefaultConfig()
	topUp := func(gw string, amount int64) cardrefund.TopUp {
		return cardrefund.TopUp{PublicID: "x", Gateway: gw, AmountRials: amount, Credited: true, CreatedAt: t0}
	}
	facts := func(gw string, amount, refunded, available int64, now time.Time) cardrefund.Facts {
		return cardrefund.Facts{TopUp: topUp(gw, amount), RefundedRials: refunded, AvailableRials: available,
			Capabilities: caps(gw), Known: true, CanRefund: true, Now: now}
	}
	open := &cardrefund.CardRefund{Status: cardrefund.StatusSubmitted}
	for _, tt := range []struct {
		name     string
		f        cardrefund.Facts
		ok       bool
		why      cardrefund.Why
		min, max int64
	}{
		{"zarinpal: all of it", facts("zarinpal", 500_000, 0, 900_000, t0), true, "", 20_000, 500_000},
		{"zarinpal: what is left", facts("zarinpal", 500_000, 200_000, 900_000, t0), true, "", 20_000, 300_000},
		{"zarinpal: what the wallet holds", facts("zarinpal", 500_000, 0, 70_000, t0), true, "", 20_000, 70_000},
		{"zarinpal: days later", facts("zarinpal", 500_000, 0, 900_000, t0.Add(30*24*time.Hour)), true, "", 20_000, 500_000},
		{"zarinpal: all refunded", facts("zarinpal", 500_000, 500_000, 900_000, t0), false, cardrefund.WhyAllRefunded, 20_000, 0},
		{"zarinpal: left below the minimum", facts("zarinpal", 500_000, 490_000, 900_000, t0), false, cardrefund.WhyAllRefunded, 20_000, 10_000},
		{"zarinpal: spent", facts("zarinpal", 500_000, 0, 19_999, t0), false, cardrefund.WhySpent, 20_000, 19_999},
		{"zarinpal: one in progress", func() cardrefund.Facts { f := facts("zarinpal", 500_000, 0, 900_000, t0); f.Open = open; return f }(),
			false, cardrefund.WhyInProgress, 0, 0},
		{"zarinpal: no access token", func() cardrefund.Facts {
			f := facts("zarinpal", 500_000, 0, 900_000, t0)
			f.CanRefund = false
			return f
		}(),
			false, cardrefund.WhyNotConfigured, 0, 0},
		{"not credited", func() cardrefund.Facts {
			f := facts("zarinpal", 500_000, 0, 900_000, t0)
			f.TopUp.Credited = false
			return f
		}(),
			false, cardrefund.WhyNotCredited, 0, 0},
		{"sep: the whole sale", facts("sep", 150_000, 0, 150_000, t0.Add(44*time.Minute)), true, "", 150_000, 150_000},
		{"sep: window closed", facts("sep", 150_000, 0, 150_000, t0.Add(45*time.Minute)), false, cardrefund.WhyWindowClosed, 0, 0},
		{"sep: part spent", facts("sep", 150_000, 0, 149_999, t0), false, cardrefund.WhySpent, 0, 0},
		{"sep: reversed once", facts("sep", 150_000, 150_000, 150_000, t0), false, cardrefund.WhyReversed, 0, 0},
		{"mellat: settled", facts("mellat", 150_000, 0, 150_000, t0), false, cardrefund.WhySettled, 0, 0},
		{"zibal: no way", facts("zibal", 150_000, 0, 150_000, t0), false, cardrefund.WhyNoWay, 0, 0},
		// A refund API that takes only the whole of what is left: that
		// much, or nothing while the wallet holds less.
		{"whole only: what is left", func() cardrefund.Facts {
			f := facts("zarinpal", 500_000, 200_000, 900_000, t0)
			f.Capabilities.CardRefund.Partial = false
			return f
		}(), true, "", 300_000, 300_000},
		{"whole only: part spent", func() cardrefund.Facts {
			f := facts("zarinpal", 500_000, 200_000, 250_000, t0)
			f.Capabilities.CardRefund.Partial = false
			return f
		}(), false, cardrefund.WhySpent, 300_000, 300_000},
		{"a gateway removed", func() cardrefund.Facts { f := facts("zarinpal", 500_000, 0, 900_000, t0); f.Known = false; return f }(),
			false, cardrefund.WhyNoWay, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := cardrefund.OfferFor(tt.f, cfg)
			if o.OK != tt.ok || o.Why != tt.why || (tt.max != 0 && (o.MinRials != tt.min || o.MaxRials != tt.max)) {
				t.Fatalf("%+v, want ok %v why %q %d..%d", o, tt.ok, tt.why, tt.min, tt.max)
			}
			if o.OK != (o.Check(o.MaxRials) == nil) {
				t.Fatalf("Check(max) disagrees with OK: %+v", o)
			}
		})
	}
}

// TestAfterCall is the reading of the call's answer.
func TestAfterCall(t *testing.T) {
	cfg := cardrefund.DefaultConfig()
	c := cardrefund.CardRefund{Attempts: 1}
	transient := &gateway.TransientError{Op: "refund", Err: errors.New("timeout")}
	for _, tt := range []struct {
		name   string
		err    error
		stay   bool
		to     cardrefund.Status
		reason cardrefund.Reason
	}{
		{"accepted", nil, false, cardrefund.StatusRefunded, cardrefund.ReasonBankAccepted},
		{"refused", &gateway.RejectedError{Op: "refund", Code: -61}, false, cardrefund.StatusFailed, cardrefund.ReasonBankRefused},
		{"refused, wrapped", fmt.Errorf("zarinpal: %w", &gateway.RejectedError{Op: "refund"}), false, cardrefund.StatusFailed, cardrefund.ReasonBankRefused},
		{"not sent", fmt.Errorf("lookup: %w: %w", gateway.ErrRefundNotSent, transient), false, cardrefund.StatusHeld, cardrefund.ReasonNotSent},
		{"breaker open", gateway.ErrUnavailable, false, cardrefund.StatusHeld, cardrefund.ReasonNotSent},
		{"time-out", transient, true, "", ""},
		{"anything else", errors.New("EOF"), true, "", ""},
	} {
		s := cardrefund.AfterCall(c, tt.err, t0, cfg, 0)
		if s.Stay != tt.stay || s.To != tt.to || s.Reason != tt.reason {
			t.Errorf("%s: %+v", tt.name, s)
		}
		if (s.Stay || s.To == cardrefund.StatusHeld) && !s.NextCheck.After(t0) {
			t.Errorf("%s: asked again at %s", tt.name, s.NextCheck)
		}
	}
}

// TestAfterStatus is the reading of the bank's record of a refund whose
// answer never came.
func TestAfterStatus(t *testing.T) {
	cfg := cardrefund.DefaultConfig()
	sent := t0
	c := cardrefund.CardRefund{SubmittedAt: &sent, Checks: 2}
	st := func(o gateway.RefundOutcome) gateway.RefundState { return gateway.RefundState{Outcome: o} }
	for _, tt := range []struct {
		name   string
		state  gateway.RefundState
		err    error
		after  time.Duration
		stay   bool
		to     cardrefund.Status
		reason cardrefund.Reason
	}{
		{"made", st(gateway.RefundDone), nil, time.Minute, false, cardrefund.StatusRefunded, cardrefund.ReasonBankConfirmed},
		{"not made, too soon", st(gateway.RefundNotDone), nil, 5 * time.Minute, true, "", ""},
		{"not made, an hour after", st(gateway.RefundNotDone), nil, time.Hour, true, "", ""},
		{"not made, long after", st(gateway.RefundNotDone), nil, 24 * time.Hour, false, cardrefund.StatusFailed, cardrefund.ReasonNotAtBank},
		{"differs", st(gateway.RefundDiffers), nil, time.Minute, false, cardrefund.StatusNeedsReview, cardrefund.ReasonBankDiffers},
		{"no answer", gateway.RefundState{}, errors.New("timeout"), time.Hour, true, "", ""},
		{"no answer past the budget", gateway.RefundState{}, errors.New("timeout"), 72 * time.Hour, false, cardrefund.StatusNeedsReview, cardrefund.ReasonBudgetSpent},
	} {
		s := cardrefund.AfterStatus(c, tt.state, tt.err, sent.Add(tt.after), cfg, 0)
		if s.Stay != tt.stay || s.To != tt.to || s.Reason != tt.reason {
			t.Errorf("%s: %+v", tt.name, s)
		}
	}
	// Not made, too soon: asked again once it may be believed.
	if s := cardrefund.AfterStatus(c, st(gateway.RefundNotDone), nil, sent.Add(time.Minute), cfg, 0); s.NextCheck.Before(sent.Add(cfg.NotDoneAfter)) {
		t.Errorf("asked again at %s, before NotDoneAfter", s.NextCheck)
	}
}

// TestMachine: every edge of the package's diagram is in the table, and
// nothing else; a refund the bank made is recorded lease or not.
func TestMachine(t *testing.T) {
	src, err := parser.ParseFile(token.NewFileSet(), "cardrefund.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\t(\w+)\s+─+▶ (\w+)\s.*?(\[lease\])?$`)
	diagram := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(src.Doc.Text(), -1) {
		if m[1] == "start" {
			continue
		}
		diagram[m[1]+" → "+m[2]] = m[3] != ""
	}
	table := map[string]bool{}
	for _, e := range cardrefund.Edges() {
		table[string(e.From)+" → "+string(e.To)] = e.Lease
	}
	if fmt.Sprint(diagram) != fmt.Sprint(table) || len(table) == 0 {
		t.Fatalf("the diagram %v and the table %v differ", diagram, table)
	}
	if lease, err := cardrefund.EdgeNeedsLease(cardrefund.StatusSubmitted, cardrefund.StatusRefunded, cardrefund.ActorWorker); err != nil || lease {
		t.Fatalf("submitted → refunded: lease %v %v", lease, err)
	}
	if _, err := cardrefund.EdgeNeedsLease(cardrefund.StatusRefunded, cardrefund.StatusFailed, cardrefund.ActorAdmin); !errors.Is(err, cardrefund.ErrIllegalTransition) {
		t.Fatalf("refunded → failed: %v", err)
	}
	if _, err := cardrefund.EdgeNeedsLease(cardrefund.StatusNeedsReview, cardrefund.StatusFailed, cardrefund.ActorWorker); err == nil {
		t.Fatal("the worker closes a card refund under review")
	}
}

// TestHoldsNoSQL: the package decides and orchestrates; SQL lives in its
// store (internal/cardrefund/sqlstore).
func TestHoldsNoSQL(t *testing.T) {
	sqlRE := regexp.MustCompile(`(?i)\b(select\b.*\bfrom|insert\s+into|update\s+\w+\s+set|delete\s+from|returning\b|order\s+by)`)
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "gorm.io/") || p == "database/sql" ||
				p == "github.com/kifpool/kifpool/internal/store" {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, _ := strconv.Unquote(lit.Value); sqlRE.MatchString(s) {
					t.Errorf("%s: an SQL string %q", name, s)
				}
			}
			return true
		})
	}
}

// TestNotMadeFrom: an admin's close as not made is believed no sooner
// than the worker's (NotDoneAfter after the call); a card refund never
// sent (no call time) may be closed at once.
func TestNotMadeFrom(t *testing.T) {
	cfg := cardrefund.DefaultConfig()
	sent := t0
	if got := cardrefund.NotMadeFrom(cardrefund.CardRefund{SubmittedAt: &sent, Attempts: 1}, cfg); !got.Equal(sent.Add(cfg.NotDoneAfter)) {
		t.Errorf("sent: closable from %v, want %v", got, sent.Add(cfg.NotDoneAfter))
	}
	if got := cardrefund.NotMadeFrom(cardrefund.CardRefund{}, cfg); !got.IsZero() {
		t.Errorf("never sent: closable from %v, want at once", got)
	}
}
