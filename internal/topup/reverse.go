package topup

import (
	"context"
	"errors"
	"fmt"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
)

// The reverse of a verified payment that cannot be credited
// (StatusReversing). At SEP the verify itself made the money the
// merchant's; at Mellat a verified sale is the merchant's once settled,
// and held by the bank until it is settled or reversed. A payment the bank
// verified for another amount, without a reference, on a receipt alone,
// with a reference another payment holds, or whose settle was refused, is
// never credited: the decision moves it to reversing, and the worker,
// under the payment's lease, sends its one reverse (Ops.Reverse):
//
//  1. the intent first (Store.MarkReverseSent: reverse_sent_at, only if
//     none stands), then the one call;
//  2. accepted → failed (reversed_to_card: on its way back to the card);
//     refused because the sale is settled (Mellat 45: two settles raced;
//     the driver's refusal says SaleSettled), for a verified payment whose
//     settle was refused → settling again (settled), the intent dropped:
//     the next settle answers 45 and credits it, once; any other refusal
//     → needs_review (reverse_refused); certainly not sent (an
//     open breaker) → the intent dropped, sent at a later turn while the
//     window is open; unknown (a time-out, a 5xx, "already reversed") →
//     the intent stands;
//  3. while the intent stands, the bank's record is asked, never the
//     reverse (Ops.RefundStatus: SEP's verify of the RefNum, 5 reversed;
//     Mellat's bpInquiryRequest, 48): reversed → failed; standing, once
//     the call cannot still land → the intent dropped (sent again only
//     on that proof, within the window); anything else → needs_review.
//
// Past the window (ReverseUntil) nothing is sent: needs_review
// (reverse_window_closed). Decisions are decideReverse's (pure).

// canReverse reports whether g reverses a verified payment and can be
// asked what became of a reverse.
func canReverse(g gateway.Gateway) bool {
	if g == nil {
		return false
	}
	ops := g.Ops()
	return ops.Reverse != nil && ops.RefundStatus != nil
}

// reverseTurn is the worker's turn on a reversing payment p: under its
// lease, the one reverse or the bank's record of it. busy: another actor
// held it.
func (w *Worker) reverseTurn(ctx context.Context, p TopUp) (TopUp, bool, error) {
	s := w.s
	tok, cur, err := s.claim(ctx, p.ID, []Status{StatusReversing})
	if err != nil || tok == "" {
		return cur, err == nil && heldBy(cur, s.clock()), err
	}
	r := w.rulesFor(cur)
	g := s.cfg.Gateways[cur.Gateway]
	r.ReverseWindow, r.ReverseLands = g.ReverseWindow, s.cfg.LeaseDuration
	out, err := s.reverseUnder(ctx, cur, tok, r)
	return out, false, err
}

// reverseInput is what the bank is asked with about p's reverse: its
// sale as verify named it.
func reverseInput(p TopUp) gateway.VerifyInput {
	return gateway.VerifyInput{Authority: p.AuthorityString(), AmountRials: p.AmountRials, OrderID: p.PublicID,
		Receipt: p.ReceiptString(), ReceiptConfirmed: p.Receipt != nil}
}

// reverseUnder works a reversing payment p whose lease tok the caller
// holds (decideReverse), and gives the lease back.
func (s *Service) reverseUnder(ctx context.Context, p TopUp, tok string, r Rules) (TopUp, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VerifyTimeout)
	defer cancel()
	log := s.log.With("payment", p.PublicID, "actor", ActorWorker)
	bctx := resilient.WithRef(ctx, p.PublicID)
	g := s.gw(p)
	can := canReverse(g)
	in := Input{Step: StepReverse, Actor: ActorWorker, TopUp: p, Now: s.clock(), Rules: r, CanReverse: can}
	vin := reverseInput(p)
	if p.ReverseSentAt != nil {
		// Sent before, its answer lost: the bank's record says what
		// became of it; the reverse is not sent again on no word.
		err := fmt.Errorf("%s: no reverse status: %w", p.Gateway, gateway.ErrUnavailable)
		var st gateway.RefundState
		if can {
			st, err = g.Ops().RefundStatus(bctx, gateway.RefundInput{Payment: vin, RefID: p.RefIDValue(),
				AmountRials: p.AmountRials, Reference: p.PublicID})
		}
		in.ReverseLooked, in.ReverseState, in.ReverseStateErr, in.Now = true, st, err, s.clock()
		if err != nil {
			log.WarnContext(ctx, "reverse: the bank's record could not be read; asked again", "err", err)
		}
	}
	d := Decide(in)
	if d.Action == ActionReverse {
		sent, err := s.st.MarkReverseSent(context.WithoutCancel(ctx), p.ID, tok, s.clock())
		if err != nil {
			if errors.Is(err, errNotMoved) {
				// The lease ran out, or the intent stands: nothing sent.
				return s.release(context.WithoutCancel(ctx), p, tok, Fields{})
			}
			_, _ = s.release(context.WithoutCancel(ctx), p, tok, Fields{})
			return p, err
		}
		p = sent
		rerr := g.Ops().Reverse(bctx, vin)
		in.TopUp, in.ReverseSent, in.ReverseErr, in.Now = p, true, rerr, s.clock()
		d = Decide(in)
		switch {
		case rerr == nil:
			log.InfoContext(ctx, "reverse accepted: the payment goes back to the payer's card")
		case d.Action == ActionMove && d.To == StatusSettling:
			log.WarnContext(ctx, "reverse refused: the bank holds the sale as settled; settled again and credited", "err", rerr)
		case gateway.IsRejected(rerr):
			log.ErrorContext(ctx, "reverse refused by the bank: a person looks", "err", rerr)
		default:
			log.WarnContext(ctx, "reverse outcome unknown: the bank's record decides", "err", rerr)
		}
	}
	ctx = context.WithoutCancel(ctx)
	if d.Action == ActionMove && d.To == StatusNeedsReview {
		log.ErrorContext(ctx, "a verified payment that could not be credited was not reversed: a person looks", "reason", d.Reason)
	}
	return s.apply(ctx, p, tok, ActorWorker, d)
}
