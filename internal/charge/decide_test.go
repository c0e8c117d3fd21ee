package charge_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/webhook"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	earlier := now.Add(-time.Second)
	base := charge.Charge{MerchantUserID: 1, AmountRials: 100_000, Capture: charge.CaptureAutomatic, ExpiresAt: later}
	with := func(f func(c *charge.Charge)) charge.Charge { c := base; f(&c); return c }
	open := with(func(c *charge.Charge) { c.Status = charge.StatusRequiresConfirmation })
	openManual := with(func(c *charge.Charge) { c.Status = charge.StatusRequiresConfirmation; c.Capture = charge.CaptureManual })
	openDue := with(func(c *charge.Charge) { c.Status = charge.StatusRequiresConfirmation; c.ExpiresAt = earlier })
	auth := with(func(c *charge.Charge) {
		c.Status, c.Capture, c.PayerUserID, c.HoldID, c.HoldExpiresAt = charge.StatusAuthorized, charge.CaptureManual, 2, 9, &later
	})
	authDue := with(func(c *charge.Charge) {
		c.Status, c.Capture, c.PayerUserID, c.HoldID, c.HoldExpiresAt = charge.StatusAuthorized, charge.CaptureManual, 2, 9, &earlier
	})
	paid := with(func(c *charge.Charge) { c.Status, c.PayerUserID, c.CapturedRials = charge.StatusSucceeded, 2, 100_000 })
	paidManual := with(func(c *charge.Charge) {
		c.Status, c.Capture, c.PayerUserID, c.HoldID, c.CapturedRials = charge.StatusSucceeded, charge.CaptureManual, 2, 9, 60_000
	})
	canceled := with(func(c *charge.Charge) { c.Status = charge.StatusCanceled })
	expired := with(func(c *charge.Charge) { c.Status = charge.StatusExpired })

	confirm := func(payer int64) charge.Request {
		return charge.Request{Action: charge.ActConfirm, PayerUserID: payer, Now: now}
	}
	capture := func(rials int64) charge.Request {
		return charge.Request{Action: charge.ActCapture, AmountRials: rials, Now: now}
	}
	cancel := charge.Request{Action: charge.ActCancel, Now: now}
	payerCancel := charge.Request{Action: charge.ActCancelCheckout, PayerUserID: 2, Now: now}
	expire := charge.Request{Action: charge.ActExpire, Now: now}

	for _, tc := range []struct {
		name   string
		c      charge.Charge
		r      charge.Request
		apply  bool
		to     charge.Status
		money  charge.Money
		event  string // the webhook event of the move ("" : none)
		replay bool
		err    error
	}{
		{"confirm automatic pays", open, confirm(2), true, charge.StatusSucceeded, charge.MoneyCharge, webhook.TypeChargeSucceeded, false, nil},
		{"confirm manual holds", openManual, confirm(2), true, charge.StatusAuthorized, charge.MoneyHold, webhook.TypeChargeAuthorized, false, nil},
		{"confirm by the merchant", open, confirm(1), false, "", 0, "", false, charge.ErrPayToSelf},
		{"confirm past 30 minutes expires", openDue, confirm(2), true, charge.StatusExpired, charge.MoneyNone, webhook.TypeChargeExpired, false, charge.ErrExpired},
		{"confirm again by the payer", paid, confirm(2), false, "", 0, "", true, nil},
		{"confirm an authorization again", auth, confirm(2), false, "", 0, "", true, nil},
		{"confirm by another payer", paid, confirm(3), false, "", 0, "", false, charge.ErrPaidByAnother},
		{"confirm canceled", canceled, confirm(2), false, "", 0, "", false, charge.ErrCanceled},
		{"confirm expired", expired, confirm(2), false, "", 0, "", false, charge.ErrExpired},
		{"payer cancels", open, payerCancel, true, charge.StatusCanceled, charge.MoneyNone, webhook.TypeChargeCanceled, false, nil},
		{"payer cancels again", canceled, payerCancel, false, "", 0, "", true, nil},
		{"payer cancels a paid charge", paid, payerCancel, false, "", 0, "", false, charge.ErrNotCancelable},
		{"capture part", auth, capture(60_000), true, charge.StatusSucceeded, charge.MoneyCapture, webhook.TypeChargeCaptured, false, nil},
		{"capture all", auth, capture(100_000), true, charge.StatusSucceeded, charge.MoneyCapture, webhook.TypeChargeCaptured, false, nil},
		{"capture more than held", auth, capture(100_001), false, "", 0, "", false, charge.ErrBadAmount},
		{"capture nothing", auth, capture(0), false, "", 0, "", false, charge.ErrBadAmount},
		{"capture past the hold", authDue, capture(10), true, charge.StatusExpired, charge.MoneyExpire, webhook.TypeChargeExpired, false, charge.ErrExpired},
		{"capture more than held past the hold", authDue, capture(100_001), true, charge.StatusExpired, charge.MoneyExpire, webhook.TypeChargeExpired, false, charge.ErrExpired},
		{"capture again", paidManual, capture(60_000), false, "", 0, "", true, nil},
		{"capture again for another amount", paidManual, capture(5), false, "", 0, "", false, charge.ErrCapturedOtherAmount},
		{"capture again for nothing", paidManual, capture(0), false, "", 0, "", false, charge.ErrBadAmount},
		{"capture again for more than the charge", paidManual, capture(100_001), false, "", 0, "", false, charge.ErrBadAmount},
		{"capture an automatic charge", paid, capture(5), false, "", 0, "", false, charge.ErrNotCapturable},
		{"capture unconfirmed", open, capture(5), false, "", 0, "", false, charge.ErrNotCapturable},
		{"capture canceled", canceled, capture(5), false, "", 0, "", false, charge.ErrCanceled},
		{"cancel checkout", open, cancel, true, charge.StatusCanceled, charge.MoneyNone, webhook.TypeChargeCanceled, false, nil},
		{"cancel a checkout past 30 minutes expires", openDue, cancel, true, charge.StatusExpired, charge.MoneyNone, webhook.TypeChargeExpired, false, charge.ErrExpired},
		{"cancel authorization", auth, cancel, true, charge.StatusCanceled, charge.MoneyRelease, webhook.TypeChargeCanceled, false, nil},
		{"cancel authorization past its hold", authDue, cancel, true, charge.StatusExpired, charge.MoneyExpire, webhook.TypeChargeExpired, false, charge.ErrExpired},
		{"cancel again", canceled, cancel, false, "", 0, "", true, nil},
		{"cancel succeeded", paid, cancel, false, "", 0, "", false, charge.ErrNotCancelable},
		{"cancel expired", expired, cancel, false, "", 0, "", false, charge.ErrExpired},
		{"expire a due checkout", openDue, expire, true, charge.StatusExpired, charge.MoneyNone, webhook.TypeChargeExpired, false, nil},
		{"expire a due authorization", authDue, expire, true, charge.StatusExpired, charge.MoneyExpire, webhook.TypeChargeExpired, false, nil},
		{"expire a checkout not due", open, expire, false, "", 0, "", false, nil},
		{"expire an authorization not due", auth, expire, false, "", 0, "", false, nil},
		{"expire again", expired, expire, false, "", 0, "", true, nil},
		{"expire a paid charge", paid, expire, false, "", 0, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := charge.Decide(tc.c, tc.r)
			if d.Apply != tc.apply || d.Replay != tc.replay || !errors.Is(d.Err, tc.err) || (tc.err == nil) != (d.Err == nil) {
				t.Fatalf("decision %+v", d)
			}
			if tc.apply && (d.To != tc.to || d.Money != tc.money || d.Event == "") {
				t.Fatalf("decision %+v, want to %s money %d", d, tc.to, tc.money)
			}
			if d.Event != tc.event {
				t.Fatalf("decision %+v: event %q, want %q", d, d.Event, tc.event)
			}
		})
	}
}

