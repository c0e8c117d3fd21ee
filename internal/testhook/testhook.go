// Package testhook holds the crash points and the clock skew that the
// end-to-end tests (internal/e2e) drive in the real binary. They exist only
// in a binary built with the build tag kifpool_testhooks
// (`go build -tags kifpool_testhooks ./cmd/kifpool`); in every normal build
// At does nothing and Clock returns its base clock unchanged, whatever the
// environment says.
//
// In a test-hook build:
//
//	KIFPOOL_TEST_CRASH_AT=POINT[,POINT...]  the process SIGKILLs itself when it reaches POINT
//	KIFPOOL_TEST_CLOCK_SKEW=DURATION         the instance's own clock runs DURATION ahead (-10m: behind)
//
// The points are named where At is called: after_verify (the bank answered
// paid, the credit is not committed), after_reopen (a failed or
// needs-review payment was reopened, the bank not asked yet),
// after_verify_before_settle (a settling gateway, Mellat, verified the
// payment; settle not asked yet), after_settle (the bank settled it, the
// credit is not committed), after_credit (the credit and its webhook
// rows committed, nothing delivered), after_webhook_sent (a webhook
// answered 2xx, not recorded as delivered), inside_ledger_before_postings
// and inside_ledger_after_postings (inside a credit's database
// transaction, before and after its ledger rows: nothing of it commits),
// inside_transfer (inside a transfer's database transaction, its ledger
// rows written: nothing of it commits), after_withdrawal_hold (a
// withdrawal and its hold committed, nothing sent to the payout
// provider), after_payout_accepted (the provider took it, its answer not
// recorded), after_payout_transferred (the provider said "transferred",
// the move to paid not committed), during_withdrawal_return (inside the
// return's database transaction), after_card_refund_hold (a card
// refund and its hold committed, the bank not asked),
// before_card_refund_call (recorded as submitted, the call not sent) and
// after_card_refund_accepted (the bank accepted a card refund, nothing of
// its answer recorded).
package testhook

// Environment variables read by a test-hook build.
const (
	EnvCrashAt   = "KIFPOOL_TEST_CRASH_AT"
	EnvClockSkew = "KIFPOOL_TEST_CLOCK_SKEW"
)

// Crash points.
const (
	AfterVerify             = "after_verify"
	AfterReopen             = "after_reopen"
	AfterVerifyBeforeSettle = "after_verify_before_settle"
	AfterSettle             = "after_settle"
	// AfterCredit: the credit (and its webhook outbox rows) committed,
	// nothing delivered yet.
	AfterCredit = "after_credit"
	// AfterWebhookSent: a partner answered 2xx to a webhook, the delivery
	// is not recorded yet (it will be sent again).
	AfterWebhookSent = "after_webhook_sent"
	// InsideLedgerBeforePostings: inside a credit's database transaction,
	// the payment moved, its event, outbox rows and calls written (on
	// PostgreSQL in one statement), no ledger row yet.
	InsideLedgerBeforePostings = "inside_ledger_before_postings"
	// InsideLedgerAfterPostings: inside a credit's database transaction,
	// the ledger transaction, balances and postings written, not
	// committed.
	InsideLedgerAfterPostings = "inside_ledger_after_postings"
	// InsideTransfer: inside a transfer's database transaction, its row,
	// its ledger transaction, balances and postings written, its webhook
	// rows not yet; nothing of it committed.
	InsideTransfer = "inside_transfer"
	// AfterWithdrawalHold: a withdrawal and its hold committed; nothing
	// sent to the payout provider.
	AfterWithdrawalHold = "after_withdrawal_hold"
	// AfterPayoutAccepted: the payout provider took the withdrawal, its
	// answer not recorded (the row says "outcome unknown").
	AfterPayoutAccepted = "after_payout_accepted"
	// AfterPayoutTransferred: the provider said "transferred", the move to
	// paid not committed.
	AfterPayoutTransferred = "after_payout_transferred"
	// DuringWithdrawalReturn: inside the return's database transaction,
	// its ledger movement written, not committed.
	DuringWithdrawalReturn = "during_withdrawal_return"
	// AfterCardRefundHold: a card refund and the wallet's hold committed
	// (status held), the call not sent.
	AfterCardRefundHold = "after_card_refund_hold"
	// BeforeCardRefundCall: a card refund recorded as submitted (its
	// attempt counted), the call to the bank not sent.
	BeforeCardRefundCall = "before_card_refund_call"
	// AfterCardRefundAccepted: the bank accepted a card refund (refunded
	// or reversed), its answer not recorded.
	AfterCardRefundAccepted = "after_card_refund_accepted"
	// InsideCapture: inside a charge capture's database transaction, the
	// hold captured into the merchant account, the charge's row, event
	// and outbox rows written; nothing of it committed.
	InsideCapture = "inside_capture"
)
