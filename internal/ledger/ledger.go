// Package ledger is the double-entry ledger under every balance
// (ARCHITECTURE §2 and its glossary): accounts, transactions of two or more
// postings that sum to zero, holds and reversals.
//
// The rules it keeps, and where each is enforced:
//   - A transaction's postings sum to zero: Validate (pure, before any
//     write), a trigger on PostgreSQL that checks each INSERT's
//     transactions whole at its end (migration 00041: all of a
//     transaction's postings go in one statement, as every write here does),
//     a read-back in the same transaction on SQLite, and `kifpool check`.
//   - A replay is a no-op: (kind, reference) is unique, so a second
//     transaction of one movement is refused by the database (ErrDuplicate),
//     and the caller treats it as "already done". Write and Hold answer
//     with the first; a taken reference with another body (other postings,
//     another hold) is ErrReferenceReused instead: not a replay, not done.
//   - An account that may not go below zero (every account but the outside
//     world's: a gateway's clearing, a payout rail) never does: the guard is
//     in the UPDATE that moves its balance (available = posted − held ≥ 0),
//     never in a read before it: the UPDATE's condition on SQLite, the
//     CHECK constraint the UPDATE meets on PostgreSQL (one statement for a
//     whole transaction, failing whole), and the CHECK behind both.
//   - The accounts of one transaction are updated in ascending id order, so
//     two transactions over the same accounts (A→B and B→A) never deadlock.
//   - Postings are never updated or deleted (triggers on both dialects); a
//     correction is a reversal, at most one per original (a unique index).
//
// SQL lives here and in nothing above it; the decisions (netting, checks,
// what a second capture answers) are pure functions.
package ledger

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// AccountKind says what an account holds and whether it may go below zero.
type AccountKind string

// The kinds of account (ledger_accounts.kind).
const (
	// AccountWallet is a user's wallet: what they may spend.
	AccountWallet AccountKind = "wallet"
	// AccountMerchant is a merchant's balance (charges paid to it).
	AccountMerchant AccountKind = "merchant"
	// AccountGateway is a gateway's clearing account: money a bank took
	// for us. It goes below zero by what the gateway owes us.
	AccountGateway AccountKind = "gateway"
	// AccountPayoutsInFlight holds withdrawals sent to a payout provider
	// and not yet settled.
	AccountPayoutsInFlight AccountKind = "payouts_in_flight"
	// AccountPayoutRail is a payout provider's side: the outside world
	// money leaves to.
	AccountPayoutRail AccountKind = "payout_rail"
	// AccountCardRefundsInFlight holds refunds to cards not yet confirmed.
	AccountCardRefundsInFlight AccountKind = "card_refunds_in_flight"
	// AccountFees is what Kifpool charges, where a movement has a fee.
	AccountFees AccountKind = "fees"
	// AccountSuspense holds money an operator has to place by hand.
	AccountSuspense AccountKind = "suspense"
)

// AccountKinds lists every kind, in the order pages show them.
func AccountKinds() []AccountKind {
	return []AccountKind{AccountWallet, AccountMerchant, AccountGateway, AccountPayoutsInFlight, AccountPayoutRail,
		AccountCardRefundsInFlight, AccountFees, AccountSuspense}
}

// MayGoNegative reports whether an account of kind k may go below zero:
// only the outside world's (a gateway, a payout rail) may. The migration's
// CHECK (ledger_accounts_negative_kinds) says the same.
func (k AccountKind) MayGoNegative() bool { return k == AccountGateway || k == AccountPayoutRail }

// Valid reports whether k is a known kind.
func (k AccountKind) Valid() bool {
	for _, x := range AccountKinds() {
		if x == k {
			return true
		}
	}
	return false
}

// The codes of the accounts that exist once (or once per gateway or
// provider): a code is an account's stable name.
const (
	CodeSuspense = "suspense"
	CodeFees     = "fees"
	// CodeCardRefundsInFlight is the one account of card refunds the bank
	// confirmed, on their way to the gateway's clearing side.
	CodeCardRefundsInFlight = "card_refunds_in_flight"
)

// ClearingSlots is how many rows a gateway's clearing account is kept in.
// Every credit at a gateway moves its clearing balance; in one row, each
// credit would wait for the previous one's commit (its row lock is held
// through the commit's flush), and credits at one gateway would queue one
// by one. Kept in slots, a credit takes the slot of its payment's id, and
// the gateway's clearing balance is the sum of its slots.
const ClearingSlots = 8

// GatewayCode is the code of a gateway's clearing account (its first
// slot).
func GatewayCode(gateway string) string { return "gateway:" + gateway }

// ClearingCode is the code of the clearing slot of a gateway that a
// credit of payment paymentID takes: slot 0 is GatewayCode's, the others
// "gateway:NAME#k".
func ClearingCode(gateway string, topUpID int64) string {
	slot := topUpID % ClearingSlots
	if slot < 0 {
		slot = -slot
	}
	if slot == 0 {
		return GatewayCode(gateway)
	}
	return fmt.Sprintf("%s#%d", GatewayCode(gateway), slot)
}