func TestCheckRefund(t *testing.T) {
	paid := charge.Charge{Status: charge.StatusSucceeded, AmountRials: 100, CapturedRials: 80, RefundedRials: 30}
	for _, tc := range []struct {
		name  string
		c     charge.Charge
		rials int64
		err   error
	}{
		{"part", paid, 20, nil},
		{"the rest", paid, 50, nil},
		{"beyond the captured", paid, 51, charge.ErrRefundExceeds},
		{"nothing", paid, 0, charge.ErrBadAmount},
		{"an authorization", charge.Charge{Status: charge.StatusAuthorized, AmountRials: 100}, 10, charge.ErrNotRefundable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := charge.CheckRefund(tc.c, tc.rials); !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("CheckRefund: %v, want %v", err, tc.err)
			}
		})
	}
}

func TestReturnTarget(t *testing.T) {
	c := charge.Charge{PublicID: "ch_x", Status: charge.StatusSucceeded, ReturnURL: "https://shop.example/done?order=7&status=old"}
	if got := charge.ReturnTarget(c); got != "https://shop.example/done?order=7&charge_id=ch_x&status=succeeded" {
		t.Fatalf("return target %s", got)
	}
	// The merchant's own pairs stay as registered, in their order, even
	// those Go's query parser would drop; ours replace any of their names.
	for _, tc := range []struct{ in, want string }{
		{"https://shop.example/back?ref=a;b&x=%zz&o=7", "https://shop.example/back?ref=a;b&x=%zz&o=7&charge_id=ch_x&status=succeeded"},
		{"https://shop.example/back?sig=AbC%2Bd&b=2&a=1", "https://shop.example/back?sig=AbC%2Bd&b=2&a=1&charge_id=ch_x&status=succeeded"},
		{"https://shop.example/back?charge_id=forged&stat%75s=paid&k", "https://shop.example/back?k&charge_id=ch_x&status=succeeded"},
		{"https://shop.example/back", "https://shop.example/back?charge_id=ch_x&status=succeeded"},
		{"https://shop.example/back?", "https://shop.example/back?charge_id=ch_x&status=succeeded"},
	} {
		c.ReturnURL = tc.in
		if got := charge.ReturnTarget(c); got != tc.want {
			t.Errorf("return target of %s: %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := charge.ReturnTarget(charge.Charge{}); got != "" {
		t.Fatalf("no return_url: %q", got)
	}
}

func TestValidPublicID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{charge.NewPublicID(), true},
		{"ch_" + strings.Repeat("a", 26), true},
		{"ch_" + strings.Repeat("a", 25), false},
		{"ch_" + strings.Repeat("A", 26), false},
		{"ch_" + strings.Repeat("1", 26), false},
		{"re_" + strings.Repeat("a", 26), false},
		{"/evil.example/" + strings.Repeat("a", 16), false},
		{"", false},
	} {
		if got := charge.ValidPublicID(tc.id); got != tc.want {
			t.Errorf("ValidPublicID(%q) = %v", tc.id, got)
		}
	}
}

