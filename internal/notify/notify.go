// Package notify writes the mail people get about their account and
// their money: the password reset link, a receipt when a top-up is
// credited, a mail to each person of a transfer (ScanTransfers), a
// withdrawal's owner's mail when it is paid, fails or comes back
// (withdrawal.go), and a notice when a payment failed after the bank may have
// charged the card ("returns within 72 hours"). Each is rendered in the
// recipient's language, as text and HTML, and queued as a row (package
// mail) that the background sender delivers. Receipts and notices are
// found by reading topup_events after the fact, so nothing is added to
// the credit's transaction: a mail can never delay or fail a credit.
//
// Scan reads the events past a cursor (notice_cursors) once they are
// older than Settle, and each mail has one dedupe key per top-up. Its one
// query of topup_events joined with topups runs in the same transaction as
// the cursor and the queued mails, which is why it lives here and not in
// package topupread (which holds every other top-up read).
package notify

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/config"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/mail"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
)

// Mail kinds (mails.kind).
const (
	KindReset   = "password_reset"
	KindVerify  = "email_verify"
	KindReceipt = "receipt"
	KindNotice  = "failure_notice"
)

// Notifier renders and queues mail.
type Notifier struct {
	db      *store.DB
	baseURL string
	op      config.Operator // the company named in every mail, support's contacts
	now     func() time.Time
	log     *slog.Logger
	// afterLook, when set (tests), runs between the look at the table's
	// open writers and the read of its rows (openCursor's window).
	afterLook func(table string)
	// Settle: events younger than this are left for the next scan, so
	// that a transaction still committing a lower event id is never
	// skipped by the cursor. On PostgreSQL a transaction that has written
	// to the scanned table and is still open holds back the rows inserted
	// after it began, whatever their age (openCursor).
	Settle time.Duration
}

// New returns a notifier whose links point at baseURL; its mails name the
// operator and, where they say "contact support", support's contacts.
func New(db *store.DB, baseURL string, op config.Operator, now func() time.Time, log *slog.Logger) *Notifier {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{db: db, baseURL: strings.TrimRight(baseURL, "/"), op: op, now: now, log: log, Settle: 30 * time.Second}
}

// content is what one mail says, before it is written as text and HTML.
type content struct {
	Lang     i18n.Lang
	Subject  string
	Intro    []string
	Rows     [][2]string
	Link     string
	LinkText string
	Footer   []string
	// Support are support's contacts as written in the mail's language
	// (mails that say "contact support"); Operator signs the mail.
	Support  []string
	Operator string
}

// sign adds what every mail ends with (the operator's name) and, when
// support it is, support's contacts.
func (n *Notifier) sign(c content, support bool) content {
	if support {
		for _, ct := range n.op.Contacts() {
			v := ct.Value
			if ct.Kind == "phone" {
				v = i18n.Digits(c.Lang, v)
			}
			c.Support = append(c.Support, v)
		}
	}
	if n.op.Name != "" {
		c.Operator = i18n.T(c.Lang, "mail.operator", "name", i18n.UserText(n.op.Name))
	}
	return c
}

var htmlTmpl = template.Must(template.New("mail").Parse(`<!doctype html>
<html lang="{{.Lang}}" dir="{{.Dir}}">
<head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family: Vazirmatn, Tahoma, Arial, sans-serif; line-height: 1.7; color: #1a1a1a;">
{{range .Intro}}<p>{{.}}</p>
{{end}}{{if .Rows}}<table style="border-collapse: collapse;">
{{range .Rows}}<tr><th scope="row" style="text-align: start; padding: 4px 12px 4px 0; font-weight: normal; color: #555;">{{index . 0}}</th><td style="padding: 4px 0;"><bdi>{{index . 1}}</bdi></td></tr>
{{end}}</table>
{{end}}{{if .Link}}<p><a href="{{.Link}}">{{.LinkText}}</a></p>
{{end}}{{range .Footer}}<p style="color: #666; font-size: small;">{{.}}</p>
{{end}}{{if .Support}}<p style="color: #666; font-size: small;">{{.SupportLabel}}{{range $i, $s := .Support}}{{if $i}} · {{else}} {{end}}<bdi>{{$s}}</bdi>{{end}}</p>
{{end}}{{if .Operator}}<p style="color: #666; font-size: small;">{{.Operator}}</p>
{{end}}</body>
</html>
`))

