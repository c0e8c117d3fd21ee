package topup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Admin action errors.
var (
	ErrNotUnderReview = errors.New("payment is not under review")
	ErrNoteRequired   = errors.New("a note saying why is required")
	// ErrNothingToAsk: the payment never got an authority, is credited,
	// or is reversing or ended by its reverse.
	ErrNothingToAsk = errors.New("there is nothing to ask the bank about this payment")
	// ErrTopUpBusy: another actor holds the payment right now.
	ErrTopUpBusy = errors.New("the payment is being checked right now; try again in a moment")
)

// AdminRecheck asks the bank now about a payment that is not credited,
// through the same path as the worker: an open payment is checked if no
// other actor holds it; a failed or needs-review one is reopened first (so
// a crash cannot lose the answer) and then checked. A paid answer credits
// it, once, however often it is pressed. What happened is recorded in the
// audit log: a check that ran, or one skipped because another actor held
// the payment (then the error is ErrPaymentBusy).
func (s *Service) AdminRecheck(ctx context.Context, publicID string, adminID int64) (TopUp, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return p, err
	}
	if !MayRecheck(p) {
		return p, ErrNothingToAsk
	}
	var after TopUp
	var ran bool
	switch p.Status {
	case StatusFailed, StatusNeedsReview:
		after, ran, err = s.reopen(ctx, p, ActorAdmin, &adminID, true)
	default:
		after, ran, err = s.resolveNow(ctx, p.ID, ActorAdmin, false)
	}
	if err != nil {
		if ran {
			// The bank was asked; what it said may not be recorded. The
			// audit log says so (N5: it said nothing).
			if aerr := s.recordAction(ctx, p, adminID, audit.ActionRecheck, audit.ResultError, after.Status); aerr != nil {
				s.log.ErrorContext(ctx, "record a failed recheck", "payment", p.PublicID, "err", aerr)
			}
		}
		return after, err
	}
	if !ran {
		if err := s.recordAction(ctx, p, adminID, audit.ActionRecheckSkipped, audit.ResultSkipped, after.Status); err != nil {
			return after, err
		}
		return after, ErrTopUpBusy
	}
	return after, s.recordAction(ctx, p, adminID, audit.ActionRecheck, audit.ResultDone, after.Status)
}

// MayRecheck reports whether an admin's recheck of p can ask the bank
// anything (AdminRecheck's ErrNothingToAsk otherwise; the admin's page
// offers the button only when it can): not credited, with an authority,
// and neither reversing nor ended by its reverse, whose answer is the
// worker's reverse (or the bank's record of it), since a verify again
// could only hear "already verified" of a sale we cannot credit.
func MayRecheck(p TopUp) bool {
	return p.Status != StatusCredited && p.Authority != nil && p.Status != StatusReversing && !ReverseEnded(p)
}

// CheckCloseNote reports whether note may close a payment as failed
// (ErrNoteRequired: empty, over 1,000 characters, or with characters a
// note may not hold). The admin's page checks it before the second
// factor's code is spent; AdminCloseFailed checks it again.
func CheckCloseNote(note string) error {
	note = strings.TrimSpace(note)
	if note == "" || utf8.RuneCountInString(note) > 1000 || usertext.CheckNote(note) != nil {
		return ErrNoteRequired
	}
	return nil
}

// AdminCloseFailed ends a payment under review as failed, with a note: for
// when the bank confirms (by phone, by statement) that no money of the
// payer is held. It takes the payment's lease like every other actor, so
// it cannot overrule a check in flight. Should the bank later verify it as
// paid after all, it is still credited (a bank-verified payment always is)
// — unless its reverse ended it (ReverseEnded): that one keeps its
// reverse's reason (StepClose; the note is in the audit log) and is never
// reopened, since the bank verified it already and the payer may have been
// refunded by hand.
func (s *Service) AdminCloseFailed(ctx context.Context, publicID string, adminID int64, note string) (TopUp, error) {
	note = strings.TrimSpace(note)
	if err := CheckCloseNote(note); err != nil {
		return TopUp{}, err
	}
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return p, err
	}
	if p.Status != StatusNeedsReview {
		return p, ErrNotUnderReview
	}
	tok, cur, err := s.claim(ctx, p.ID, []Status{StatusNeedsReview})
	if err != nil {
		return p, err
	}
	if tok == "" {
		if cur.Status != StatusNeedsReview {
			return cur, ErrNotUnderReview
		}
		return cur, ErrTopUpBusy
	}
	now := s.clock()
	d := Decide(Input{Step: StepClose, Actor: ActorAdmin, TopUp: cur, Now: now})
	if d.Action != ActionMove {
		_, err := s.release(ctx, cur, tok, Fields{})
		return cur, errors.Join(ErrNotUnderReview, err)
	}
	out, err := s.move(ctx, cur, StatusNeedsReview, change{to: d.To, actor: ActorAdmin, reason: d.Reason,
		adminID: &adminID, lease: tok, audit: &audit.Entry{TopUpID: &p.ID, AdminID: adminID, Action: audit.ActionCloseFailed, Note: note,
			FromStatus: string(StatusNeedsReview), ToStatus: string(StatusFailed), Result: audit.ResultDone, CreatedAt: now}})
	if err != nil {
		if errors.Is(err, errNotMoved) {
			return cur, ErrNotUnderReview
		}
		return cur, err
	}
	s.log.WarnContext(ctx, "admin closed a payment under review as failed", "payment", p.PublicID, "admin", adminID)
	return out, nil
}

func (s *Service) recordAction(ctx context.Context, p TopUp, adminID int64, action audit.Action, result string, to Status) error {
	err := s.st.RecordAdminAction(ctx, audit.Entry{TopUpID: &p.ID, AdminID: adminID,
		Action: action, FromStatus: string(p.Status), ToStatus: string(to), Result: result, CreatedAt: s.clock()})
	if err != nil {
		return fmt.Errorf("record admin action on %s: %w", p.PublicID, err)
	}
	return nil
}