// What a merchant types: Persian spelled with its half-space (ZWNJ)
// between letters passes; invisible or control characters do not.
func TestCheckTexts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		check    func(string) error
		want     error
	}{
		{"Persian name with a half-space", "کتاب\u200cفروشی", charge.CheckDisplayName, nil},
		{"name with a bidi override", "\u202eshop", charge.CheckDisplayName, charge.ErrBadName},
		{"empty name", "", charge.CheckDisplayName, charge.ErrBadName},
		{"description with a half-space", "خرید کتاب\u200cها\nدو خط", charge.CheckDescription, nil},
		{"description with a zero-width space", "a\u200bb", charge.CheckDescription, charge.ErrBadDescription},
		{"order id", "ORD-1403-۱۲", charge.CheckOrderID, nil},
		{"order id with a line break", "ORD\n1", charge.CheckOrderID, charge.ErrBadOrderID},
		{"order id with a space inside", "ORD 1", charge.CheckOrderID, nil},
		{"order id with a space after", "ORD-1 ", charge.CheckOrderID, charge.ErrBadOrderID},
		{"order id with a space before", " ORD-1", charge.CheckOrderID, charge.ErrBadOrderID},
		{"order id of spaces", "   ", charge.CheckOrderID, charge.ErrBadOrderID},
		{"order id with a no-break space after", "ORD-1\u00a0", charge.CheckOrderID, charge.ErrBadOrderID},
	} {
		if err := tc.check(tc.in); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