// render writes c as a queued mail row to to.
func (c content) render(to string) (mail.Row, error) {
	var text strings.Builder
	for _, p := range c.Intro {
		text.WriteString(p + "\n\n")
	}
	for _, r := range c.Rows {
		text.WriteString(r[0] + ": " + r[1] + "\n")
	}
	if len(c.Rows) > 0 {
		text.WriteString("\n")
	}
	if c.Link != "" {
		text.WriteString(c.LinkText + ":\n" + c.Link + "\n\n")
	}
	for _, p := range c.Footer {
		text.WriteString("-- \n" + p + "\n")
	}
	label := i18n.T(c.Lang, "support.label")
	if len(c.Support) > 0 {
		text.WriteString(label + " " + strings.Join(c.Support, " · ") + "\n")
	}
	if c.Operator != "" {
		text.WriteString(c.Operator + "\n")
	}
	var html bytes.Buffer
	err := htmlTmpl.Execute(&html, struct {
		content
		Dir, SupportLabel string
	}{c, c.Lang.Dir(), label})
	if err != nil {
		return mail.Row{}, fmt.Errorf("render mail: %w", err)
	}
	return mail.Row{ToAddr: to, Subject: c.Subject, TextBody: text.String(), HTMLBody: html.String()}, nil
}

func langOf(locale string) i18n.Lang {
	l, ok := i18n.Parse(locale)
	if !ok {
		return i18n.Default
	}
	return l
}

// ResetMailer queues the reset link for auth.Service (inside its
// transaction). The mail is secret (its body is blanked once sent) and
// expires with the link.
func (n *Notifier) ResetMailer() auth.ResetMailer {
	return func(tx *gorm.DB, u auth.User, token string, expires time.Time) error {
		l := langOf(u.Locale)
		c := content{Lang: l, Subject: i18n.T(l, "mail.reset.subject"),
			Intro:    []string{i18n.T(l, "mail.reset.intro", "email", i18n.UserText(u.Email)), i18n.T(l, "mail.reset.valid", "minutes", int64(auth.ResetLifetime/time.Minute))},
			Link:     n.baseURL + routes.PasswordReset(token),
			LinkText: i18n.T(l, "mail.reset.link"),
			Footer:   []string{i18n.T(l, "mail.reset.ignore")},
		}
		return n.queueSecret(tx, c, u, KindReset, expires)
	}
}

// VerifyMailer queues the link that confirms a new account's address for
// auth.Service (inside its transaction). The mail is secret (its body is
// blanked once sent) and expires with the link.
func (n *Notifier) VerifyMailer() auth.VerifyMailer {
	return func(tx *gorm.DB, u auth.User, token string, expires time.Time) error {
		l := langOf(u.Locale)
		c := content{Lang: l, Subject: i18n.T(l, "mail.verify.subject"),
			Intro:    []string{i18n.T(l, "mail.verify.intro", "email", i18n.UserText(u.Email)), i18n.T(l, "mail.verify.valid", "hours", int64(auth.VerifyLifetime/time.Hour))},
			Link:     n.baseURL + routes.EmailVerify(token),
			LinkText: i18n.T(l, "mail.verify.link"),
			Footer:   []string{i18n.T(l, "mail.verify.ignore")},
		}
		return n.queueSecret(tx, c, u, KindVerify, expires)
	}
}

// queueSecret renders c to u and queues it as a secret mail of kind that
// expires with its link.
func (n *Notifier) queueSecret(tx *gorm.DB, c content, u auth.User, kind string, expires time.Time) error {
	c = n.sign(c, false)
	r, err := c.render(u.Email)
	if err != nil {
		return err
	}
	now := n.now().UTC().Truncate(time.Microsecond)
	uid := u.ID
	r.UserID, r.Kind, r.Secret, r.CreatedAt, r.ExpiresAt = &uid, kind, true, now, &expires
	return mail.Enqueue(tx, r)
}

