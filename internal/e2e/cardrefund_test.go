package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/cardrefund"
	crstore "github.com/kifpool/kifpool/internal/cardrefund/sqlstore"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/testwait"
	"github.com/kifpool/kifpool/internal/topup"
)

// TestCardRefundCrashPoints is issue 30 §4 for a card refund, on SQLite
// and PostgreSQL: an admin refunds a credited top-up to the card through
// the real serve, which SIGKILLs itself after the hold (the card refund
// and the wallet's hold committed, the bank not asked) and after the
// bank accepted (Zarinpal's AddRefund made, SEP's sale reversed, nothing
// of the answer recorded), at each of the two gateways. What the crash
// left is checked (held and nothing at the bank; submitted and the
// refund at the bank), then serve restarts unarmed and its worker
// finishes each: in the end the bank gave back to each card exactly what
// we call refunded, once, the wallet lost it once, and every rule of
// kifpool check holds.
func TestCardRefundCrashPoints(t *testing.T) {
	eachDialect(t, cardRefundPoints)
}

// cardRefundCase is one crash point at one gateway.
type cardRefundCase struct {
	gw     string
	point  string
	tomans int64 // refunded (a reverse: the whole top-up)
}

func cardRefundPoints(t *testing.T, d store.Dialect) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rig := newCrashRig(t, d)
	payer := signedUp(ctx, t, rig.appURL, "card-refund-payer@e2e.example")
	admin, codes := signedInAdmin(ctx, t, rig, "card-refund-admin@e2e.example")
	refunds, err := crstore.New(ctx, rig.db, ledger.New(rig.db))
	if err != nil {
		t.Fatal(err)
	}
	cases := []cardRefundCase{
		{"zarinpal", testhook.AfterCardRefundHold, 20_000},
		{"zarinpal", testhook.BeforeCardRefundCall, 20_000},
		{"zarinpal", testhook.AfterCardRefundAccepted, 30_000},
		{"sep", testhook.AfterCardRefundHold, 40_000},
		{"sep", testhook.AfterCardRefundAccepted, 40_000},
	}
	for i, c := range cases {
		tu := topUpCredited(ctx, t, rig, payer, c.gw, map[string]int64{"zarinpal": 50_000, "sep": 40_000}[c.gw])
		walletID := tu.WalletID
		before := ledgertest.Balance(t, rig.db, walletID)
		// Armed, the admin refunds it; serve dies under the request.
		rig.srv.kill()
		rig.srv.setEnv(testhook.EnvCrashAt, c.point)
		if err := rig.srv.start(); err != nil {
			t.Fatalf("restart armed at %s: %v", c.point, err)
		}
		kills := rig.srv.logCount("testhook: SIGKILL at " + c.point)
		page := routes.AdminTopUp(tu.PublicID)
		r, err := admin.do(ctx, http.MethodGet, page, nil)
		csrf := apptest.Parse(r.body).Form(routes.AdminTopUpCardRefund(tu.PublicID)).Hidden().Get("_csrf")
		if err != nil || r.status != http.StatusOK || csrf == "" {
			t.Fatalf("%s at %s: the top-up's page: %d %v", c.point, c.gw, r.status, err)
		}
		_, _ = admin.do(ctx, http.MethodPost, routes.AdminTopUpCardRefund(tu.PublicID), url.Values{"_csrf": {csrf},
			"amount": {fmt.Sprint(c.tomans)}, "note": {"e2e: the payer asked"}, "code": {codes[i]}})
		select {
		case <-rig.srv.exited():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s at %s: serve never reached the point", c.point, c.gw)
		}
		if n := rig.srv.logCount("testhook: SIGKILL at " + c.point); n != kills+1 {
			t.Fatalf("%s at %s: serve exited, but not at the point", c.point, c.gw)
		}
		// What the crash left.
		list, err := refunds.OfTopUp(ctx, tu.ID)
		if err != nil || len(list) != 1 {
			t.Fatalf("%s at %s: %d card refunds: %v", c.point, c.gw, len(list), err)
		}
		cr, rials := list[0], c.tomans*10
		wantLeft, wantAtBank, wantEnd := cardrefund.StatusHeld, int64(0), cardrefund.StatusRefunded
		switch c.point {
		case testhook.BeforeCardRefundCall:
			// Never sent: the bank's record lacks it, believed only
			// CARD_REFUND_NOT_DONE_AFTER later; then it fails.
			wantLeft, wantEnd = cardrefund.StatusSubmitted, cardrefund.StatusFailed
		case testhook.AfterCardRefundAccepted:
			wantLeft, wantAtBank = cardrefund.StatusSubmitted, rials
		}
		if cr.Status != wantLeft || cr.AmountRials != rials || ledgertest.Held(t, rig.db, walletID) != rials {
			t.Fatalf("%s at %s: after the crash the card refund is %s of %d, %d held; want %s of %d held",
				c.point, c.gw, cr.Status, cr.AmountRials, ledgertest.Held(t, rig.db, walletID), wantLeft, rials)
		}
		if got := refundedAtBank(t, rig.bank, *tu.Authority); got != wantAtBank {
			t.Fatalf("%s at %s: after the crash the bank gave back %d, want %d", c.point, c.gw, got, wantAtBank)
		}
		// Restarted unarmed: the worker finishes it.
		rig.srv.setEnv(testhook.EnvCrashAt, "")
		if err := rig.srv.start(); err != nil {
			t.Fatalf("restart: %v", err)
		}
		err = testwait.UntilContext(ctx, 60*time.Second, "the card refund to end", func() bool {
			got, err := refunds.Get(ctx, cr.ID)
			return err == nil && got.Status == wantEnd
		})
		if err != nil {
			got, _ := refunds.Get(ctx, cr.ID)
			t.Fatalf("%s at %s: after the restart the card refund is %s (%s)", c.point, c.gw, got.Status, got.StatusReason)
		}
		if wantEnd == cardrefund.StatusFailed {
			rials = 0 // nothing went back, and the hold is released
		}
		if got := refundedAtBank(t, rig.bank, *tu.Authority); got != rials {
			t.Fatalf("%s at %s: the bank gave back %d, want %d once", c.point, c.gw, got, rials)
		}
		if after := ledgertest.Balance(t, rig.db, walletID); after != before-rials || ledgertest.Held(t, rig.db, walletID) != 0 {
			t.Fatalf("%s at %s: the wallet went from %d to %d (held %d), want %d less", c.point, c.gw, before, after,
				ledgertest.Held(t, rig.db, walletID), rials)
		}
	}
	// Every top-up: the bank's refunds are our refunded card refunds.
	checkCardRefunds(ctx, t, rig, refunds, nil)
	rep, err := integrity.Check(ctx, rig.db, integrity.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("kifpool check: %v %v", err, rep.Violations())
	}
}

