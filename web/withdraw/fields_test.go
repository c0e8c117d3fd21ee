package withdraw_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/bankaccount"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/sandbank/payouts"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// invalid is the ids of the fields of ids marked invalid; each must be
// described by the error (errorID) and be the one focused.
func invalid(t *testing.T, doc *apptest.Doc, errorID string, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		e := doc.ByID(id)
		if e == nil || e.Attr("aria-invalid") != "true" {
			if e != nil && (e.Has("autofocus") || strings.Contains(e.Attr("aria-describedby"), errorID)) {
				t.Errorf("%s: focused or described by the error, yet not marked invalid", id)
			}
			continue
		}
		if !strings.Contains(" "+e.Attr("aria-describedby")+" ", " "+errorID+" ") || !e.Has("autofocus") {
			t.Errorf("%s: marked invalid, but not described by the error or not focused", id)
		}
		out = append(out, id)
	}
	return out
}

// TestBankAccountRefusalsMarkTheirField: each refusal of the bank
// account form marks the field it is about (aria-invalid, described by
// the error, focused), and none for one about the whole form or the
// account (the address not confirmed, a mismatch, too many checks, a
// rejected Sheba, too many accounts), whose error is an alert; every
// refusal keeps what was typed.
func TestBankAccountRefusalsMarkTheirField(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	// notOwned has the built-in bank say a Sheba is not the national
	// code's (a mismatch; its inquiry counts all the same).
	notOwned := func(iban string) {
		body := strings.NewReader(`{"iban":"` + iban + `","national_code":"` + nationalCode + `","owned":false}`)
		resp, err := http.Post(app.URL+routes.Sandbank+payouts.OwnersPath, "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("owners: %d", resp.StatusCode)
		}
	}
	mismatch := withdrawaltest.Sheba("056", 7)
	notOwned(mismatch)
	rejected := withdrawaltest.Sheba("012", 3)
	boss, err := app.Server.Auth.SignUp(context.Background(), "boss@example.com", "correct horse battery", "admin", "en")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name        string
		unconfirmed bool
		setup       func(c *apptest.Client, uid int64)
		iban, nc    string
		status      int
		text        string
		marked      string // the field's id, "" for none
	}{
		{"a bad Sheba", false, nil, "IR12", nationalCode, http.StatusUnprocessableEntity, "۲۴ رقم", "iban"},
		{"a bad national code", false, nil, sheba, "123", http.StatusUnprocessableEntity, "۱۰ رقم", "national-code"},
		{"the address not confirmed", true, nil, sheba, nationalCode, http.StatusForbidden, "ایمیل", ""},
		{"a mismatch", false, nil, mismatch, nationalCode, http.StatusUnprocessableEntity, "به نام این کد ملی نیست", ""},
		{"too many checks today", false, func(c *apptest.Client, _ int64) {
			// A day's inquiries used by mismatches, which store nothing.
			for n := range bankaccount.InquiriesPerDay {
				other := withdrawaltest.Sheba("056", 100+n)
				notOwned(other)
				if r := addAccount(c, other, nationalCode); r.Status != http.StatusUnprocessableEntity {
					t.Fatalf("mismatch %d: %d", n, r.Status)
				}
			}
		}, sheba, nationalCode, http.StatusTooManyRequests, "فردا", ""},
		// With an account, the national code is on file: not asked.
		{"a rejected Sheba", false, func(_ *apptest.Client, uid int64) {
			id := withdrawaltest.PendingAccount(t, db, uid, rejected)
			if _, err := app.Server.BankAccounts.Review(context.Background(), boss.ID, id, false, "not theirs"); err != nil {
				t.Fatal(err)
			}
		}, rejected, "", http.StatusUnprocessableEntity, "رد کرده", ""},
		{"too many accounts", false, func(_ *apptest.Client, uid int64) {
			for n := range bankaccount.MaxPerUser {
				withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("012", 100+n))
			}
		}, sheba, "", http.StatusUnprocessableEntity, "بیش از این", ""},
	} {
		c := app.NewClient(t)
		email := fmt.Sprintf("payee%d@example.com", i)
		if tc.unconfirmed {
			c.SignUpUnconfirmed(email)
		} else {
			c.SignUp(email)
		}
		if tc.setup != nil {
			tc.setup(c, authtest.UserID(t, db, email))
		}
		r := addAccount(c, tc.iban, tc.nc)
		doc := apptest.Parse(r.Body)
		e := doc.TestID("bank-account-error")
		if r.Status != tc.status || e == nil || !strings.Contains(e.Text(), tc.text) || e.Attr("role") != "alert" || e.Attr("id") != "bank-account-error" {
			t.Errorf("%s: %d, not its error alert", tc.name, r.Status)
			continue
		}
		var want []string
		if tc.marked != "" {
			want = []string{tc.marked}
		}
		if got := invalid(t, doc, "bank-account-error", "iban", "national-code"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: fields marked invalid %v, want %v", tc.name, got, want)
		}
		if doc.Input("iban") != tc.iban || doc.Input("national_code") != tc.nc {
			t.Errorf("%s: the form lost what was typed: %q %q", tc.name, doc.Input("iban"), doc.Input("national_code"))
		}
	}
}