// WalletCode is the code of a wallet's account.
func WalletCode(walletID int64) string { return fmt.Sprintf("wallet:%d", walletID) }

// MerchantCode is the code of a merchant's account.
func MerchantCode(userID int64) string { return fmt.Sprintf("merchant:%d", userID) }

// Kind is what a transaction records (ledger_transactions.kind): the
// glossary's movements and their corrections.
type Kind string

// The kinds of transaction.
const (
	KindTopUp            Kind = "topup"             // gateway clearing → wallet, once per top-up
	KindTransfer         Kind = "transfer"          // wallet → wallet
	KindCharge           Kind = "charge"            // wallet → merchant (a charge captured at once)
	KindCapture          Kind = "capture"           // a hold's captured part → its destination
	KindRelease          Kind = "release"           // reserved, never written: a release moves no money, the hold records it
	KindRefund           Kind = "refund"            // merchant → wallet
	KindWithdrawal       Kind = "withdrawal"        // wallet → payouts in flight
	KindWithdrawalReturn Kind = "withdrawal_return" // a withdrawal the provider gave back
	KindCardRefund       Kind = "card_refund"       // wallet → card refunds in flight
	KindReversal         Kind = "reversal"          // the opposite of an original, at most once
	KindAdjustment       Kind = "adjustment"        // an operator's correction, through suspense
)

// Kinds lists every transaction kind, KindRelease among them (the
// glossary's, the schema's CHECK and the pages' labels have it), though
// only the Written ones are ever written.
func Kinds() []Kind {
	return []Kind{KindTopUp, KindTransfer, KindCharge, KindCapture, KindRelease, KindRefund, KindWithdrawal,
		KindWithdrawalReturn, KindCardRefund, KindReversal, KindAdjustment}
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	for _, x := range Kinds() {
		if x == k {
			return true
		}
	}
	return false
}

// Written reports whether a transaction of kind k may be written: every
// known kind but KindRelease, which is reserved. A release moves no
// money, so the hold records it and no transaction does; Validate refuses
// a release, so that the API's list of kinds (openapi.json) is what the
// ledger can hold.
func (k Kind) Written() bool { return k.Valid() && k != KindRelease }

// Posting is one leg of a transaction: a signed amount on an account
// (positive adds to its balance).
type Posting struct {
	AccountID   int64
	AmountRials int64
}

// Entry is a transaction to write.
type Entry struct {
	Kind      Kind
	Reference string // unique per kind: the movement's own id
	TopUpID   int64  // the top-up it belongs to, or 0
	// ReversesID is the original a reversal undoes (KindReversal only).
	ReversesID int64
	Note       string
	Postings   []Posting
	At         time.Time
}

// The ledger's refusals.
var (
	// ErrUnbalanced: the postings do not sum to zero, or there are fewer
	// than two accounts.
	ErrUnbalanced = errors.New("ledger: postings do not balance")
	// ErrDuplicate: the movement has its transaction already (its kind
	// and reference are taken). A replay: the caller rolls back and
	// treats it as done.
	ErrDuplicate = errors.New("ledger: movement already recorded")
	// ErrReferenceReused: the kind and reference (or a hold's reason and
	// reference) are taken by a movement of other postings, or another
	// hold: not a replay, and nothing was written. The first is
	// answered with it, and it is not ErrDuplicate: a caller must not
	// take a different request for done (a 409, not a 200).
	ErrReferenceReused = errors.New("ledger: reference already used by another movement")
	// ErrInsufficientFunds: an account that may not go below zero would
	// have (its available balance is short).
	ErrInsufficientFunds = errors.New("ledger: insufficient funds")
	// ErrOutcomeUnknown: Write's group commit (GroupCommit) lost the
	// answer to a commit it sent (the connection lost, its time up): the
	// movement may or may not be written. Not a refusal, and not "not
	// written": the caller finds out by its reference (ByReference), or
	// writes it again under the same reference (a replay if it was).
	ErrOutcomeUnknown = errors.New("ledger: the commit's outcome is unknown")
	// ErrReversalReversed: the transaction a reversal names is itself a
	// reversal. A reversal is never reversed (a correction of a
	// correction is a new movement); refused in the write itself, under
	// the same statement or transaction that inserts the reversal, and
	// nothing is written.
	ErrReversalReversed = errors.New("ledger: a reversal is never reversed: correct it with a new movement")
	// ErrAccountNotFound: no such account.
	ErrAccountNotFound = errors.New("ledger: no such account")
	// ErrNotFound: no such transaction or hold.
	ErrNotFound = errors.New("ledger: not found")
	// ErrHoldEnded: the hold was released, expired or captured otherwise.
	ErrHoldEnded = errors.New("ledger: hold already ended")
	// ErrBadAmount: an amount that is not positive, or a capture larger
	// than its hold.
	ErrBadAmount = errors.New("ledger: bad amount")
)

