package views

import "time"

// TransferForm is the transfer form (/wallet/transfer) and, when Confirm
// is set, its confirmation step: the same fields, carried as hidden
// inputs, with what the person is about to do.
type TransferForm struct {
	To     string // as typed
	Amount string // as typed, tomans
	Note   string
	// Token is the per-form token (hidden field `token`): every submit of
	// this form, the confirmation's included, names one transfer.
	Token          string
	ErrorKey       string
	ErrorArgs      []any
	ErrorField     string // "to", "amount" or "note": the field the error is about
	MinRials       int64
	DailyMaxRials  int64
	AvailableRials int64
	Confirm        *TransferConfirmView
	// Unconfirmed: the sender has not confirmed their address; the page
	// says so, with "send the link again", instead of the form.
	Unconfirmed bool
}

// TransferConfirmView is what the confirmation step shows.
type TransferConfirmView struct {
	RecipientMasked string
	RecipientName   string
	AmountRials     int64
	AmountWords     string
	AfterRials      int64
	Note            string
}

// TransferReceiptView is one transfer as one of its people sees it.
type TransferReceiptView struct {
	PublicID    string
	Sent        bool // the viewer sent it (else received it)
	Who         string
	AmountRials int64
	Note        string
	CreatedAt   time.Time
}
