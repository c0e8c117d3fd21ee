// Package sqlstore is the charges' store (charge.Store): every SQL string
// of merchants, charges, their refunds and events. A move is one
// database transaction: the charge's row locked, the pure decision
// (charge.Decide) taken on it as it stands, then its ledger movement, its
// status under a conditional UPDATE, its event and its webhook outbox
// rows; nothing of a refused move is written.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Store is the charges' store.
type Store struct {
	db     *store.DB
	ledger *ledger.Ledger
}

var _ charge.Store = (*Store)(nil)

// New returns the store over db and the instance's ledger.
func New(db *store.DB, l *ledger.Ledger) *Store {
	if l == nil {
		l = ledger.New(db)
	}
	return &Store{db: db, ledger: l}
}

// ---- merchants ----

const selectMerchant = `SELECT m.user_id, u.email, m.display_name, m.account_id, m.created_by, m.created_at,
	a.posted_rials, a.held_rials
	FROM merchants m JOIN users u ON u.id = m.user_id JOIN ledger_accounts a ON a.id = m.account_id`

// MakeMerchant makes the merchant's account (its own transaction, made
// once whatever happens next), then its row, or renames it.
func (s *Store) MakeMerchant(ctx context.Context, userID int64, name string, by *int64, now time.Time) (charge.Merchant, bool, error) {
	// Only an account whose address is confirmed (a confirmation is
	// never undone: the check holds at the insert).
	switch err := owner.RequireConfirmed(s.db.Gorm.WithContext(ctx), userID); {
	case errors.Is(err, owner.ErrNotFound):
		return charge.Merchant{}, false, fmt.Errorf("%w: %w", charge.ErrNotFound, err)
	case err != nil:
		return charge.Merchant{}, false, err
	}
	acct, err := s.ledger.EnsureAccount(ctx, ledger.AccountMerchant, ledger.MerchantCode(userID), userID)
	if err != nil {
		return charge.Merchant{}, false, err
	}
	var created bool
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`INSERT INTO merchants (user_id, display_name, account_id, created_by, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (user_id) DO NOTHING`, userID, name, acct, by, now.UTC())
		if res.Error != nil {
			return fmt.Errorf("insert merchant %d: %w", userID, res.Error)
		}
		created = res.RowsAffected == 1
		if !created {
			if err := tx.Exec(`UPDATE merchants SET display_name = ? WHERE user_id = ?`, name, userID).Error; err != nil {
				return fmt.Errorf("rename merchant %d: %w", userID, err)
			}
		}
		// Audited in the same transaction: the admin's, or the command
		// line's (no admin).
		e := audit.Entry{Action: audit.ActionCLIMerchant, TargetUserID: &userID, Note: name, Result: audit.ResultDone, CreatedAt: now.UTC()}
		if by != nil {
			e.AdminID, e.Action = *by, audit.ActionMerchant
		}
		return audit.Record(tx, e)
	})
	if err != nil {
		return charge.Merchant{}, false, err
	}
	m, err := s.Merchant(ctx, userID)
	return m, created, err
}

// Merchant reads a merchant with its account's figures.
func (s *Store) Merchant(ctx context.Context, userID int64) (charge.Merchant, error) {
	var ms []charge.Merchant
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(selectMerchant+` WHERE m.user_id = ?`, userID), &ms); err != nil {
		return charge.Merchant{}, fmt.Errorf("merchant %d: %w", userID, err)
	}
	if len(ms) == 0 {
		return charge.Merchant{}, charge.ErrNotMerchant
	}
	return ms[0], nil
}

