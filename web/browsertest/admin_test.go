package browsertest

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/transfer"
)

// spending is what the admin's pages of issue 33 show: a merchant with a
// charge a payer paid, and a transfer from that payer to a friend.
type spending struct {
	merchant         int64  // the merchant's user id
	charge, transfer string // public ids
}

// spend makes the fixture's spending once (none of it touches the
// fixture's user, whose pages other tests read).
func (f *fixture) spend(t *testing.T) spending {
	t.Helper()
	if f.spent != nil {
		return *f.spent
	}
	ctx := context.Background()
	ids := map[string]int64{}
	for _, email := range []string{"shop@example.com", "payer@example.com", "friend@example.com"} {
		u, err := f.App.Server.Auth.SignUp(ctx, email, password, auth.RoleUser, "fa")
		if err != nil {
			t.Fatal(err)
		}
		ids[email] = u.ID
	}
	w, err := f.App.Server.Wallets.ForUser(ctx, ids["payer@example.com"])
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Fund(t, f.App.DB, w.AccountID, 1_000_000, "payer@example.com")
	sp := spending{merchant: ids["shop@example.com"]}
	if _, _, err := f.App.Server.Charges.MakeMerchant(ctx, sp.merchant, "Book Shop", nil); err != nil {
		t.Fatal(err)
	}
	ch, err := f.App.Server.Charges.Create(ctx, charge.CreateRequest{MerchantUserID: sp.merchant, FormToken: formtoken.New(),
		AmountRials: 150_000, Description: "Books", OrderID: "A-1", ReturnURL: "https://shop.example/back", Capture: charge.CaptureAutomatic})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.App.Server.Charges.Confirm(ctx, ids["payer@example.com"], ch.Charge.PublicID); err != nil {
		t.Fatal(err)
	}
	tr, err := f.App.Server.Transfers.Send(ctx, transfer.Request{SenderUserID: ids["payer@example.com"], FormToken: formtoken.New(),
		ToEmail: "friend@example.com", AmountRials: 50_000, Note: "کتاب"})
	if err != nil {
		t.Fatal(err)
	}
	sp.charge, sp.transfer = ch.Charge.PublicID, tr.Transfer.PublicID
	f.spent = &sp
	return sp
}

// adminPageList are the admin pages as the browser tests visit
// them: a name, the path and a hook to wait for.
func adminPageList(t *testing.T, f *fixture) []struct{ name, path, hook string } {
	t.Helper()
	userPath := routes.AdminUser(f.Credited.UserID)
	sp := f.spend(t)
	return []struct{ name, path, hook string }{
		{"admin dashboard", routes.Admin, "admin-payments"},
		{"admin payment (credited)", routes.AdminTopUp(f.Credited.PublicID), "timeline"},
		{"admin payment (pending)", routes.AdminTopUp(f.Pending.PublicID), "admin-recheck"},
		{"admin payment (failed)", routes.AdminTopUp(f.Failed.PublicID), "timeline"},
		{"admin users", routes.AdminUsers, "user-row"},
		{"admin users (search)", routes.AdminUsers + "?q=sara", "user-row"},
		{"admin user (with the make-merchant form)", userPath, "form-merchant"},
		{"admin user (merchant)", routes.AdminUser(sp.merchant), "merchant-name"},
		{"admin charges", routes.AdminCharges, "admin-charge-row"},
		{"admin charge", routes.AdminCharge(sp.charge), "admin-charge"},
		{"admin transfers", routes.AdminTransfers, "admin-transfer-row"},
		{"admin transfer", routes.AdminTransfer(sp.transfer), "admin-transfer"},
		{"admin audit", routes.AdminAudit, "audit-filter"},
		{"admin payments", routes.AdminTopUps, "payment-row"},
		{"admin payments (filtered)", routes.AdminTopUps + "?status=credited&status=failed&q=" + url.QueryEscape("sara") + "&min=1000", "payment-row"},
		{"admin payments (bad filter)", routes.AdminTopUps + "?from=yesterday", "filter-error"},
	}
}

// TestAdminConsoleAccessibility runs axe-core on every page of the admin
// console, in both languages, and checks that the list's rows carry their
// hooks.
func TestAdminConsoleAccessibility(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	for _, lang := range []string{"fa", "en"} {
		t.Run(lang, func(t *testing.T) {
			var b *Tab
			for i, p := range adminPageList(t, f) {
				// A fresh tab every few pages: each tab has one test's time.
				if i%2 == 0 {
					if b != nil {
						b.CheckNoProblems()
					}
					b = f.Tab(t, lang, f.Admin)
				}
				b.Go(p.path)
				b.Wait(p.hook)
				if l, _ := b.LangDir(); l != lang {
					t.Errorf("%s: page in %q", p.name, l)
				}
				b.Audit(p.name)
			}
			b.CheckNoProblems()
		})
	}
}

