package gateway

import (
	"context"

	"github.com/kifpool/kifpool/internal/gateway/callback"
)

// Ops are a gateway's optional operations, as one value: a field is nil
// when the gateway has no such operation. A driver resolves them once,
// when it is built, and returns the same value from Gateway.Ops; a
// wrapper (the resilient caller) wraps each one that is set and leaves
// the others nil. Code that needs an operation asks whether its field
// is set, never what type the gateway is: one signature per operation,
// and no interface to assert.
type Ops struct {
	// PayForm is the POST form that sends the payer to the bank for an
	// authority (RedirectPOSTForm gateways: SEP's Token, Mellat's RefId).
	// No call is made. Nil: the payer is sent by a GET redirect to
	// Gateway.PayURL.
	PayForm func(authority string) PayForm

	// Settle settles a verified payment, which is the merchant's only
	// then (Mellat's bpSettleRequest; Capabilities.Settle says within how
	// long). Idempotent at the bank (a second settle answers "already
	// settled"), so it is a safe operation. Errors follow Gateway's
	// contract. Nil: verify alone makes the money ours.
	Settle SettleFunc

	// InquireSale asks about a sale with the callback's data rather than
	// by the token alone (Mellat's bpInquiryRequest needs the
	// SaleReferenceId): VERIFIED (0, 43), REVERSED (48), FAILED (no paid
	// sale), or another code as "CODE_n". Read-only, a safe operation.
	// Errors follow Gateway's contract. Nil: Gateway.Inquire is the
	// gateway's inquiry.
	InquireSale func(ctx context.Context, in VerifyInput) (InquiryResult, error)

	// Reverse returns a verified payment's money to the payer, within
	// Capabilities.ReverseWindow (SEP's ReverseTransaction of the RefNum
	// in.Receipt, Mellat's bpReversalRequest of the sale in.Receipt, not
	// yet settled). nil error: reversed; a refusal is a *RejectedError
	// with the bank's code; any other error leaves the outcome unknown.
	// Not known to be idempotent: never retried. The top-up worker calls
	// it once for a verified payment it cannot credit
	// (topup.StatusReversing: the intent written first, a lost answer
	// settled by RefundStatus). Nil: the driver cannot reverse.
	Reverse func(ctx context.Context, in VerifyInput) error

	// Refund gives part or all of a verified payment back to the payer's
	// card, as Capabilities.CardRefund says (Zarinpal's AddRefund; SEP's
	// and Mellat's reverse of the whole sale). nil error: the bank
	// accepted it; a *RejectedError: the bank refused it; an error
	// wrapping ErrRefundNotSent (or ErrUnavailable): nothing was sent;
	// any other error leaves the outcome unknown, and RefundStatus says
	// what became of it. Never retried: no gateway takes an idempotency
	// key for it, and a repeat could refund twice. Nil: no way back to
	// the card through this gateway (or it is not configured).
	Refund func(ctx context.Context, in RefundInput) (RefundResult, error)

	// RefundStatus asks the bank what became of a refund (in as Refund
	// was called with) whose answer never came: read-only, a safe
	// operation. Errors follow Gateway's contract. Set with Refund.
	RefundStatus func(ctx context.Context, in RefundInput) (RefundState, error)

	// MatchCallback checks what a callback says of the sale against the
	// payment it came back to (publicID, amountRials): an error when it
	// names another order, or an amount the payer paid other than ours
	// (Mellat's SaleOrderId, which its guide requires the merchant to
	// check, and FinalAmount after a discount). A refused callback keeps
	// nothing and is never verified: the bank returns a sale it does not
	// see verified. No call is made. Nil: nothing to check.
	MatchCallback func(publicID string, amountRials int64, cb callback.Params) error

	// Down reports whether the bank is known to be down right now (the
	// resilient caller's open circuit breaker): the top-up offers
	// another gateway, the worker postpones its checks. No call is made.
	// Nil: never known to be down.
	Down func() bool
}

// SettleFunc is Ops.Settle's type, for code that passes it on.
type SettleFunc func(ctx context.Context, in VerifyInput) (SettleResult, error)

// Down reports whether g is known to be down (Ops.Down).
func Down(g Gateway) bool {
	down := g.Ops().Down
	return down != nil && down()
}