// UserByEmail is the id of the user of a stored-form address.
func (s *Store) UserByEmail(ctx context.Context, addr string) (int64, error) {
	var ids []int64
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id FROM users WHERE lower(email) = lower(?)`, addr), &ids); err != nil {
		return 0, fmt.Errorf("user %s: %w", addr, err)
	}
	if len(ids) == 0 {
		return 0, charge.ErrNotFound
	}
	return ids[0], nil
}

// ---- charges ----

// chargeRow is a charge as read, with its merchant's account.
type chargeRow struct {
	charge.Charge
	MerchantAccountID int64
}

const selectCharge = chargeColumns + ` FROM charges c` + chargeJoins

// chargeColumns and chargeJoins are selectCharge around its charges
// ("c"), for a list that picks its page of charges first.
const (
	chargeColumns = `SELECT c.id, c.public_id, c.merchant_user_id, m.display_name AS merchant_name, mu.email AS merchant_email,
	COALESCE(c.payer_user_id, 0) AS payer_user_id,
	COALESCE((SELECT pu.email FROM users pu WHERE pu.id = c.payer_user_id), '') AS payer_email,
	c.amount_rials, c.description, c.order_id, c.return_url, c.capture_method, c.status, c.captured_rials, c.refunded_rials,
	COALESCE(c.hold_id, 0) AS hold_id, c.expires_at, c.hold_expires_at, c.confirmed_at, c.captured_at, c.ended_at,
	c.created_at, c.updated_at, m.account_id AS merchant_account_id`
	chargeJoins = ` JOIN merchants m ON m.user_id = c.merchant_user_id JOIN users mu ON mu.id = c.merchant_user_id`
)

// Insert writes a new charge.
func (s *Store) Insert(ctx context.Context, c *charge.Charge, token string) error {
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var taken []int64
		if err := tx.Raw(`SELECT id FROM charges WHERE merchant_user_id = ? AND form_token = ?`, c.MerchantUserID, token).
			Scan(&taken).Error; err != nil {
			return fmt.Errorf("charge by token: %w", err)
		}
		if len(taken) > 0 {
			return charge.ErrDuplicate
		}
		var ids []int64
		err := store.Scan(tx.Raw(`INSERT INTO charges (public_id, merchant_user_id, amount_rials, description, order_id, return_url,
			capture_method, status, form_token, expires_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			c.PublicID, c.MerchantUserID, c.AmountRials, c.Description, c.OrderID, c.ReturnURL, c.Capture, c.Status, token,
			c.ExpiresAt.UTC(), c.CreatedAt.UTC(), c.UpdatedAt.UTC()), &ids)
		if err != nil {
			return err
		}
		c.ID = ids[0]
		return nil
	})
	if err != nil && store.IsUniqueViolation(err) {
		// A racing insert committed first: the same token is a replay,
		// another one took the order id.
		var sameToken []int64
		if rerr := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id FROM charges WHERE merchant_user_id = ? AND form_token = ?`,
			c.MerchantUserID, token), &sameToken); rerr != nil {
			return errors.Join(err, rerr)
		}
		if len(sameToken) > 0 {
			return charge.ErrDuplicate
		}
		return charge.ErrOrderIDTaken
	}
	if err != nil && !errors.Is(err, charge.ErrDuplicate) {
		return fmt.Errorf("insert charge: %w", err)
	}
	return err
}

// ByToken reads the merchant's charge made with token.
func (s *Store) ByToken(ctx context.Context, merchantUserID int64, token string) (charge.Charge, error) {
	return s.one(ctx, s.db.Gorm.WithContext(ctx), selectCharge+` WHERE c.merchant_user_id = ? AND c.form_token = ?`, merchantUserID, token)
}

// Get reads a charge by public id, with its refunds.
func (s *Store) Get(ctx context.Context, publicID string) (charge.Charge, error) {
	return s.one(ctx, s.db.Gorm.WithContext(ctx), selectCharge+` WHERE c.public_id = ?`, publicID)
}

func (s *Store) one(ctx context.Context, db *gorm.DB, q string, args ...any) (charge.Charge, error) {
	r, err := s.oneRow(db, q, args...)
	if err != nil {
		return charge.Charge{}, err
	}
	c := r.Charge
	if c.Refunds, err = refunds(db.WithContext(ctx), c.ID); err != nil {
		return charge.Charge{}, err
	}
	return c, nil
}

func (s *Store) oneRow(db *gorm.DB, q string, args ...any) (chargeRow, error) {
	var rs []chargeRow
	if err := store.Scan(db.Raw(q, args...), &rs); err != nil {
		return chargeRow{}, fmt.Errorf("read charge: %w", err)
	}
	if len(rs) == 0 {
		return chargeRow{}, charge.ErrNotFound
	}
	return rs[0], nil
}

func refunds(db *gorm.DB, chargeID int64) ([]charge.Refund, error) {
	rs := []charge.Refund{}
	if err := store.Scan(db.Raw(`SELECT id, public_id, charge_id, amount_rials, created_at FROM charge_refunds WHERE charge_id = ? ORDER BY id`,
		chargeID), &rs); err != nil {
		return nil, fmt.Errorf("refunds of charge %d: %w", chargeID, err)
	}
	return rs, nil
}

// List reads charges by f, newest first.
func (s *Store) List(ctx context.Context, f charge.Filter) ([]charge.Charge, int64, error) {
	switch {
	case f.Limit <= 0:
		f.Limit = 20
	case f.Limit > charge.MaxListLimit:
		f.Limit = charge.MaxListLimit
	}
	// The page's charges are picked first, then joined to their people:
	// a join above the charges' newest-first walk (a hash join, and a
	// sort after it) read every charge of the filter before the limit
	// (TestScalePagesUseIndexes, one merchant's CSV). The merchant and a
	// known status are written as literals (a number, and a name from the
	// fixed set: never request text): with parameters, PostgreSQL's
	// generic plan assumes an average merchant and walks every charge
	// newest first filtering by it, which for a small merchant beside a
	// big one reads nearly all of them. Merchants are few, so are the
	// statements this makes (one each in the driver's statement cache);
	// the payer stays a parameter: payers are many and alike.
	q := `SELECT * FROM charges c WHERE 1 = 1`
	var args []any
	if f.MerchantUserID != 0 {
		q += ` AND c.merchant_user_id = ` + strconv.FormatInt(f.MerchantUserID, 10)
	}
	if f.PayerUserID != 0 {
		q += ` AND c.payer_user_id = ?`
		args = append(args, f.PayerUserID)
	}
	switch {
	case f.Status.Valid():
		q += ` AND c.status = '` + string(f.Status) + `'`
	case f.Status != "":
		q += ` AND c.status = ?`
		args = append(args, f.Status)
	}
	if f.Before > 0 {
		q += ` AND c.id < ?`
		args = append(args, f.Before)
	}
	q = chargeColumns + ` FROM (` + q + ` ORDER BY c.id DESC LIMIT ` + strconv.Itoa(f.Limit+1) + `) c` + chargeJoins + ` ORDER BY c.id DESC`
	var rs []chargeRow
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(q, args...), &rs); err != nil {
		return nil, 0, fmt.Errorf("list charges: %w", err)
	}
	var next int64
	if len(rs) > f.Limit {
		rs = rs[:f.Limit]
		next = rs[f.Limit-1].ID
	}
	out := make([]charge.Charge, 0, len(rs))
	ids := make([]int64, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Charge)
		ids = append(ids, r.ID)
	}
	if len(ids) > 0 {
		var refs []charge.Refund
		// In the order of (charge_id, id), their index's: ordered by id
		// alone, the plan walked every refund's primary key.
		if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id, public_id, charge_id, amount_rials, created_at FROM charge_refunds
			WHERE charge_id IN ? ORDER BY charge_id, id`, ids), &refs); err != nil {
			return nil, 0, fmt.Errorf("refunds of charges: %w", err)
		}
		by := map[int64][]charge.Refund{}
		for _, r := range refs {
			by[r.ChargeID] = append(by[r.ChargeID], r)
		}
		for i := range out {
			out[i].Refunds = by[out[i].ID]
			if out[i].Refunds == nil {
				out[i].Refunds = []charge.Refund{}
			}
		}
	}
	return out, next, nil
}

