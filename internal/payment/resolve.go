package payment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/wallet"
)

// errLostRace: a conditional update found the payment no longer in the
// expected state; another actor resolved it first.
var errLostRace = errors.New("payment changed meanwhile")

// Return handles the bank's callback for a payment. The callback proves
// nothing: it only names the payment. The authority must match ours (else
// ErrAuthorityMismatch and nothing changes); then, unless the payment is
// already resolved, it is verified with the bank using the amount from our
// own row. The returned payment carries the outcome to show.
func (s *Service) Return(ctx context.Context, publicID, authority string) (Payment, error) {
	return s.ReturnWithHint(ctx, publicID, authority, true)
}

// ReturnWithHint is Return with the callback's own claim (Zarinpal's
// Status=OK) as a hint, never as a fact: a callback that claims payment
// is always verified at once; one that does not, for a payment the bank
// said moments ago its payer is still paying, is answered from our row
// without asking the bank again (reloads of that page cost nothing).
func (s *Service) ReturnWithHint(ctx context.Context, publicID, authority string, claimsPaid bool) (Payment, error) {
	p, err := s.ByPublicID(ctx, publicID)
	if err != nil {
		return Payment{}, err
	}
	if p.Authority == nil || authority != *p.Authority {
		s.log.Warn("callback authority mismatch", "payment", p.PublicID)
		return Payment{}, ErrAuthorityMismatch
	}
	if p.Status.Terminal() {
		return p, nil // a repeat callback: the same result page
	}
	recent := p.NextCheckAt != nil && p.NextCheckAt.After(s.clock())
	if p.Status == StatusPendingVerification && recent {
		return p, nil // the bank was asked moments ago; do not hammer it on every reload
	}
	if p.Status == StatusAwaitingPayment && recent && !claimsPaid {
		return p, nil // the payer was still at the bank moments ago
	}
	return s.Resolve(ctx, p)
}

// Resolve verifies an open payment with the bank and records the outcome.
// It is the one resolve path, used by the return handler, the worker and
// reconciliation. Only one actor at a time verifies a payment (an owned
// lease on the row); others wait, bounded, for its result, and take the
// lease over if its holder died. It returns the payment as it now stands;
// an open payment means the outcome is not known yet.
func (s *Service) Resolve(ctx context.Context, p Payment) (Payment, error) {
	tok, err := s.claim(ctx, p.ID, openForVerify())
	if err != nil {
		return p, err
	}
	if tok == "" {
		return s.waitResolved(ctx, p.ID)
	}
	p, err = s.reload(ctx, p.ID)
	if err != nil {
		return p, err
	}
	return s.verifyAndApply(ctx, p, tok)
}

// recheck verifies a payment that is failed or needs review here, because
// the bank may hold it as paid (reconciliation, an admin's action). A
// verify that says paid credits it; any other answer leaves it as it is.
func (s *Service) recheck(ctx context.Context, p Payment) (Payment, error) {
	tok, err := s.claim(ctx, p.ID, []Status{StatusFailed, StatusNeedsReview})
	if err != nil || tok == "" {
		return p, err
	}
	p, err = s.reload(ctx, p.ID)
	if err != nil {
		return p, err
	}
	return s.verifyAndApply(ctx, p, tok)
}

// claim takes the verification lease of a payment in one of the statuses
// and returns its owner token ("" when another actor holds it).
func (s *Service) claim(ctx context.Context, id int64, statuses []Status) (string, error) {
	now := s.clock()
	var b [12]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	res := s.db.Gorm.WithContext(ctx).Model(&Payment{}).
		Where("id = ? AND status IN ? AND (lease_until IS NULL OR lease_until < ?)", id, statuses, now).
		Updates(map[string]any{"lease_until": now.Add(s.cfg.LeaseDuration), "lease_owner": tok, "updated_at": now})
	if res.Error != nil {
		return "", fmt.Errorf("claim payment %d: %w", id, res.Error)
	}
	if res.RowsAffected != 1 {
		return "", nil
	}
	return tok, nil
}

// waitResolved waits for the actor holding the lease, bounded by
// ReturnWait; if the lease runs out (its holder died), it takes it over.
func (s *Service) waitResolved(ctx context.Context, id int64) (Payment, error) {
	deadline := time.Now().Add(s.cfg.ReturnWait)
	for {
		p, err := s.reload(ctx, id)
		if err != nil {
			return p, err
		}
		if p.Status.Terminal() || p.LeaseUntil == nil || time.Now().After(deadline) {
			return p, nil
		}
		if p.LeaseUntil.Before(s.clock()) {
			tok, err := s.claim(ctx, id, openForVerify())
			if err != nil {
				return p, err
			}
			if tok != "" {
				if p, err = s.reload(ctx, id); err != nil {
					return p, err
				}
				return s.verifyAndApply(ctx, p, tok)
			}
		}
		select {
		case <-ctx.Done():
			return p, nil
		case <-time.After(s.cfg.PollInterval):
		}
	}
}