// TestRefundToCardInABrowser: an admin gives part of a credited top-up
// back to the card from its page, as a person would: a wrong second
// factor is refused on the page (the error announced, the field marked),
// a fresh code refunds it; axe-core finds nothing on either state.
func TestRefundToCardInABrowser(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	b := f.Tab(t, "fa", f.Admin)
	page := routes.AdminTopUp(f.Credited.PublicID)
	b.Go(page)
	b.Wait("card-refund-form")
	if got := b.Attr(tid("card-refund-amount"), "value"); got != "۵۰۰۰۰" {
		t.Fatalf("the amount field holds %q, want the most that may go back (50000 tomans, in Persian digits)", got)
	}
	fill := func(code string) {
		b.Type("#card-refund-amount", "۱۰۰۰۰")
		//lint:ignore ST1018 Persian is written with the zero-width non-joiner (U+200C) inside words; escaped it would be unreadable
		b.Type("#card-refund-note", "درخواست پرداخت‌کننده")
		b.Type("#card-refund-code", code)
		b.Click("card-refund-submit")
	}
	fill("000000")
	b.Wait("card-refund-error")
	if inv := b.Attr("#card-refund-amount", "aria-invalid"); inv != "true" {
		t.Errorf("after a refused submit the amount is not marked invalid (%q)", inv)
	}
	b.Audit("refund to card, refused")
	fill(apptest.AdminTOTPCodeAt(t, f.App.DB, f.Admin, f.now))
	b.Wait("admin-notice")
	if st := b.Attr(tid("card-refund-row"), "data-status"); st != "refunded" {
		t.Fatalf("card refund %s after the submit", st)
	}
	if left := b.Attr(tid("card-refund-figures"), "data-left-rials"); left != "400000" {
		t.Fatalf("left to refund %s, want 400000", left)
	}
	b.Audit("refund to card, refunded")
	b.CheckNoProblems()
	if bp, _ := f.Bank.Payment(f.Credited.AuthorityString()); bp.RefundedAmount != 100_000 || len(bp.Refunds) != 1 {
		t.Fatalf("the bank refunded %d in %d refunds, want 100,000 rials once", bp.RefundedAmount, len(bp.Refunds))
	}
}

// TestMakeMerchantInABrowser: an admin makes a user a merchant from the
// user's page, as a person would: a wrong second factor is refused on the
// page with its sentence, the name typed kept and nobody made a merchant;
// a fresh code makes them one, and the page then shows the merchant's
// name and balance; axe-core finds nothing on either state.
func TestMakeMerchantInABrowser(t *testing.T) {
	axeSource(t)
	f := newFixture(t)
	ctx := context.Background()
	u, err := f.App.Server.Auth.SignUp(ctx, "newshop@example.com", password, auth.RoleUser, "en")
	if err != nil {
		t.Fatal(err)
	}
	b := f.Tab(t, "en", f.Admin)
	b.Go(routes.AdminUser(u.ID))
	b.Wait("form-merchant")
	b.Audit("make merchant form")
	fill := func(code string) {
		b.Type(tid("merchant-display-name"), "Book Shop")
		b.Type(tid("code-merchant"), code)
		b.Click("merchant-submit")
	}
	fill("000000")
	b.Wait("admin-error")
	if got := b.Text(tid("admin-error")); got != "That code is not right, or was used already. Nothing was changed." {
		t.Errorf("a wrong code: %q", got)
	}
	if got := b.Attr(tid("merchant-display-name"), "value"); got != "Book Shop" {
		t.Errorf("the name typed is lost: %q", got)
	}
	if got := b.Attr(tid("code-merchant"), "aria-invalid"); got != "true" {
		t.Errorf("the refused code's field is not marked invalid: aria-invalid %q", got)
	}
	if _, err := f.App.Server.Charges.Merchant(ctx, u.ID); !errors.Is(err, charge.ErrNotMerchant) {
		t.Fatalf("a wrong code made a merchant: %v", err)
	}
	b.Audit("make merchant, refused")
	fill(apptest.AdminTOTPCodeAt(t, f.App.DB, f.Admin, f.now))
	b.Wait("admin-notice")
	b.Wait("merchant-name")
	if got, bal := b.Text(tid("merchant-name")), b.Attr(tid("merchant-balance"), "data-rials"); got != "Book Shop" || bal != "0" {
		t.Errorf("merchant's name shown %q, balance %q", got, bal)
	}
	if m, err := f.App.Server.Charges.Merchant(ctx, u.ID); err != nil || m.DisplayName != "Book Shop" {
		t.Fatalf("merchant %+v (%v)", m, err)
	}
	b.Audit("make merchant, made")
	b.CheckNoProblems()
}