// Events are a charge's events, oldest first.
func (s *Store) Events(ctx context.Context, chargeID int64) ([]charge.Event, error) {
	var es []charge.Event
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id, charge_id, type, from_status, to_status, actor, amount_rials, refund_id, created_at
		FROM charge_events WHERE charge_id = ? ORDER BY id`, chargeID), &es); err != nil {
		return nil, fmt.Errorf("events of charge %d: %w", chargeID, err)
	}
	return es, nil
}

// lock reads the charge of publicID locked for the rest of tx (FOR
// UPDATE on PostgreSQL; SQLite's immediate transaction holds the
// database).
func (s *Store) lock(tx *gorm.DB, publicID string, merchantUserID int64) (chargeRow, error) {
	q := selectCharge + ` WHERE c.public_id = ?`
	args := []any{publicID}
	if merchantUserID != 0 {
		q += ` AND c.merchant_user_id = ?`
		args = append(args, merchantUserID)
	}
	if s.db.Dialect == store.Postgres {
		q += ` FOR UPDATE OF c`
	}
	return s.oneRow(tx, q, args...)
}

// payerAccount is the wallet account of the payer of a charge, read in
// tx. Confirming a charge (confirming true), a payer whose address is not
// confirmed pays nothing (ErrAddressUnconfirmed: the charge would name a
// stranger's address to the merchant; a confirmation is never undone, so
// the read holds); a refund goes to whoever paid. A payer without a
// wallet yet has nothing to pay with: ErrInsufficientFunds, as any short
// payer (the checkout offers to top up the difference).
func payerAccount(tx *gorm.DB, userID int64, confirming bool) (int64, error) {
	var rows []struct {
		AccountID int64
		Confirmed bool
	}
	if err := store.Scan(tx.Raw(`SELECT COALESCE(a.id, 0) AS account_id, u.email_verified_at IS NOT NULL AS confirmed FROM users u
		LEFT JOIN wallets w ON w.user_id = u.id LEFT JOIN ledger_accounts a ON a.wallet_id = w.id WHERE u.id = ?`, userID), &rows); err != nil {
		return 0, fmt.Errorf("payer %d: %w", userID, err)
	}
	switch {
	case len(rows) == 0:
		return 0, fmt.Errorf("payer %d: %w", userID, charge.ErrNotFound)
	case confirming && !rows[0].Confirmed:
		return 0, fmt.Errorf("payer %d: %w", userID, charge.ErrAddressUnconfirmed)
	case rows[0].AccountID == 0:
		return 0, fmt.Errorf("wallet of user %d: none yet: %w: %w", userID, charge.ErrInsufficientFunds, ledger.ErrAccountNotFound)
	}
	return rows[0].AccountID, nil
}

// Move locks the charge, decides and applies the decision in one
// transaction, in this order (the lock order of every charge move: the
// charge's row, the hold's, the accounts in ascending id):
//
//  1. the charge's row, locked, and the decision on it (nothing more
//     when it applies nothing);
//  2. the ledger: the charge's transaction, the hold made, captured,
//     released or expired (a short balance rolls everything back);
//  3. the status, by an UPDATE conditional on the status decided on;
//  4. the event and the webhook outbox rows.
//
// A decision that applies and refuses (a charge found past its time) is
// committed, and the caller reads its Err.
func (s *Store) Move(ctx context.Context, m charge.Move) (charge.Charge, charge.Decision, error) {
	var out charge.Charge
	var d charge.Decision
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		row, err := s.lock(tx, m.PublicID, m.MerchantUserID)
		if err != nil {
			return err
		}
		c := row.Charge
		d = charge.Decide(c, m.Request)
		if !d.Apply {
			out = c
			out.Refunds, err = refunds(tx, c.ID)
			return err
		}
		now := m.Request.Now.UTC()
		vals := map[string]any{"status": d.To, "updated_at": now}
		switch d.Money {
		case charge.MoneyCharge:
			wallet, err := payerAccount(tx, m.Request.PayerUserID, true)
			if err != nil {
				return err
			}
			if _, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindCharge, Reference: c.PublicID, Note: c.OrderID,
				Postings: ledger.Transfer(wallet, row.MerchantAccountID, c.AmountRials), At: now}); err != nil {
				return moneyErr(err)
			}
			vals["captured_rials"], vals["captured_at"] = c.AmountRials, now
			c.CapturedRials, c.CapturedAt = c.AmountRials, &now
		case charge.MoneyHold:
			wallet, err := payerAccount(tx, m.Request.PayerUserID, true)
			if err != nil {
				return err
			}
			until := now.Add(m.HoldTTL)
			h, err := s.ledger.HoldIn(tx, ledger.HoldRequest{AccountID: wallet, AmountRials: c.AmountRials, Reason: charge.HoldReason,
				Reference: c.PublicID, ExpiresAt: until, Now: now})
			if err != nil {
				return moneyErr(err)
			}
			vals["hold_id"], vals["hold_expires_at"] = h.ID, until
			c.HoldID, c.HoldExpiresAt = h.ID, &until
		case charge.MoneyCapture:
			if _, err := s.ledger.CaptureIn(tx, c.HoldID, d.CaptureRials, row.MerchantAccountID, ledger.KindCapture, c.PublicID, now); err != nil {
				return moneyErr(err)
			}
			vals["captured_rials"], vals["captured_at"] = d.CaptureRials, now
			c.CapturedRials, c.CapturedAt = d.CaptureRials, &now
		case charge.MoneyRelease:
			if _, err := s.ledger.ReleaseIn(tx, c.HoldID, now); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
				return err
			}
		case charge.MoneyExpire:
			if _, err := s.ledger.ExpireIn(tx, c.HoldID, now); err != nil && !errors.Is(err, ledger.ErrDuplicate) {
				return err
			}
		}
		if m.Request.Action == charge.ActConfirm && (d.To == charge.StatusSucceeded || d.To == charge.StatusAuthorized) {
			vals["payer_user_id"], vals["confirmed_at"] = m.Request.PayerUserID, now
			c.PayerUserID, c.ConfirmedAt = m.Request.PayerUserID, &now
			if m.FormToken != "" {
				vals["confirm_token"] = m.FormToken
			}
		}
		if d.To == charge.StatusCanceled || d.To == charge.StatusExpired {
			vals["ended_at"] = now
			c.EndedAt = &now
		}
		res := tx.Table("charges").Where("id = ? AND status = ?", c.ID, c.Status).Updates(vals)
		if res.Error != nil && vals["confirm_token"] != nil && store.IsUniqueViolation(res.Error) {
			// The payer's form confirmed another charge: everything above
			// rolls back with this transaction.
			return fmt.Errorf("confirm charge %s: %w: %w", c.PublicID, charge.ErrFormReused, res.Error)
		}
		if res.Error != nil {
			return fmt.Errorf("move charge %s: %w", c.PublicID, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("move charge %s: changed meanwhile", c.PublicID)
		}
		from := c.Status
		c.Status, c.UpdatedAt = d.To, now
		if c.PayerEmail == "" && c.PayerUserID != 0 {
			var addrs []string
			if err := store.Scan(tx.Raw(`SELECT email FROM users WHERE id = ?`, c.PayerUserID), &addrs); err != nil {
				return fmt.Errorf("payer of charge %s: %w", c.PublicID, err)
			}
			if len(addrs) > 0 {
				c.PayerEmail = addrs[0]
			}
		}
		amount := d.CaptureRials
		if d.Money == charge.MoneyHold {
			amount = c.AmountRials
		}
		if err := tx.Exec(`INSERT INTO charge_events (charge_id, type, from_status, to_status, actor, amount_rials, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, c.ID, d.Event, from, d.To, m.Actor, amount, now).Error; err != nil {
			return fmt.Errorf("event of charge %s: %w", c.PublicID, err)
		}
		if c.Refunds, err = refunds(tx, c.ID); err != nil {
			return err
		}
		if _, err := webhook.EnqueueCharge(tx, webhook.ChargeEvent{UserID: c.MerchantUserID, ChargeID: c.ID, Type: d.Event,
			Charge: view(m.View, c), CreatedAt: now}); err != nil {
			return err
		}
		if d.Money == charge.MoneyCapture {
			testhook.At(testhook.InsideCapture) // e2e: the capture, its row, event and outbox written, not committed
		}
		out = c
		return nil
	})
	if err != nil {
		return out, charge.Decision{}, err
	}
	return out, d, nil
}