// verifyAndApply asks the bank and records the answer. The caller holds
// the lease tok.
func (s *Service) verifyAndApply(ctx context.Context, p Payment, tok string) (Payment, error) {
	log := s.log.With("payment", p.PublicID)
	ctx = resilient.WithPaymentRef(ctx, p.PublicID)
	vctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	vr, err := s.gw.Verify(vctx, gateway.VerifyInput{Authority: p.AuthorityString(), AmountRials: p.AmountRials})
	cancel()
	// Whatever the caller's context does now, the answer must be recorded.
	ctx = context.WithoutCancel(ctx)
	if !errors.Is(err, gateway.ErrUnavailable) {
		// Count only checks that reached the bank: an open breaker
		// postpones a check, it does not spend one.
		if uerr := s.db.Gorm.WithContext(ctx).Model(&Payment{}).Where("id = ?", p.ID).
			Update("attempts", gorm.Expr("attempts + 1")).Error; uerr != nil {
			log.Error("count verify attempt", "err", uerr)
		}
		p.Attempts++
	}
	switch {
	case err != nil && gateway.IsRejected(err):
		log.Error("verify rejected by gateway", "err", err)
		return s.transition(ctx, p, tok, StatusNeedsReview, "verify rejected: "+err.Error(), nil)
	case err != nil:
		// A time-out is not a failure: the outcome is unknown.
		log.Warn("verify outcome unknown", "err", err)
		return s.transition(ctx, p, tok, StatusPendingVerification, "verify: "+err.Error(),
			map[string]any{"next_check_at": s.clock().Add(s.cfg.RecheckDelay)})
	}
	log = log.With("code", vr.Code, "outcome", vr.Outcome)
	switch vr.Outcome {
	case gateway.VerifyPaid, gateway.VerifyAlreadyVerified:
		if vr.RefID <= 0 {
			log.Error("bank confirmed payment without a reference")
			return s.transition(ctx, p, tok, StatusNeedsReview, "bank confirmed without ref_id", nil)
		}
		return s.credit(ctx, p, tok, vr)
	case gateway.VerifyNotPaid:
		return s.notPaid(ctx, p, tok, vr)
	case gateway.VerifyAmountMismatch:
		log.Error("bank reports another amount than ours")
		return s.transition(ctx, p, tok, StatusNeedsReview, fmt.Sprintf("verify: amount mismatch (code %d)", vr.Code), nil)
	default:
		log.Error("verify refused by gateway")
		return s.transition(ctx, p, tok, StatusNeedsReview, fmt.Sprintf("verify: invalid (code %d)", vr.Code), nil)
	}
}

// notPaid handles a "not paid" verify. A payer still on the bank page also
// gets "not paid", so before failing the payment the bank is asked for the
// authority's state: an early or forged callback must not fail a payment
// the payer can still complete. Any doubt keeps the payment open.
func (s *Service) notPaid(ctx context.Context, p Payment, tok string, vr gateway.VerifyResult) (Payment, error) {
	ictx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	ir, err := s.gw.Inquire(ictx, p.AuthorityString())
	cancel()
	switch {
	case err != nil:
		return s.transition(ctx, p, tok, StatusPendingVerification, "inquiry after not-paid: "+err.Error(),
			map[string]any{"next_check_at": s.clock().Add(s.cfg.RecheckDelay)})
	case ir.Status == gateway.InquiryInBank:
		s.log.Info("callback before payment; payer still at the bank", "payment", p.PublicID)
		if err := s.db.Gorm.WithContext(ctx).Model(&Payment{}).Where("id = ? AND lease_owner = ?", p.ID, tok).
			Update("next_check_at", s.clock().Add(s.cfg.RecheckDelay)).Error; err != nil {
			return p, fmt.Errorf("schedule payment %s: %w", p.PublicID, err)
		}
		return s.release(ctx, p, tok)
	case ir.Status == gateway.InquiryPaid || ir.Status == gateway.InquiryVerified:
		// Contradicts the verify answer: keep asking.
		return s.transition(ctx, p, tok, StatusPendingVerification, "verify said not paid, inquiry says "+string(ir.Status),
			map[string]any{"next_check_at": s.clock().Add(s.cfg.RecheckDelay)})
	}
	return s.transition(ctx, p, tok, StatusFailed, fmt.Sprintf("not paid (code %d, bank state %s)", vr.Code, ir.Status), nil)
}