// MayHaveCharged reports whether a payment that failed for this reason
// may have taken money from the card (the bank reversed it, or answered
// about it in a way we could not credit): its payer gets the "returns
// within 72 hours" notice. A payment that never reached the bank, or that
// the bank says was not completed, took nothing.
func MayHaveCharged(reason string) bool {
	switch reason {
	case "bank_reversed", "reversed_to_card", "amount_mismatch", "verify_rejected", "no_ref_id", "ref_id_reused", "closed_by_admin",
		// An admin's close of a top-up under review after its reverse
		// ended keeps the reverse's reason (topup.StepClose).
		"reverse_refused", "reverse_window_closed", "reverse_differs", "settle_contradicted":
		return true
	}
	return false
}

// event is a payment status change with what its mail needs.
type event struct {
	ID              int64
	TopUpID         int64
	ToStatus        string
	Reason          string
	CreatedAt       time.Time
	InsertedAt      *time.Time // the database's time (PostgreSQL)
	PublicID        string
	AmountRials     int64
	VerifiedRials   *int64
	RefID           *int64
	CardPanMasked   string
	UserID          int64
	Email           string
	Locale          string
	ReceiptsEnabled bool
}

// scanCursor is where a mail scan stands and which rows past it are final.
type scanCursor struct {
	id int64
	// horizon: rows created (by the app's clock) after it are left for a
	// later scan: Settle before now.
	horizon time.Time
	// writersFrom, on PostgreSQL, is the start (the database's clock) of
	// the oldest transaction still open that wrote to the scanned table,
	// or the time of that check when it is earlier: a row inserted after
	// it may have a lower id still to commit, so the scan stops there.
	// Nil on SQLite.
	writersFrom *time.Time
}

// final reports whether the scan may pass a row created at created (the
// app's clock) and inserted at inserted (the database's, nil on SQLite
// and for rows older than migration 00048).
func (c scanCursor) final(created time.Time, inserted *time.Time) bool {
	if created.After(c.horizon) {
		return false
	}
	return c.writersFrom == nil || inserted == nil || inserted.Before(*c.writersFrom)
}