func view(f func(charge.Charge) any, c charge.Charge) any {
	if f == nil {
		return nil
	}
	return f(c)
}

// moneyErr translates the ledger's refusal of a short balance.
func moneyErr(err error) error {
	if errors.Is(err, ledger.ErrInsufficientFunds) {
		return fmt.Errorf("%w: %w", charge.ErrInsufficientFunds, err)
	}
	if errors.Is(err, ledger.ErrHoldEnded) {
		return fmt.Errorf("%w: %w", charge.ErrExpired, err)
	}
	return err
}

// Refund writes a refund (charge.RefundWrite).
func (s *Store) Refund(ctx context.Context, w charge.RefundWrite) (charge.Charge, charge.Refund, error) {
	var out charge.Charge
	var ref charge.Refund
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		row, err := s.lock(tx, w.ChargePublicID, w.MerchantUserID)
		if err != nil {
			return err
		}
		c := row.Charge
		var firsts []charge.Refund
		if err := store.Scan(tx.Raw(`SELECT id, public_id, charge_id, amount_rials, created_at FROM charge_refunds WHERE charge_id = ? AND form_token = ?`,
			c.ID, w.Token), &firsts); err != nil {
			return fmt.Errorf("refund by token: %w", err)
		}
		if len(firsts) > 0 {
			ref, out = firsts[0], c
			out.Refunds, err = refunds(tx, c.ID)
			if err != nil {
				return err
			}
			return charge.ErrDuplicate
		}
		if err := charge.CheckRefund(c, w.Refund.AmountRials); err != nil {
			return err
		}
		ref = w.Refund
		ref.ChargeID = c.ID
		at := ref.CreatedAt.UTC()
		var ids []int64
		if err := store.Scan(tx.Raw(`INSERT INTO charge_refunds (public_id, charge_id, amount_rials, form_token, created_at)
			VALUES (?, ?, ?, ?, ?) RETURNING id`, ref.PublicID, c.ID, ref.AmountRials, w.Token, at), &ids); err != nil {
			return fmt.Errorf("insert refund: %w", err)
		}
		ref.ID = ids[0]
		// The guard: the total of refunds never passes what was captured,
		// in the write itself (racing refunds wait on the row and then
		// find the limit).
		res := tx.Exec(`UPDATE charges SET refunded_rials = refunded_rials + ?, updated_at = ?
			WHERE id = ? AND status = ? AND refunded_rials + ? <= captured_rials`,
			ref.AmountRials, at, c.ID, charge.StatusSucceeded, ref.AmountRials)
		if res.Error != nil {
			return fmt.Errorf("refunded total of charge %s: %w", c.PublicID, res.Error)
		}
		if res.RowsAffected != 1 {
			return charge.ErrRefundExceeds
		}
		wallet, err := payerAccount(tx, c.PayerUserID, false)
		if err != nil {
			return err
		}
		if _, err := s.ledger.Post(tx, ledger.Entry{Kind: ledger.KindRefund, Reference: ref.PublicID, Note: c.PublicID,
			Postings: ledger.Transfer(row.MerchantAccountID, wallet, ref.AmountRials), At: at}); err != nil {
			return moneyErr(err)
		}
		if err := tx.Exec(`INSERT INTO charge_events (charge_id, type, from_status, to_status, actor, amount_rials, refund_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.ID, webhook.TypeChargeRefunded, c.Status, c.Status, charge.ActorMerchant,
			ref.AmountRials, ref.ID, at).Error; err != nil {
			return fmt.Errorf("event of charge %s: %w", c.PublicID, err)
		}
		c.RefundedRials += ref.AmountRials
		c.UpdatedAt = at
		if c.Refunds, err = refunds(tx, c.ID); err != nil {
			return err
		}
		var rv any
		if w.RefundView != nil {
			rv = w.RefundView(ref, c)
		}
		if _, err := webhook.EnqueueCharge(tx, webhook.ChargeEvent{UserID: c.MerchantUserID, ChargeID: c.ID,
			Type: webhook.TypeChargeRefunded, Charge: view(w.View, c), Refund: rv, CreatedAt: at}); err != nil {
			return err
		}
		out = c
		return nil
	})
	if err != nil && store.IsUniqueViolation(err) {
		// A racing refund with the same token committed first.
		c, gerr := s.Get(ctx, w.ChargePublicID)
		if gerr != nil {
			return charge.Charge{}, charge.Refund{}, errors.Join(err, gerr)
		}
		var firsts []charge.Refund
		if rerr := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id, public_id, charge_id, amount_rials, created_at FROM charge_refunds
			WHERE charge_id = ? AND form_token = ?`, c.ID, w.Token), &firsts); rerr != nil || len(firsts) == 0 {
			return charge.Charge{}, charge.Refund{}, errors.Join(err, rerr)
		}
		return c, firsts[0], charge.ErrDuplicate
	}
	if err != nil && !errors.Is(err, charge.ErrDuplicate) {
		return charge.Charge{}, charge.Refund{}, err
	}
	return out, ref, err
}

