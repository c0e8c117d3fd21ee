package withdrawal

import (
	"time"

	"github.com/kifpool/kifpool/internal/iban"
)

// Bank is a bank as the API and the webhooks name it.
type Bank struct {
	Code   string `json:"code"`
	NameFA string `json:"name_fa"`
	NameEN string `json:"name_en"`
}

// BankOf is the bank of a Sheba's bank code.
func BankOf(code string) Bank {
	b, _ := iban.BankByCode(code)
	return Bank{Code: code, NameFA: b.FA, NameEN: b.EN}
}

// View is a withdrawal as its owner's partners see it: what
// GET /api/v1/withdrawals/{id} answers, and the "withdrawal" of a
// withdrawal's webhook.
type View struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	AmountRials    int64      `json:"amount_rials"`
	BankAccountID  int64      `json:"bank_account_id"`
	Bank           Bank       `json:"bank"`
	IBANLast4      string     `json:"iban_last4"`
	Rail           string     `json:"rail"`
	ReviewRequired bool       `json:"review_required"`
	ProviderRef    *string    `json:"provider_ref"`
	CreatedAt      time.Time  `json:"created_at"`
	PaidAt         *time.Time `json:"paid_at"`
	ReturnedAt     *time.Time `json:"returned_at"`
	ResolvedAt     *time.Time `json:"resolved_at"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ViewOf is w as partners see it.
func ViewOf(w Withdrawal) View {
	v := View{ID: w.PublicID, Status: string(w.Status), AmountRials: w.AmountRials, BankAccountID: w.BankAccountID,
		Bank: BankOf(w.BankCode), IBANLast4: w.Last4(), Rail: w.Rail, ReviewRequired: w.ReviewRequired,
		CreatedAt: w.CreatedAt.UTC(), PaidAt: utc(w.PaidAt), ReturnedAt: utc(w.ReturnedAt), ResolvedAt: utc(w.ResolvedAt)}
	if w.ProviderRef != "" {
		ref := w.ProviderRef
		v.ProviderRef = &ref
	}
	return v
}

// Told reports whether the owner is told of a move to s, by webhook and
// by mail: paid, returned, and failed (a rejection by an admin is told
// as failed: the money did not go out and is back in the wallet). A
// cancel is the owner's own act, and the other statuses are on the way.
func Told(s Status) bool {
	return s == StatusPaid || s == StatusFailed || s == StatusRejected || s == StatusReturned
}