// TestWithdrawRefusalsMarkTheirField: a refusal of the withdrawal form
// marks the amount or the accounts when it is about them, and no field
// when it is about the whole form (an expired form), whose error is an
// alert; every refusal keeps the amount typed and the account chosen.
func TestWithdrawRefusalsMarkTheirField(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	c := app.NewClient(t)
	c.SignUp("payee@example.com")
	uid := authtest.UserID(t, db, "payee@example.com")
	withdrawaltest.FundUser(t, db, uid, 1_000_000)
	addAccount(c, sheba, nationalCode)
	pending := withdrawaltest.PendingAccount(t, db, uid, withdrawaltest.Sheba("012", 5))
	account := apptest.Parse(c.Get(routes.Withdraw).Body).Inputs("bank_account")[0].Attr("value")
	radio := "bank-account-" + account
	for _, tc := range []struct {
		name, account, amount, token string
		status                       int
		marked                       []string // the fields' data-testid
	}{
		{"below the minimum", account, "5000", "", http.StatusUnprocessableEntity, []string{"amount"}},
		{"more than the wallet", account, "200000", "", http.StatusUnprocessableEntity, []string{"amount"}},
		{"an account waiting for review", itoa(pending), "20000", "", http.StatusUnprocessableEntity, []string{radio}},
		{"an expired form", account, "20000", "forged", http.StatusBadRequest, nil},
	} {
		form := apptest.Parse(c.Get(routes.Withdraw).Body).Form(routes.Withdraw).Hidden()
		form.Set("bank_account", tc.account)
		form.Set("amount", tc.amount)
		if tc.token != "" {
			form.Set("token", tc.token)
		}
		r := c.Post(routes.Withdraw, form)
		doc := apptest.Parse(r.Body)
		e := doc.TestID("withdraw-error")
		if r.Status != tc.status || e == nil || e.Attr("role") != "alert" || e.Attr("id") != "withdraw-error" {
			t.Errorf("%s: %d, no error alert", tc.name, r.Status)
			continue
		}
		var got []string
		for _, id := range []string{"amount", radio} {
			f := doc.TestID(id)
			if f == nil {
				t.Fatalf("%s: no field %s", tc.name, id)
			}
			if f.Attr("aria-invalid") == "true" {
				if !strings.Contains(" "+f.Attr("aria-describedby")+" ", " withdraw-error ") {
					t.Errorf("%s: %s marked invalid, not described by the error", tc.name, id)
				}
				got = append(got, id)
			} else if f.Has("autofocus") || strings.Contains(f.Attr("aria-describedby"), "withdraw-error") {
				t.Errorf("%s: %s focused or described by the error, yet not marked invalid", tc.name, id)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.marked) {
			t.Errorf("%s: fields marked invalid %v, want %v", tc.name, got, tc.marked)
		}
		if doc.Input("amount") != tc.amount || (tc.account == account && !doc.TestID(radio).Has("checked")) {
			t.Errorf("%s: the form lost what was typed: amount %q", tc.name, doc.Input("amount"))
		}
	}
}
