package notify

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/iban"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/routes"
)

// Mail kinds of a withdrawal (mails.kind), at most one of each per
// withdrawal (its dedupe key is the kind and the withdrawal's public id).
const (
	// KindWithdrawalPaid: paid into the owner's bank account (a receipt:
	// only when the owner's receipts switch is on).
	KindWithdrawalPaid = "withdrawal_paid"
	// KindWithdrawalFailed: not done (the provider's failure, or an
	// admin's rejection); the amount is back in the wallet. Always sent.
	KindWithdrawalFailed = "withdrawal_failed"
	// KindWithdrawalReturned: the provider failed it after it was paid;
	// the amount is back in the wallet. Always sent.
	KindWithdrawalReturned = "withdrawal_returned"
)

const withdrawalCursor = "withdrawals"

// withdrawalEvent is a withdrawal's move with what its mail needs.
type withdrawalEvent struct {
	ID          int64
	ToStatus    string
	CreatedAt   time.Time
	InsertedAt  *time.Time // the database's time (PostgreSQL)
	PublicID    string
	AmountRials int64
	Sheba       string
	BankCode    string
	ProviderRef string
	UserID      int64
	Email       string
	Locale      string
	Receipts    bool
}

// scanWithdrawals queues the owner's mail of every withdrawal paid,
// failed (or rejected) and returned since the last scan
// (withdrawal_events past its cursor, older than Settle), in one
// transaction with the cursor; one mail per withdrawal and kind (its
// dedupe key). Nothing is added to the withdrawal's own move: a mail
// never slows or fails it.
func (n *Notifier) scanWithdrawals(ctx context.Context, now time.Time) (int, error) {
	queued := 0
	err := n.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := n.openCursor(tx, withdrawalCursor, "withdrawal_events", now)
		if err != nil {
			return err
		}
		var evs []withdrawalEvent
		if err := tx.Raw(`SELECT e.id, e.to_status, e.created_at, e.inserted_at, w.public_id, w.amount_rials, w.sheba, w.bank_code, w.provider_ref,
				u.id AS user_id, u.email, u.locale, u.receipts_enabled AS receipts
			FROM withdrawal_events e JOIN withdrawals w ON w.id = e.withdrawal_id JOIN users u ON u.id = w.user_id
			WHERE e.id > ? ORDER BY e.id LIMIT 200`, cur.id).Scan(&evs).Error; err != nil {
			return err
		}
		last := cur.id
		for _, e := range evs {
			if !cur.final(e.CreatedAt, e.InsertedAt) {
				break // younger events: next scan (a lower id may still commit)
			}
			last = e.ID
			r, ok, err := n.withdrawalMail(e, now)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := mail.Enqueue(tx, r); err != nil {
				return err
			}
			queued++
		}
		if last == cur.id {
			return nil
		}
		return tx.Exec(`UPDATE notice_cursors SET last_event_id = ? WHERE name = ?`, last, withdrawalCursor).Error
	})
	if err != nil {
		return 0, fmt.Errorf("scan withdrawal events for mail: %w", err)
	}
	return queued, nil
}

// withdrawalMail is the owner's mail of a withdrawal's move, if it calls
// for one.
func (n *Notifier) withdrawalMail(e withdrawalEvent, now time.Time) (mail.Row, bool, error) {
	var kind, key string
	switch e.ToStatus {
	case "paid":
		if !e.Receipts {
			return mail.Row{}, false, nil
		}
		kind, key = KindWithdrawalPaid, "mail.withdrawal_paid."
	case "failed", "rejected":
		kind, key = KindWithdrawalFailed, "mail.withdrawal_failed."
	case "returned":
		kind, key = KindWithdrawalReturned, "mail.withdrawal_returned."
	default:
		return mail.Row{}, false, nil
	}
	l := langOf(e.Locale)
	bank, _ := iban.BankByCode(e.BankCode)
	last4 := e.Sheba
	if len(last4) > 4 {
		last4 = last4[len(last4)-4:]
	}
	to := i18n.T(l, "withdraw.history_to", "bank", bank.Name(string(l)), "last4", i18n.Digits(l, last4))
	c := content{Lang: l, Subject: i18n.T(l, key+"subject", "amount", i18n.Money(e.AmountRials)),
		Intro: []string{i18n.T(l, key+"intro", "amount", i18n.Money(e.AmountRials), "to", to)},
		Rows: [][2]string{
			{i18n.T(l, "receipt.amount"), i18n.Tomans(l, e.AmountRials) + " (" + i18n.Rials(l, e.AmountRials) + ")"},
			{i18n.T(l, "withdrawal.to"), to},
			{i18n.T(l, "withdrawal.id"), e.PublicID},
			{i18n.T(l, "mail.withdrawal.when"), i18n.DateTime(l, e.CreatedAt)},
		},
		Link: n.baseURL + routes.Withdrawal(e.PublicID), LinkText: i18n.T(l, "mail.withdrawal.link"),
	}
	if e.ProviderRef != "" && e.ToStatus == "paid" {
		c.Rows = append(c.Rows, [2]string{i18n.T(l, "withdrawal.ref"), i18n.Digits(l, e.ProviderRef)})
	}
	notice := kind != KindWithdrawalPaid
	if notice {
		c.Footer = []string{i18n.T(l, "mail.withdrawal.back")}
	} else {
		c.Footer = []string{i18n.T(l, "mail.receipt.off")}
	}
	r, err := n.sign(c, notice).render(e.Email)
	if err != nil {
		return mail.Row{}, false, err
	}
	dedupe := kind + ":" + e.PublicID
	uid := e.UserID
	r.UserID, r.Kind, r.DedupeKey, r.CreatedAt = &uid, kind, &dedupe, now
	return r, true, nil
}