// credit records a verified payment and credits the wallet, in one
// transaction: conditional state update, ledger entry, balance.
//
// The bank saying paid (100, or 101 "already verified") for our authority
// and our amount means the money is ours to credit, whatever this row says
// meanwhile: so the update only requires the payment not to be credited
// yet (a payment another actor failed on a stale view is credited, not
// lost). The unique ledger entry per payment and unique (gateway, ref_id)
// keep it to one credit.
func (s *Service) credit(ctx context.Context, p Payment, tok string, vr gateway.VerifyResult) (Payment, error) {
	now := s.clock()
	amount := p.AmountRials // the amount the bank just verified (verify carries our amount; -50 otherwise)
	var was Status
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var cur Payment
		if err := tx.Select("status").Take(&cur, p.ID).Error; err != nil {
			return err
		}
		was = cur.Status
		reason := string(vr.Outcome)
		if !cur.Status.open() {
			reason = fmt.Sprintf("%s: verified by the bank after it was %s here", vr.Outcome, cur.Status)
		}
		res := tx.Model(&Payment{}).
			Where("id = ? AND status <> ?", p.ID, StatusCredited).
			Updates(map[string]any{
				"status": StatusCredited, "status_reason": truncate(reason, 500),
				"ref_id": vr.RefID, "verified_amount_rials": amount, "card_pan_masked": vr.CardPANMasked,
				"resolved_at": now, "updated_at": now, "lease_until": nil, "lease_owner": "", "next_check_at": nil,
			})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return errLostRace
		}
		_, err := wallet.CreditTopUp(tx, p.WalletID, p.ID, amount, now)
		return err
	})
	switch {
	case err == nil:
		if !was.open() {
			s.log.Error("bank verified a payment that was not open here; credited", "payment", p.PublicID, "was", was, "ref_id", vr.RefID)
		}
		s.log.Info("payment credited", "payment", p.PublicID, "amount_rials", amount, "ref_id", vr.RefID)
		return s.reload(ctx, p.ID)
	case errors.Is(err, errLostRace), errors.Is(err, wallet.ErrAlreadyCredited):
		return s.release(ctx, p, tok) // someone else credited it: a replay
	case store.IsUniqueViolation(err):
		// unique (gateway, ref_id): the bank's reference already belongs to
		// another payment. Never credit twice for one bank payment.
		s.log.Error("bank reference already used by another payment", "payment", p.PublicID, "ref_id", vr.RefID)
		return s.transition(ctx, p, tok, StatusNeedsReview, fmt.Sprintf("ref_id %d already used by another payment", vr.RefID), nil)
	}
	return p, fmt.Errorf("credit payment %s: %w", p.PublicID, err)
}

// transition moves an open payment to another status under the lease
// tok, releasing it. If the lease is no longer ours (it ran out and
// another actor took over), nothing changes.
func (s *Service) transition(ctx context.Context, p Payment, tok string, to Status, reason string, extra map[string]any) (Payment, error) {
	now := s.clock()
	vals := map[string]any{"status": to, "status_reason": truncate(reason, 500), "updated_at": now, "lease_until": nil, "lease_owner": ""}
	if to.Terminal() {
		vals["resolved_at"] = now
		vals["next_check_at"] = nil
	}
	for k, v := range extra {
		vals[k] = v
	}
	res := s.db.Gorm.WithContext(ctx).Model(&Payment{}).
		Where("id = ? AND status IN ? AND lease_owner = ?", p.ID, openForVerify(), tok).Updates(vals)
	if res.Error != nil {
		return p, fmt.Errorf("payment %s to %s: %w", p.PublicID, to, res.Error)
	}
	if res.RowsAffected == 0 {
		// Not open any more (a recheck of a failed payment), or the lease
		// was lost: leave the row as it is.
		return s.release(ctx, p, tok)
	}
	return s.reload(ctx, p.ID)
}

// release gives up the lease tok, if still ours, without changing the
// status.
func (s *Service) release(ctx context.Context, p Payment, tok string) (Payment, error) {
	err := s.db.Gorm.WithContext(ctx).Model(&Payment{}).Where("id = ? AND lease_owner = ?", p.ID, tok).
		Updates(map[string]any{"lease_until": nil, "lease_owner": "", "updated_at": s.clock()}).Error
	if err != nil {
		return p, fmt.Errorf("release payment %s: %w", p.PublicID, err)
	}
	return s.reload(ctx, p.ID)
}

// expire ends an open payment past one of its deadlines (worker), under
// the lease so that it cannot overrule an actor verifying it right now.
func (s *Service) expire(ctx context.Context, p Payment, to Status, reason string) (Payment, error) {
	tok, err := s.claim(ctx, p.ID, openForVerify())
	if err != nil || tok == "" {
		return p, err
	}
	return s.transition(ctx, p, tok, to, reason, nil)
}