// Due lists charges past their time: unconfirmed checkouts and
// uncaptured authorizations (each by its own partial index), in the
// order of their time (expires_at, hold_expires_at), then id, after the
// cursor after when there is one (a keyset: see charge.DueCharge).
func (s *Store) Due(ctx context.Context, now time.Time, after *charge.DueCharge, limit int) ([]charge.DueCharge, error) {
	at, n := now.UTC(), strconv.Itoa(limit) // the limit a literal, as Search writes it
	// Each side's keyset: its time at or after the cursor's (the index's
	// range), and past the cursor's (time, id).
	checkouts, holds := "", ""
	args := []any{at}
	if after != nil {
		t := after.DueAt.UTC()
		checkouts = ` AND expires_at >= ? AND (expires_at > ? OR id > ?)`
		holds = ` AND hold_expires_at >= ? AND (hold_expires_at > ? OR id > ?)`
		args = append(args, t, t, after.ID)
	}
	args = append(args, args...)
	var rows []struct {
		ID       int64
		PublicID string
		DueAt    time.Time
	}
	if err := store.Scan(s.db.Gorm.WithContext(ctx).Raw(`SELECT id, public_id, due_at FROM (
			SELECT id, public_id, due_at FROM (SELECT id, public_id, expires_at AS due_at FROM charges
				WHERE status = 'requires_confirmation' AND expires_at <= ?`+checkouts+`
				ORDER BY expires_at, id LIMIT `+n+`) AS a
			UNION ALL SELECT id, public_id, due_at FROM (SELECT id, public_id, hold_expires_at AS due_at FROM charges
				WHERE status = 'authorized' AND hold_expires_at <= ?`+holds+`
				ORDER BY hold_expires_at, id LIMIT `+n+`) AS b) AS due ORDER BY due_at, id LIMIT `+n,
		args...), &rows); err != nil {
		return nil, fmt.Errorf("due charges: %w", err)
	}
	out := make([]charge.DueCharge, len(rows))
	for i, r := range rows {
		out[i] = charge.DueCharge{ID: r.ID, PublicID: r.PublicID, DueAt: r.DueAt}
	}
	return out, nil
}