// openCursor makes sure the scan's cursor exists, reads it (locked on
// PostgreSQL: two instances' scans take turns) and says which rows past it
// are final (scanCursor). Rows younger than Settle wait. On PostgreSQL a
// transaction that wrote to table and is still open (its lock on the table
// says so) may hold a lower id than rows committed after it, and may stay
// open longer than Settle (a lock wait, a paused process): rows inserted
// after it began wait too, whatever their age, and so do rows inserted
// after this check (a writer may begin between the check and the rows'
// read). While a writer's start is hidden from this role (another role's
// session, track_activities off), every row stamped with its insert
// waits, and the log says so. SQLite's writers take turns: an id it shows
// is never followed by a lower one committing later.
func (n *Notifier) openCursor(tx *gorm.DB, name, table string, now time.Time) (scanCursor, error) {
	c := scanCursor{horizon: now.Add(-n.Settle)}
	if err := tx.Exec(`INSERT INTO notice_cursors (name, last_event_id) VALUES (?, 0) ON CONFLICT (name) DO NOTHING`, name).Error; err != nil {
		return c, fmt.Errorf("cursor %s: %w", name, err)
	}
	lock := ""
	if n.db.Dialect == store.Postgres {
		lock = " FOR UPDATE"
	}
	if err := tx.Raw(`SELECT last_event_id FROM notice_cursors WHERE name = ?`+lock, name).Scan(&c.id).Error; err != nil {
		return c, fmt.Errorf("cursor %s: %w", name, err)
	}
	if n.db.Dialect != store.Postgres {
		return c, nil
	}
	var open []struct {
		Writers   int64
		Hidden    bool
		Oldest    *time.Time
		CheckedAt time.Time
	}
	if err := store.Scan(tx.Raw(`SELECT COUNT(*) AS writers, COALESCE(bool_or(a.xact_start IS NULL), false) AS hidden,
			MIN(a.xact_start) AS oldest, statement_timestamp() AS checked_at
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.relation = CAST(? AS regclass) AND l.mode = 'RowExclusiveLock' AND l.granted
			AND l.pid IS DISTINCT FROM pg_backend_pid()`, table), &open); err != nil {
		return c, fmt.Errorf("writers of %s still open: %w", table, err)
	}
	if len(open) != 1 {
		return c, fmt.Errorf("writers of %s still open: %d rows", table, len(open))
	}
	o := open[0]
	// A writer that takes its lock on the table after this check began
	// (statement_timestamp: before pg_locks is read, where clock_timestamp
	// would be after it) takes its ids and its inserts' time after it:
	// rows inserted since wait for the next scan, which the rows' read
	// (after this check) could otherwise pass. A writer that held its
	// lock when the check began is in pg_locks.
	from := o.CheckedAt.UTC()
	switch {
	case o.Hidden:
		// Its start unknown: nothing inserted since the table's rows got
		// their time passes until it ends (mail waits, none is lost).
		from = time.Time{}
		n.log.Warn("mail scan held back by a transaction whose start this role cannot see (grant it pg_read_all_stats)", "table", table)
	case o.Oldest != nil && o.Oldest.Add(-time.Second).Before(from):
		// A second's margin for the database's clock stepping back.
		from = o.Oldest.UTC().Add(-time.Second)
		if held := o.CheckedAt.Sub(from); held > heldTooLong {
			n.log.Warn("mail scan held back by a transaction still open", "table", table, "open_for", held.Round(time.Second))
		}
	}
	c.writersFrom = &from
	if n.afterLook != nil {
		n.afterLook(table)
	}
	return c, nil
}

// heldTooLong is how long a writer may hold a mail scan back before each
// scan says so in the log: no money transaction takes this long.
const heldTooLong = 5 * time.Minute

const cursorName = "payments"

// Scan queues the receipts and notices of the payment events since the
// last scan (at most 200 per call), then the card refunds' mails
// (cardrefund.go) and the withdrawals' (withdrawal.go), and returns how
// many mails it queued.
// The cursor and the mails are written in one transaction, and each mail
// has a dedupe key (one receipt, one notice per payment), so a scan that
// dies half-way or runs on two instances at once queues each mail once.
func (n *Notifier) Scan(ctx context.Context) (int, error) {
	now := n.now().UTC().Truncate(time.Microsecond)
	queued := 0
	err := n.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := n.openCursor(tx, cursorName, "topup_events", now)
		if err != nil {
			return err
		}
		var evs []event
		err = tx.Raw(`SELECT e.id, e.topup_id, e.to_status, e.reason, e.created_at, e.inserted_at, p.public_id, p.amount_rials,
				p.verified_amount_rials AS verified_rials, p.ref_id, p.card_pan_masked, u.id AS user_id, u.email, u.locale, u.receipts_enabled
			FROM topup_events e JOIN topups p ON p.id = e.topup_id JOIN users u ON u.id = p.user_id
			WHERE e.id > ? ORDER BY e.id LIMIT 200`, cur.id).Scan(&evs).Error
		if err != nil {
			return err
		}
		last := cur.id
		for _, e := range evs {
			if !cur.final(e.CreatedAt, e.InsertedAt) {
				break // younger events: next scan (a lower id may still commit)
			}
			last = e.ID
			r, ok, err := n.mailFor(e, now)
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
		return tx.Exec(`UPDATE notice_cursors SET last_event_id = ? WHERE name = ?`, last, cursorName).Error
	})
	if err != nil {
		return 0, fmt.Errorf("scan payment events for mail: %w", err)
	}
	refunds, err := n.scanCardRefunds(ctx, now)
	if err != nil {
		return queued + refunds, err
	}
	withdrawals, err := n.scanWithdrawals(ctx, now)
	return queued + refunds + withdrawals, err
}

