package notify

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/routes"
)

// KindCardRefund is the mail telling a payer that part or all of a
// top-up went back to their card.
const KindCardRefund = "card_refund"

const cardRefundCursor = "card_refunds"

// cardRefundEvent is a card refund's move with what its mail needs.
type cardRefundEvent struct {
	ID            int64
	ToStatus      string
	CreatedAt     time.Time
	InsertedAt    *time.Time // the database's time (PostgreSQL)
	RefundID      string
	AmountRials   int64
	PublicID      string // the top-up's
	CardPanMasked string
	UserID        int64
	Email         string
	Locale        string
}

// scanCardRefunds queues the mail of every card refund refunded since the
// last scan (card_refund_events past its cursor, older than Settle), in
// one transaction with the cursor; one mail per card refund (its dedupe
// key), whatever the payer's receipts setting: money left the wallet.
func (n *Notifier) scanCardRefunds(ctx context.Context, now time.Time) (int, error) {
	queued := 0
	err := n.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := n.openCursor(tx, cardRefundCursor, "card_refund_events", now)
		if err != nil {
			return err
		}
		var evs []cardRefundEvent
		if err := tx.Raw(`SELECT e.id, e.to_status, e.created_at, e.inserted_at, c.public_id AS refund_id, c.amount_rials, p.public_id, p.card_pan_masked,
				u.id AS user_id, u.email, u.locale
			FROM card_refund_events e JOIN card_refunds c ON c.id = e.card_refund_id JOIN topups p ON p.id = c.topup_id
			JOIN users u ON u.id = c.user_id
			WHERE e.id > ? ORDER BY e.id LIMIT 200`, cur.id).Scan(&evs).Error; err != nil {
			return err
		}
		last := cur.id
		for _, e := range evs {
			if !cur.final(e.CreatedAt, e.InsertedAt) {
				break // younger events: next scan (a lower id may still commit)
			}
			last = e.ID
			if e.ToStatus != "refunded" {
				continue
			}
			r, err := n.cardRefundMail(e, now)
			if err != nil {
				return err
			}
			if err := mail.Enqueue(tx, r); err != nil {
				return err
			}
			queued++
		}
		if last == cur.id {
			return nil
		}
		return tx.Exec(`UPDATE notice_cursors SET last_event_id = ? WHERE name = ?`, last, cardRefundCursor).Error
	})
	if err != nil {
		return 0, fmt.Errorf("scan card refund events for mail: %w", err)
	}
	return queued, nil
}

// cardRefundMail is the payer's mail of a card refund made.
func (n *Notifier) cardRefundMail(e cardRefundEvent, now time.Time) (mail.Row, error) {
	l := langOf(e.Locale)
	c := content{Lang: l, Subject: i18n.T(l, "mail.cardrefund.subject", "amount", i18n.Money(e.AmountRials)),
		Intro: []string{i18n.T(l, "mail.cardrefund.intro", "amount", i18n.Money(e.AmountRials), "ref", i18n.ShortRef(e.PublicID))},
		Rows: [][2]string{
			{i18n.T(l, "receipt.amount"), i18n.Tomans(l, e.AmountRials) + " (" + i18n.Rials(l, e.AmountRials) + ")"},
			{i18n.T(l, "receipt.id"), i18n.ShortRef(e.PublicID)},
			{i18n.T(l, "mail.cardrefund.when"), i18n.DateTime(l, e.CreatedAt)},
		},
		Link: n.baseURL + routes.TopUpPage(e.PublicID), LinkText: i18n.T(l, "mail.cardrefund.link"),
		Footer: []string{i18n.T(l, "mail.cardrefund.bank")},
	}
	if e.CardPanMasked != "" {
		c.Rows = append(c.Rows, [2]string{i18n.T(l, "receipt.card"), i18n.Digits(l, e.CardPanMasked)})
	}
	c = n.sign(c, true)
	r, err := c.render(e.Email)
	if err != nil {
		return mail.Row{}, err
	}
	key := KindCardRefund + ":" + e.RefundID
	uid := e.UserID
	r.UserID, r.Kind, r.DedupeKey, r.CreatedAt = &uid, KindCardRefund, &key, now
	return r, nil
}
