package ledger_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		e    ledger.Entry
		ok   bool
		err  error
	}{
		{"a transfer", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t1", Postings: ledger.Transfer(1, 2, 500)}, true, nil},
		{"three legs", ledger.Entry{Kind: ledger.KindCharge, Reference: "c1",
			Postings: []ledger.Posting{{AccountID: 1, AmountRials: -1000}, {AccountID: 2, AmountRials: 900}, {AccountID: 3, AmountRials: 100}}}, true, nil},
		{"unbalanced", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t2",
			Postings: []ledger.Posting{{AccountID: 1, AmountRials: -500}, {AccountID: 2, AmountRials: 499}}}, false, ledger.ErrUnbalanced},
		{"to itself", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t3", Postings: ledger.Transfer(1, 1, 500)}, false, ledger.ErrUnbalanced},
		{"one posting", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t4", Postings: []ledger.Posting{{AccountID: 1, AmountRials: 0}}},
			false, ledger.ErrUnbalanced},
		{"no postings", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t5"}, false, ledger.ErrUnbalanced},
		{"no account", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t6", Postings: ledger.Transfer(0, 2, 500)}, false, nil},
		{"unknown kind", ledger.Entry{Kind: "gift", Reference: "g1", Postings: ledger.Transfer(1, 2, 500)}, false, nil},
		{"a release (reserved: its hold records it)", ledger.Entry{Kind: ledger.KindRelease, Reference: "hold:1", Postings: ledger.Transfer(1, 2, 500)},
			false, nil},
		{"no reference", ledger.Entry{Kind: ledger.KindTransfer, Postings: ledger.Transfer(1, 2, 500)}, false, nil},
		{"a top-up without its payment", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p1", Postings: ledger.Transfer(1, 2, 500)}, false, nil},
		{"a reversal naming nothing", ledger.Entry{Kind: ledger.KindReversal, Reference: "r1", Postings: ledger.Transfer(1, 2, 500)}, false, nil},
		// int64 sums wrap: three postings whose true sum is 2⁶⁴ sum to 0 in
		// int64 arithmetic, and −MinInt64 has no int64.
		{"a sum that wraps to zero", ledger.Entry{Kind: ledger.KindCharge, Reference: "w1", Postings: []ledger.Posting{
			{AccountID: 1, AmountRials: math.MaxInt64}, {AccountID: 2, AmountRials: math.MaxInt64}, {AccountID: 3, AmountRials: 2}}}, false, ledger.ErrUnbalanced},
		{"one account's postings wrap", ledger.Entry{Kind: ledger.KindCharge, Reference: "w2", Postings: []ledger.Posting{
			{AccountID: 1, AmountRials: math.MaxInt64}, {AccountID: 1, AmountRials: 2}, {AccountID: 2, AmountRials: -math.MaxInt64}, {AccountID: 2, AmountRials: -2}}},
			false, ledger.ErrUnbalanced},
		{"the least int64", ledger.Entry{Kind: ledger.KindTransfer, Reference: "w3", Postings: []ledger.Posting{
			{AccountID: 1, AmountRials: math.MinInt64}, {AccountID: 2, AmountRials: math.MinInt64}}}, false, ledger.ErrUnbalanced},
		{"a transfer naming an original", ledger.Entry{Kind: ledger.KindTransfer, Reference: "t7", ReversesID: 4, Postings: ledger.Transfer(1, 2, 500)},
			false, nil},
		{"a reversal under its original's reference", ledger.Entry{Kind: ledger.KindReversal, Reference: ledger.ReversalReference(4), ReversesID: 4,
			Postings: ledger.Transfer(1, 2, 500)}, true, nil},
		{"a reversal under another reference", ledger.Entry{Kind: ledger.KindReversal, Reference: "manual-reversal-of-4", ReversesID: 4,
			Postings: ledger.Transfer(1, 2, 500)}, false, nil},
		{"a reversal under another original's reference", ledger.Entry{Kind: ledger.KindReversal, Reference: ledger.ReversalReference(5), ReversesID: 4,
			Postings: ledger.Transfer(1, 2, 500)}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			net, err := ledger.Validate(tc.e)
			if tc.ok != (err == nil) {
				t.Fatalf("Validate = %v, %v; want ok %v", net, err, tc.ok)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
		})
	}
}

// Net merges each account's postings and orders them by account id: the
// order every transaction locks its accounts in.
func TestNetOrdersByAccount(t *testing.T) {
	got := ledger.Net([]ledger.Posting{{AccountID: 9, AmountRials: 100}, {AccountID: 3, AmountRials: -70}, {AccountID: 9, AmountRials: -30},
		{AccountID: 5, AmountRials: 0}, {AccountID: 1, AmountRials: 0}})
	want := []ledger.Posting{{AccountID: 3, AmountRials: -70}, {AccountID: 9, AmountRials: 70}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Net = %v, want %v", got, want)
	}
	if a, b := ledger.Net(ledger.Transfer(7, 2, 5)), ledger.Net(ledger.Transfer(2, 7, 5)); a[0].AccountID != 2 || b[0].AccountID != 2 {
		t.Fatalf("A→B and B→A lock in different orders: %v %v", a, b)
	}
}

func TestAccountKinds(t *testing.T) {
	for _, k := range ledger.AccountKinds() {
		want := k == ledger.AccountGateway || k == ledger.AccountPayoutRail
		if k.MayGoNegative() != want {
			t.Errorf("%s may go negative: %v, want %v", k, k.MayGoNegative(), want)
		}
	}
	if ledger.AccountKind("bonus").Valid() || !ledger.AccountWallet.Valid() {
		t.Error("Valid is wrong")
	}
	if len(ledger.Kinds()) != 11 {
		t.Errorf("%d transaction kinds, want the glossary's 11", len(ledger.Kinds()))
	}
}

// Every transaction kind has its words in Persian and English, not
// empty: the pages build the key "ledger.kind."+kind at run time, which
// the catalogue's "every used key exists" test cannot see.
func TestEveryKindHasLabels(t *testing.T) {
	for _, k := range ledger.Kinds() {
		key := "ledger.kind." + string(k)
		for _, l := range []i18n.Lang{i18n.FA, i18n.EN} {
			if !i18n.Has(l, key) || strings.TrimSpace(i18n.T(l, key)) == "" {
				t.Errorf("transaction kind %q has no %s label (%s)", k, l, key)
			}
		}
	}
}

func TestDecideEnd(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	open := ledger.Hold{ID: 1, AmountRials: 1000, Status: ledger.HoldOpen, ExpiresAt: now.Add(time.Hour)}
	captured := open
	captured.Status, captured.CapturedRials = ledger.HoldCaptured, 600
	released := open
	released.Status = ledger.HoldReleased
	expired := open
	expired.Status = ledger.HoldExpired
	due := open
	due.ExpiresAt = now
	cases := []struct {
		name   string
		h      ledger.Hold
		a      ledger.EndAction
		amount int64
		apply  bool
		to     ledger.HoldStatus
		replay bool
		err    error
	}{
		{"capture all", open, ledger.EndCapture, 1000, true, ledger.HoldCaptured, false, nil},
		{"capture part", open, ledger.EndCapture, 400, true, ledger.HoldCaptured, false, nil},
		{"capture more than held", open, ledger.EndCapture, 1001, false, "", false, ledger.ErrBadAmount},
		{"capture nothing", open, ledger.EndCapture, 0, false, "", false, ledger.ErrBadAmount},
		{"capture again", captured, ledger.EndCapture, 600, false, "", true, nil},
		{"capture again, another amount", captured, ledger.EndCapture, 100, false, "", true, nil},
		{"capture a released hold", released, ledger.EndCapture, 100, false, "", false, ledger.ErrHoldEnded},
		{"capture an expired hold", expired, ledger.EndCapture, 100, false, "", false, ledger.ErrHoldEnded},
		{"capture past its time", due, ledger.EndCapture, 100, true, ledger.HoldExpired, false, ledger.ErrHoldEnded},
		{"release", open, ledger.EndRelease, 0, true, ledger.HoldReleased, false, nil},
		{"release again", released, ledger.EndRelease, 0, false, "", true, nil},
		{"release a captured hold", captured, ledger.EndRelease, 0, false, "", false, ledger.ErrHoldEnded},
		{"expire a due hold", due, ledger.EndExpire, 0, true, ledger.HoldExpired, false, nil},
		{"expire before its time", open, ledger.EndExpire, 0, false, "", false, nil},
		{"expire a captured hold", captured, ledger.EndExpire, 0, false, "", false, ledger.ErrHoldEnded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := ledger.DecideEnd(tc.h, tc.a, tc.amount, now)
			if d.Apply != tc.apply || d.To != tc.to || d.Replay != tc.replay {
				t.Fatalf("DecideEnd = %+v, want apply %v to %q replay %v", d, tc.apply, tc.to, tc.replay)
			}
			if tc.err != nil && !errors.Is(d.Err, tc.err) {
				t.Fatalf("err %v, want %v", d.Err, tc.err)
			}
			if tc.err == nil && tc.apply && d.Err != nil {
				t.Fatalf("err %v, want none", d.Err)
			}
		})
	}
}

// A gateway's clearing account is kept in ClearingSlots rows: payments
// spread over them by id, the same payment always in the same slot.
func TestClearingSlots(t *testing.T) {
	seen := map[string]bool{}
	for id := int64(1); id <= 3*ledger.ClearingSlots; id++ {
		code := ledger.ClearingCode("zarinpal", id)
		if code != ledger.ClearingCode("zarinpal", id) {
			t.Fatalf("payment %d: two slots", id)
		}
		seen[code] = true
	}
	if len(seen) != ledger.ClearingSlots || !seen[ledger.GatewayCode("zarinpal")] || !seen["gateway:zarinpal#7"] {
		t.Fatalf("slots %v", seen)
	}
	if ledger.ClearingCode("zibal", 16) != "gateway:zibal" || ledger.ClearingCode("zibal", 9) != "gateway:zibal#1" {
		t.Fatal("slot codes")
	}
}

// SameMovement tells a replay (the same netted postings, in any order)
// from another movement under the same kind and reference.
func TestSameMovement(t *testing.T) {
	pid := int64(7)
	written := ledger.Transaction{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: &pid,
		Postings: []ledger.PostingRow{{AccountID: 2, AmountRials: -500}, {AccountID: 5, AmountRials: 500}}}
	cases := []struct {
		name string
		e    ledger.Entry
		same bool
	}{
		{"the same", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 7, Postings: ledger.Transfer(2, 5, 500)}, true},
		{"in another order, split", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 7, Postings: []ledger.Posting{
			{AccountID: 5, AmountRials: 200}, {AccountID: 2, AmountRials: -500}, {AccountID: 5, AmountRials: 300}}}, true},
		{"another amount", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 7, Postings: ledger.Transfer(2, 5, 501)}, false},
		{"another account", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 7, Postings: ledger.Transfer(2, 6, 500)}, false},
		{"another payment", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 8, Postings: ledger.Transfer(2, 5, 500)}, false},
		{"invalid", ledger.Entry{Kind: ledger.KindTopUp, Reference: "p_1", TopUpID: 7, Postings: ledger.Transfer(2, 2, 500)}, false},
	}
	for _, tc := range cases {
		if got := ledger.SameMovement(tc.e, written); got != tc.same {
			t.Errorf("%s: SameMovement = %v, want %v", tc.name, got, tc.same)
		}
	}
}
