package views

import (
	"time"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/iban"
)

// BankName is a bank's name, by its Sheba code, in the page's language
// (the code itself for one the table does not know).
func (p Page) BankName(code string) string {
	b, ok := iban.BankByCode(code)
	if !ok {
		return code
	}
	return b.Name(string(p.Lang))
}

// TehranClock is a time's hour and minute in Tehran, in the page's
// digits.
func (p Page) TehranClock(t time.Time) string {
	return i18n.Digits(p.Lang, t.In(i18n.Tehran()).Format("15:04"))
}

// TehranDay names t's day in Tehran against the page's now: today,
// tomorrow, or its date.
func (p Page) TehranDay(t time.Time) string {
	day := func(x time.Time) string { return x.In(i18n.Tehran()).Format("2006-01-02") }
	switch day(t) {
	case day(p.Now):
		return p.T("withdraw.today")
	case day(p.Now.Add(24 * time.Hour)):
		return p.T("withdraw.tomorrow")
	}
	return i18n.Date(p.Lang, t)
}

// BankAccountRow is one bank account of the person's.
type BankAccountRow struct {
	ID       int64
	BankCode string
	Grouped  string // the Sheba in groups of four
	Last4    string
	Status   string // verified, pending_review, rejected
}

// BankAccountsView is the bank accounts page.
type BankAccountsView struct {
	Accounts []BankAccountRow
	// NationalCode is the one on file, masked ("" when none yet).
	NationalCode string
	// IBAN and NationalCodeTyped are what was typed (shown again with
	// an error).
	IBAN, NationalCodeTyped string
	ErrorKey                string
	// ErrorField is the field at fault, marked invalid, described by
	// the error and focused: "sheba" or "national_code"; "" for an
	// error about the whole form or the account (the address not
	// confirmed, a mismatch, a rejected Sheba, too many accounts or
	// checks), which marks no field.
	ErrorField string
	Notice     string
}

// WithdrawForm is the withdrawal form.
type WithdrawForm struct {
	Token    string
	Accounts []BankAccountRow // verified ones: the radio group bank_account
	Account  int64            // the one selected
	Amount   string           // as typed
	// AvailableRials is what the wallet may spend; MinRials the least a
	// withdrawal is; DailyMaxRials and LeftTodayRials the day's limit
	// (0: none).
	AvailableRials, MinRials      int64
	DailyMaxRials, LeftTodayRials int64
	ReviewAboveRials              int64
	ErrorKey                      string
	ErrorArgs                     []any
	// ErrorField is the field at fault, marked invalid, described by
	// the error (and the amount focused): "amount" or "bank_account";
	// "" for an error about the whole form (an expired form, no
	// provider), which marks no field.
	ErrorField string
	// Off: withdrawals are not offered (PAYOUTS=none).
	Off bool
}

// WithdrawConfirmView is the page that confirms a withdrawal: where it
// goes, on which rail, and when it should arrive.
type WithdrawConfirmView struct {
	Token       string
	Account     BankAccountRow
	AmountRials int64
	Amount      string // as typed, for "change"
	Rail        string
	// Cutoff is the Paya cycle it goes with (Satna: when it is taken),
	// Arrival when its money usually reaches the account.
	Cutoff, Arrival  time.Time
	Review           bool // it will wait for an admin
	ReviewAboveRials int64
	// AmountWords is the amount in words (tomans), AfterRials the
	// spendable balance once it is held, as the transfer's confirmation.
	AmountWords string
	AfterRials  int64
}

// WithdrawalView is a withdrawal's receipt.
type WithdrawalView struct {
	PublicID    string
	Status      string
	Review      bool // waiting for an admin's approval
	AmountRials int64
	BankCode    string
	Grouped     string
	Last4       string
	Rail        string
	ProviderRef string
	CreatedAt   time.Time
	ResolvedAt  *time.Time
	Cancellable bool
	Notice      string
	ErrorKey    string
}

// WithdrawalStatusClass is a withdrawal's status as the status colours
// say it.
func WithdrawalStatusClass(status string) string {
	switch status {
	case "paid":
		return "ok"
	case "failed", "rejected", "cancelled", "returned":
		return "failed"
	case "needs_review":
		return "review"
	}
	return "pending"
}

// ExplainKey is the sentence that says where a withdrawal stands.
func (v WithdrawalView) ExplainKey() string {
	if v.Status == "requested" && v.Review {
		return "withdrawal.explain.review"
	}
	return "withdrawal.explain." + v.Status
}