// refundedAtBank is what the bank gave back to the card of authority: its
// refunds, or the whole payment when the sale was reversed after verify.
func refundedAtBank(t *testing.T, bank *bankClient, authority string) int64 {
	t.Helper()
	bp := bank.topUps(t)[authority]
	if bp.State == sandbank.StateReversed && !bp.VerifiedAt.IsZero() {
		return bp.Amount
	}
	return bp.RefundedAmount
}

// topUpCredited tops the payer's wallet up at gw and comes back from the
// bank: credited.
func topUpCredited(ctx context.Context, t *testing.T, rig *crashRig, payer *browser, gw string, tomans int64) topup.TopUp {
	t.Helper()
	sent, err := payer.topUpAt(ctx, tomans, gw)
	if err != nil {
		t.Fatalf("top-up at %s: %v", gw, err)
	}
	_, authority, ok := toBank(rig.bankURL, sent)
	if !ok {
		t.Fatalf("top-up at %s: answered %d %q", gw, sent.status, sent.location)
	}
	cb, status, err := rig.bank.finishAt(ctx, gw, authority, "pay")
	if err != nil || status != http.StatusOK {
		t.Fatalf("pay at %s: %d %v", gw, status, err)
	}
	if _, err := payer.back(ctx, cb); err != nil {
		t.Fatalf("back from %s: %v", gw, err)
	}
	p, ok := waitStatus(ctx, rig.db, authority, topup.StatusCredited, 30*time.Second)
	if !ok {
		t.Fatalf("top-up at %s: %s (%s), not credited", gw, p.Status, p.StatusReason)
	}
	return p
}

// signedInAdmin makes an admin, signs a browser in as them and passes the
// second factor as a person does (the operator's enrolment code, then the
// authenticator's code); it returns the browser and the recovery codes
// the page showed (each a fresh second factor, once).
func signedInAdmin(ctx context.Context, t *testing.T, rig *crashRig, email string) (*browser, []string) {
	t.Helper()
	const pw = "e2e admin: a long passphrase 9"
	if _, err := auth.NewService(rig.db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, pw, auth.RoleAdmin, "en"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(rig.appURL)
	r, err := b.do(ctx, http.MethodGet, routes.SignIn, nil)
	if err != nil {
		t.Fatal(err)
	}
	csrf := apptest.Parse(r.body).Form(routes.SignIn).Hidden().Get("_csrf")
	if r, err = b.do(ctx, http.MethodPost, routes.SignIn, url.Values{"_csrf": {csrf}, "email": {email}, "password": {pw}}); err != nil || r.status != http.StatusSeeOther {
		t.Fatalf("sign in %s: %d %v", email, r.status, err)
	}
	r, err = b.do(ctx, http.MethodGet, routes.AdminTwoFactor, nil)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %v", routes.AdminTwoFactor, r.status, err)
	}
	form := url.Values{"_csrf": {apptest.Input(r.body, "_csrf")}, "enrol_code": {apptest.EnrolmentCode(t, rig.db, email)}}
	if r, err = b.do(ctx, http.MethodPost, routes.AdminTwoFactor, form); err != nil || r.status != http.StatusOK {
		t.Fatalf("enrolment code: %d %v", r.status, err)
	}
	form.Set("code", apptest.AdminTOTPCode(t, rig.db, email))
	if r, err = b.do(ctx, http.MethodPost, routes.AdminTwoFactor, form); err != nil || r.status != http.StatusOK {
		t.Fatalf("first code: %d %v", r.status, err)
	}
	codes := apptest.RecoveryCodes(r.body)
	if len(codes) < 4 {
		t.Fatalf("%d recovery codes shown", len(codes))
	}
	return b, codes
}