// Search finds charges by public id ("ch_…"), by a refund's ("re_…"), by
// order id, or by the merchant's or payer's address; newest first.
func (s *Store) Search(ctx context.Context, q string, limit int) ([]charge.Charge, error) {
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	db := s.db.Gorm.WithContext(ctx)
	var rs []chargeRow
	var err error
	// The limit as a literal, as List writes it: as a parameter the
	// generic plan guesses a tenth of the table and may plan parallel
	// workers for a page.
	n := strconv.Itoa(limit)
	// As typed: Persian digits read as Latin, an id pasted in capitals
	// found; an order id that looks like an id or an address (any text
	// is a merchant's order id) is looked up as one when nothing else is.
	q = strings.TrimSpace(money.LatinDigits(q))
	lq := strings.ToLower(q)
	byOrder := false
	switch {
	case q == "":
		err = store.Scan(db.Raw(selectCharge+` ORDER BY c.id DESC LIMIT `+n), &rs)
	case strings.HasPrefix(lq, "ch_"):
		err = store.Scan(db.Raw(selectCharge+` WHERE c.public_id = ?`, lq), &rs)
	case strings.HasPrefix(lq, "re_"):
		err = store.Scan(db.Raw(selectCharge+` WHERE c.id IN (SELECT charge_id FROM charge_refunds WHERE public_id = ?)`, lq), &rs)
	case strings.Contains(q, "@"):
		// Either side's newest, each from its own index (the person by
		// the unique lower(email), their charges by merchant or by
		// payer), as the transfers' search does: an OR across the two
		// joins walked every charge. "=" the one person, not IN: with one
		// merchant among the charges, IN planned a merge join that walked
		// the merchant index whole for anyone else's address.
		addr := strings.ToLower(q)
		err = store.Scan(db.Raw(selectCharge+` WHERE c.id IN (
				SELECT id FROM (SELECT id FROM charges WHERE merchant_user_id = (SELECT id FROM users WHERE lower(email) = ?) ORDER BY id DESC LIMIT `+n+`) AS a
				UNION SELECT id FROM (SELECT id FROM charges WHERE payer_user_id = (SELECT id FROM users WHERE lower(email) = ?) AND payer_user_id IS NOT NULL
					ORDER BY id DESC LIMIT `+n+`) AS b)
			ORDER BY c.id DESC LIMIT `+n, addr, addr), &rs)
	default:
		byOrder = true
	}
	if err == nil && q != "" && (byOrder || len(rs) == 0) {
		// Any merchant's order (charges_order_idx, migration 00043).
		err = store.Scan(db.Raw(selectCharge+` WHERE c.order_id = ? ORDER BY c.id DESC LIMIT `+n, q), &rs)
	}
	if err != nil {
		return nil, fmt.Errorf("search charges: %w", err)
	}
	out := make([]charge.Charge, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Charge)
	}
	return out, nil
}