// mailFor is the receipt or notice an event calls for, if any.
func (n *Notifier) mailFor(e event, now time.Time) (mail.Row, bool, error) {
	l := langOf(e.Locale)
	ref := i18n.ShortRef(e.PublicID)
	link := n.baseURL + routes.TopUpPage(e.PublicID)
	var c content
	var kind string
	switch {
	case e.ToStatus == "credited" && e.ReceiptsEnabled:
		amount := e.AmountRials
		if e.VerifiedRials != nil {
			amount = *e.VerifiedRials
		}
		kind = KindReceipt
		c = content{Lang: l, Subject: i18n.T(l, "mail.receipt.subject", "amount", i18n.Money(amount)),
			Intro: []string{i18n.T(l, "mail.receipt.intro", "amount", i18n.Money(amount))},
			Rows: [][2]string{
				{i18n.T(l, "receipt.amount"), i18n.Tomans(l, amount) + " (" + i18n.Rials(l, amount) + ")"},
				{i18n.T(l, "receipt.id"), ref},
				{i18n.T(l, "receipt.resolved"), i18n.DateTime(l, e.CreatedAt)},
			},
			Link: link, LinkText: i18n.T(l, "mail.receipt.link"),
			Footer: []string{i18n.T(l, "mail.receipt.off")},
		}
		if e.RefID != nil {
			c.Rows = append(c.Rows, [2]string{i18n.T(l, "receipt.ref_id"), i18n.Digits(l, strconv.FormatInt(*e.RefID, 10))})
		}
		if e.CardPanMasked != "" {
			c.Rows = append(c.Rows, [2]string{i18n.T(l, "receipt.card"), i18n.Digits(l, e.CardPanMasked)})
		}
	case e.ToStatus == "failed" && MayHaveCharged(e.Reason):
		kind = KindNotice
		c = content{Lang: l, Subject: i18n.T(l, "mail.notice.subject", "ref", ref),
			Intro: []string{i18n.T(l, "mail.notice.intro", "amount", i18n.Money(e.AmountRials)), i18n.T(l, "mail.notice.72h")},
			Rows: [][2]string{
				{i18n.T(l, "receipt.amount"), i18n.Tomans(l, e.AmountRials)},
				{i18n.T(l, "receipt.id"), ref},
				{i18n.T(l, "receipt.resolved"), i18n.DateTime(l, e.CreatedAt)},
			},
			Link: link, LinkText: i18n.T(l, "mail.notice.link"),
			Footer: []string{i18n.T(l, "mail.notice.support")},
		}
	default:
		return mail.Row{}, false, nil
	}
	c = n.sign(c, kind == KindNotice)
	r, err := c.render(e.Email)
	if err != nil {
		return mail.Row{}, false, err
	}
	key := kind + ":" + strconv.FormatInt(e.TopUpID, 10)
	uid := e.UserID
	r.UserID, r.Kind, r.DedupeKey, r.CreatedAt = &uid, kind, &key, now
	return r, true, nil
}

// Mail kinds of a transfer (mails.kind), one of each per transfer (its
// dedupe key is the kind and the transfer's id).
const (
	KindTransferSent     = "transfer_sent"
	KindTransferReceived = "transfer_received"
)

const transferCursor = "transfers"

// transferRow is a committed transfer with what its two mails need.
type transferRow struct {
	ID                int64
	PublicID          string
	AmountRials       int64
	Note              string
	CreatedAt         time.Time
	InsertedAt        *time.Time // the database's time (PostgreSQL)
	SenderID          int64
	SenderEmail       string
	SenderLocale      string
	SenderReceipts    bool
	RecipientID       int64
	RecipientEmail    string
	RecipientLocale   string
	RecipientReceipts bool
}

