package admin

import "time"

// WithdrawalsView is the admin's cash-out queue: withdrawals waiting for
// approval, those under review, bank accounts waiting, the payout
// reconciliation's reports and the latest withdrawals.
type WithdrawalsView struct {
	Notice    string // message key of the last action's result
	ErrorKey  string
	ErrorArgs []any
	// Review: requested, above the review amount; UnderReview: needs_review
	// (each the QueueShown oldest; More…: others wait beyond them).
	Review, UnderReview, Recent []WithdrawalRow
	MoreReview, MoreUnderReview bool
	Accounts                    []BankAccountReviewRow
	Reports                     []PayoutReportRow
	// Off: withdrawals are not offered (PAYOUTS=none).
	Off bool
	// Refused is the form whose submission was just refused, if any.
	Refused Refusal
}

// QueueShown is how many of each queue the page shows, oldest first.
const QueueShown = 100

// Refusal is a review form's refused submission: Form is its id on the
// page ("approve-" and the withdrawal's public id, …), Field the field
// at fault ("code", "note" or "" for neither), Note the note it carried
// (typed again into the form).
type Refusal struct {
	Form, Field, Note string
}

// ReviewForm is the id on the queue's page of the review form of action
// ("approve", "reject", "fail"; "account-approve", "account-reject")
// for subject (a withdrawal's public id, a bank account's id): the
// handler names a refused form by it.
func ReviewForm(action, subject string) string { return action + "-" + subject }

// WithdrawalRow is one withdrawal in the admin's lists.
type WithdrawalRow struct {
	PublicID    string
	UserID      int64
	AmountRials int64
	BankCode    string
	Last4       string
	Provider    string
	Status      string
	Reason      string
	CreatedAt   time.Time
	// ProviderState and ProviderRef are the provider's last word and
	// its reference ("" none); ProviderPaid: under review with the
	// provider's word that it transferred it (closed as paid only).
	ProviderState, ProviderRef string
	ProviderPaid               bool
}

// BankAccountReviewRow is a bank account waiting for review.
type BankAccountReviewRow struct {
	ID           int64
	UserID       int64
	Email        string
	NationalCode string
	BankCode     string
	Grouped      string
	CreatedAt    time.Time
}

// PayoutReportRow is one payout reconciliation report.
type PayoutReportRow struct {
	ID                                                int64
	Provider                                          string
	FinishedAt                                        time.Time
	Checked, Paid, Returned, InFlight, Settled, Diffs int
	Error                                             string
	Items                                             []PayoutDiffRow
}

// PayoutDiffRow is one difference of a report.
type PayoutDiffRow struct {
	Kind        string
	PublicID    string
	Ours        string
	Theirs      string
	AmountRials int64
}

// WithdrawalDetailView is one withdrawal's admin page: its figures, its
// status changes, its ledger transactions, and the admin's actions its
// status allows (the queue's forms, through the same use cases).
type WithdrawalDetailView struct {
	Withdrawal WithdrawalRow
	Email      string // the owner's address
	// MaskedSheba is the account with all but its bank code and last
	// four digits hidden.
	MaskedSheba    string
	Rail           string
	ReviewRequired bool
	UpdatedAt      time.Time
	HoldID         int64 // the ledger's hold on the wallet
	Events         []WithdrawalEventRow
	Transactions   []LedgerTransactionRow
	// CanReview: waiting for an admin's approval (approve, reject);
	// CanFail: under review (close as failed; after the provider's
	// "transferred", only once it said "failed" since); CanPay: under
	// review with the provider's word that it transferred it (close as
	// paid).
	CanReview, CanFail, CanPay bool
	// FailWaitsForWord: under review, the provider said it transferred it
	// and now does not know it: close as failed is not offered (it needs
	// the provider's "failed"); the page says what to do instead.
	FailWaitsForWord bool
}

// WithdrawalEventRow is one status change of a withdrawal.
type WithdrawalEventRow struct {
	From, To string // statuses ("" From: the request)
	Actor    string
	Reason   string // a reason code ("" none)
	AdminID  int64  // the admin who acted (0: none)
	Note     string
	At       time.Time
}