// ByReferences maps the payer's history references to charges: a
// charge's public id (kind charge), "hold:{id}" (kind capture) and a
// refund's public id (kind refund).
func (s *Store) ByReferences(ctx context.Context, payerUserID int64, refs []string) (map[string]charge.Charge, error) {
	out := map[string]charge.Charge{}
	if payerUserID == 0 {
		return out, nil // an unconfirmed charge has no payer: nobody's
	}
	var pub, refunds []string
	var holds []int64
	for _, r := range refs {
		switch {
		case strings.HasPrefix(r, "ch_"):
			pub = append(pub, r)
		case strings.HasPrefix(r, "re_"):
			refunds = append(refunds, r)
		case strings.HasPrefix(r, "hold:"):
			if id, err := strconv.ParseInt(strings.TrimPrefix(r, "hold:"), 10, 64); err == nil {
				holds = append(holds, id)
			}
		}
	}
	// Each read is by unique keys alone, and the payer's rows are kept
	// here: with the payer in the WHERE, a prepared statement's generic
	// plan can read all of the payer's charges and filter the keys out.
	db := s.db.Gorm.WithContext(ctx)
	if len(pub) > 0 || len(holds) > 0 {
		var rs []chargeRow
		if err := store.Scan(db.Raw(selectCharge+` WHERE c.public_id IN ? OR c.hold_id IN ?`,
			append(pub, ""), append(holds, 0)), &rs); err != nil {
			return nil, fmt.Errorf("charges of references: %w", err)
		}
		for _, r := range rs {
			if r.PayerUserID != payerUserID {
				continue
			}
			out[r.PublicID] = r.Charge
			if r.HoldID != 0 {
				out["hold:"+strconv.FormatInt(r.HoldID, 10)] = r.Charge
			}
		}
	}
	if len(refunds) > 0 {
		var rrs []struct {
			PublicID string
			ChargeID int64
		}
		if err := store.Scan(db.Raw(`SELECT public_id, charge_id FROM charge_refunds WHERE public_id IN ?`, refunds), &rrs); err != nil {
			return nil, fmt.Errorf("refunds of references: %w", err)
		}
		if len(rrs) > 0 {
			ids := make([]int64, 0, len(rrs))
			for _, r := range rrs {
				ids = append(ids, r.ChargeID)
			}
			var rs []chargeRow
			if err := store.Scan(db.Raw(selectCharge+` WHERE c.id IN ?`, ids), &rs); err != nil {
				return nil, fmt.Errorf("charges of refunds: %w", err)
			}
			byID := map[int64]charge.Charge{}
			for _, r := range rs {
				if r.PayerUserID == payerUserID {
					byID[r.ID] = r.Charge
				}
			}
			for _, r := range rrs {
				if c, ok := byID[r.ChargeID]; ok {
					out[r.PublicID] = c
				}
			}
		}
	}
	return out, nil
}