// ScanTransfers queues the mails of the transfers made since the last
// scan (at most 200 per call): one to the sender and one to the
// recipient, each in their language and only when their receipts switch
// is on. As Scan does for payment events: the cursor and the mails in one
// transaction, a dedupe key per mail, transfers younger than Settle left
// for the next scan (a lower id may still be committing). Nothing is
// added to the transfer's own transaction: a mail never slows or fails a
// transfer.
func (n *Notifier) ScanTransfers(ctx context.Context) (int, error) {
	now := n.now().UTC().Truncate(time.Microsecond)
	queued := 0
	err := n.db.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := n.openCursor(tx, transferCursor, "transfers", now)
		if err != nil {
			return err
		}
		var trs []transferRow
		if err := tx.Raw(`SELECT t.id, t.public_id, t.amount_rials, t.note, t.created_at, t.inserted_at,
				s.id AS sender_id, s.email AS sender_email, s.locale AS sender_locale, s.receipts_enabled AS sender_receipts,
				r.id AS recipient_id, r.email AS recipient_email, r.locale AS recipient_locale, r.receipts_enabled AS recipient_receipts
			FROM transfers t JOIN users s ON s.id = t.sender_user_id JOIN users r ON r.id = t.recipient_user_id
			WHERE t.id > ? ORDER BY t.id LIMIT 200`, cur.id).Scan(&trs).Error; err != nil {
			return err
		}
		last := cur.id
		for _, t := range trs {
			if !cur.final(t.CreatedAt, t.InsertedAt) {
				break
			}
			last = t.ID
			rows, err := n.transferMails(t, now)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if err := mail.Enqueue(tx, r); err != nil {
					return err
				}
				queued++
			}
		}
		if last == cur.id {
			return nil
		}
		return tx.Exec(`UPDATE notice_cursors SET last_event_id = ? WHERE name = ?`, last, transferCursor).Error
	})
	if err != nil {
		return 0, fmt.Errorf("scan transfers for mail: %w", err)
	}
	return queued, nil
}

// transferMails are a transfer's mails: to each of its people who takes
// mail about their money.
func (n *Notifier) transferMails(t transferRow, now time.Time) ([]mail.Row, error) {
	var out []mail.Row
	for _, side := range []struct {
		userID          int64
		addr, other     string
		locale          string
		receipts, isRcv bool
	}{{t.SenderID, t.SenderEmail, t.RecipientEmail, t.SenderLocale, t.SenderReceipts, false},
		{t.RecipientID, t.RecipientEmail, t.SenderEmail, t.RecipientLocale, t.RecipientReceipts, true}} {
		if !side.receipts {
			continue
		}
		l := langOf(side.locale)
		key, kind := "mail.transfer_sent.", KindTransferSent
		if side.isRcv {
			key, kind = "mail.transfer_received.", KindTransferReceived
		}
		c := content{Lang: l, Subject: i18n.T(l, key+"subject", "amount", i18n.Money(t.AmountRials)),
			Intro: []string{i18n.T(l, key+"intro", "amount", i18n.Money(t.AmountRials), "who", i18n.UserText(side.other))},
			Rows: [][2]string{
				{i18n.T(l, "receipt.amount"), i18n.Tomans(l, t.AmountRials) + " (" + i18n.Rials(l, t.AmountRials) + ")"},
				{i18n.T(l, "transfer.id"), t.PublicID},
				{i18n.T(l, "transfer.when"), i18n.DateTime(l, t.CreatedAt)},
			},
			Link: n.baseURL + routes.TransferReceipt(t.PublicID), LinkText: i18n.T(l, "mail.receipt.link"),
			Footer: []string{i18n.T(l, "mail.receipt.off")},
		}
		if t.Note != "" {
			c.Rows = append(c.Rows, [2]string{i18n.T(l, "transfer.note"), t.Note})
		}
		r, err := n.sign(c, false).render(side.addr)
		if err != nil {
			return nil, err
		}
		dedupe := kind + ":" + t.PublicID
		uid := side.userID
		r.UserID, r.Kind, r.DedupeKey, r.CreatedAt = &uid, kind, &dedupe, now
		out = append(out, r)
	}
	return out, nil
}