// Net merges the postings of each account into one, drops those that net
// to zero and sorts them by account id: the one global order every
// transaction updates its accounts in (no deadlock between A→B and B→A).
//
// Net assumes sums that fit in int64 (Validate checks them); Validate is
// the one to call on an entry.
func Net(ps []Posting) []Posting {
	sum := make(map[int64]int64, len(ps))
	for _, p := range ps {
		sum[p.AccountID] += p.AmountRials
	}
	out := make([]Posting, 0, len(sum))
	for id, a := range sum {
		if a != 0 {
			out = append(out, Posting{AccountID: id, AmountRials: a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AccountID < out[j].AccountID })
	return out
}

// ReversalReference is the reference of transaction id's reversal: one
// per original, so that the unique (kind, reference) makes a second
// reversal a replay of the first (Validate refuses any other).
func ReversalReference(id int64) string { return "reversal:" + strconv.FormatInt(id, 10) }

// Validate checks an entry before anything is written and returns its
// postings netted (Net): a known kind that may be Written, a reference,
// two or more accounts, no account id missing, a sum of zero, and a
// reversal that names its original under ReversalReference.
func Validate(e Entry) ([]Posting, error) {
	if !e.Kind.Valid() {
		return nil, fmt.Errorf("ledger: unknown kind %q", e.Kind)
	}
	if !e.Kind.Written() {
		return nil, fmt.Errorf("ledger: kind %q is reserved and never written (a release moves no money: its hold records it)", e.Kind)
	}
	if e.Reference == "" {
		return nil, fmt.Errorf("ledger: %s without a reference", e.Kind)
	}
	if (e.Kind == KindReversal) != (e.ReversesID != 0) {
		return nil, fmt.Errorf("ledger: %s: only a reversal names the transaction it reverses", e.Kind)
	}
	// A reversal's reference is the one its original gives it: a second
	// reversal of one original is then its replay under (kind, reference),
	// answered with the first, never a movement under another reference
	// that the reverses_id index refuses with nothing to answer.
	if e.Kind == KindReversal && e.Reference != ReversalReference(e.ReversesID) {
		return nil, fmt.Errorf("ledger: the reversal of transaction %d must be referenced %q, got %q", e.ReversesID, ReversalReference(e.ReversesID), e.Reference)
	}
	if e.Kind == KindTopUp && e.TopUpID == 0 {
		return nil, fmt.Errorf("ledger: a top-up without its payment")
	}
	// Every sum is checked for int64 overflow: in wrapping arithmetic
	// postings whose true sum is 2⁶⁴ "sum to zero", and an account's
	// netted amount could wrap to the opposite sign.
	var total int64
	perAccount := make(map[int64]int64, len(e.Postings))
	for _, p := range e.Postings {
		if p.AccountID <= 0 {
			return nil, fmt.Errorf("ledger: %s %s: posting without an account", e.Kind, e.Reference)
		}
		var ok1, ok2 bool
		total, ok1 = add(total, p.AmountRials)
		perAccount[p.AccountID], ok2 = add(perAccount[p.AccountID], p.AmountRials)
		if !ok1 || !ok2 || p.AmountRials == math.MinInt64 {
			return nil, fmt.Errorf("%w: %s %s: amounts beyond int64", ErrUnbalanced, e.Kind, e.Reference)
		}
	}
	if total != 0 {
		return nil, fmt.Errorf("%w: %s %s sums to %d rials", ErrUnbalanced, e.Kind, e.Reference, total)
	}
	net := Net(e.Postings)
	if len(net) < 2 {
		return nil, fmt.Errorf("%w: %s %s moves money between %d accounts", ErrUnbalanced, e.Kind, e.Reference, len(net))
	}
	return net, nil
}

// add is a + b and whether it fits in int64.
func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

// SameMovement reports whether written transaction t is what entry e
// asks for (a replay of e), or another movement under its kind and
// reference: the same netted postings, top-up and original.
func SameMovement(e Entry, t Transaction) bool {
	if e.Kind != t.Kind || e.Reference != t.Reference || e.TopUpID != deref(t.TopUpID) || e.ReversesID != deref(t.ReversesID) {
		return false
	}
	net, err := Validate(e)
	if err != nil || len(net) != len(t.Postings) {
		return false
	}
	for i, p := range net {
		if w := t.Postings[i]; w.AccountID != p.AccountID || w.AmountRials != p.AmountRials {
			return false
		}
	}
	return true
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Opposite is the postings that undo ps.
func Opposite(ps []Posting) []Posting {
	out := make([]Posting, len(ps))
	for i, p := range ps {
		out[i] = Posting{AccountID: p.AccountID, AmountRials: -p.AmountRials}
	}
	return out
}

// Transfer is the two postings moving amount from one account to another.
func Transfer(from, to, amountRials int64) []Posting {
	return []Posting{{AccountID: from, AmountRials: -amountRials}, {AccountID: to, AmountRials: amountRials}}
}
