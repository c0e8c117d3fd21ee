package topupread

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/email"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/store"
)

// SearchKind is what a search text is taken for.
type SearchKind string

// Search kinds, told apart by the text's shape.
const (
	SearchNone      SearchKind = ""
	SearchPublicID  SearchKind = "public_id" // 24 base32 characters
	SearchAuthority SearchKind = "authority" // the gateway's long token
	SearchRefID     SearchKind = "ref_id"    // the bank's reference: digits
	SearchCard      SearchKind = "card"      // the last four digits of the card
	SearchShortRef  SearchKind = "short_ref" // the receipt's reference: the public id's first 12 characters
	// SearchShortRefOrEmail: 12 lower-case letters, which may be a short
	// reference typed without dashes or part of an e-mail address: a
	// Reader settles which before it searches (Reader.settle).
	SearchShortRefOrEmail SearchKind = "short_ref_or_email"
	SearchEmail           SearchKind = "email" // any other text: part of an e-mail address
)

var (
	publicIDRE  = regexp.MustCompile(`^[a-z2-7]{24}$`)
	authorityRE = regexp.MustCompile(`^[A-Za-z0-9]{25,64}$`)
	digitsRE    = regexp.MustCompile(`^[0-9]{1,19}$`)
)

// shortRefRE is the receipt's short reference as people read it out:
// 12 base32 characters, in groups of four with dashes ("Q6SX-INDU-UGAZ"),
// or without them.
var shortRefRE = regexp.MustCompile(`^[A-Za-z2-7]{4}-?[A-Za-z2-7]{4}-?[A-Za-z2-7]{4}$`)

// shortRef returns the public id prefix a short reference stands for, or
// "" when q is not one, and whether q can only be a reference. Without
// dashes, a run of 12 lower-case letters may as well be part of an e-mail
// address (sure is false): only upper case or a digit, as receipts print
// it, makes it surely a reference.
func shortRef(q string) (prefix string, sure bool) {
	if !shortRefRE.MatchString(q) {
		return "", false
	}
	bare := strings.ReplaceAll(q, "-", "")
	sure = bare != q || strings.ToLower(q) != q || strings.ContainsAny(q, "234567")
	return strings.ToLower(bare), sure
}

// NormalizeQuery is the search text as it is looked up: trimmed, with
// Persian and Arabic-Indic digits read as Latin ones (a bank reference or
// card digits copied from a Persian receipt).
func NormalizeQuery(q string) string { return strings.TrimSpace(money.LatinDigits(q)) }

// KindOf tells what the search text q is: a card suffix (4 digits), a bank
// reference (other digits), a receipt's short reference, a public id, an
// authority, or else part of an e-mail address.
func KindOf(q string) SearchKind {
	q = NormalizeQuery(q)
	switch {
	case q == "":
		return SearchNone
	case strings.Contains(q, "@"):
		return SearchEmail
	case len(q) == 4 && digitsRE.MatchString(q):
		return SearchCard
	case digitsRE.MatchString(q):
		return SearchRefID
	case publicIDRE.MatchString(q):
		return SearchPublicID
	}
	if pre, sure := shortRef(q); pre != "" {
		if sure {
			return SearchShortRef
		}
		return SearchShortRefOrEmail
	}
	if authorityRE.MatchString(q) {
		return SearchAuthority
	}
	return SearchEmail
}

// Filter is the current view of the payment list.
type Filter struct {
	Query    string   // search text (see KindOf)
	Statuses []string // any of these (none: all)
	Gateway  string   // as stored (the driver's name)
	// From and To bound created_at: From inclusive, To exclusive (zero:
	// open).
	From, To time.Time
	// MinRials and MaxRials bound the amount, inclusive (0: open).
	MinRials, MaxRials int64
	Oldest             bool // oldest first (default newest first)
	// UserID keeps one user's payments (0: everyone's).
	UserID int64
	// settled is the search's kind once Reader.settle has decided a text
	// that may be either a short reference or part of an e-mail address
	// ("" before: KindOf's).
	settled SearchKind
}

// prefixRange is the range of the public ids that start with pre: pre
// itself, up to pre followed by as many z's as make a whole id. A public
// id is 24 of [a-z2-7], and z sorts after every one of them in byte order
// and in a linguistic collation alike (a bound such as pre + "~" holds in
// byte order only: ICU and glibc's en_US sort punctuation before letters,
// and the range would be empty).
func prefixRange(pre string) (lo, hi string) {
	return pre, pre + strings.Repeat("z", max(publicIDLen-len(pre), 0))
}

// publicIDLen is the length of a top-up's public id (publicIDRE).
const publicIDLen = 24

// kind is f's search kind: KindOf its text, unless settle decided it;
// none for an empty text, whatever was settled.
func (f Filter) kind() SearchKind {
	if NormalizeQuery(f.Query) == "" {
		return SearchNone
	}
	if f.settled != "" {
		return f.settled
	}
	return KindOf(f.Query)
}

// settle decides a search of twelve lower-case letters, which may be a
// receipt's short reference typed without dashes or part of an e-mail
// address (SearchShortRefOrEmail): a short reference when a top-up's
// public id starts with it (one probe of the unique index), else part of
// an address, searched as every other part is (bounded by
// FragmentUsers, a page per person). Searched as both at once, "the
// reference's range or the people's top-ups" matched no index: the list
// walked the whole table newest first, and each status's count its whole
// status (a name such as "mohammadreza" at 10M top-ups). A random
// reference that is also part of an address finds the reference alone.
func (r *Reader) settle(ctx context.Context, f Filter) (Filter, error) {
	if f.settled != "" || KindOf(f.Query) != SearchShortRefOrEmail {
		return f, nil
	}
	pre, _ := shortRef(NormalizeQuery(f.Query))
	var n int64
	lo, hi := prefixRange(pre)
	if err := r.page().Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM topups WHERE public_id BETWEEN ? AND ? LIMIT 1) AS m`,
		lo, hi).Row().Scan(&n); err != nil {
		return f, fmt.Errorf("top-ups whose reference starts with %q: %w", pre, err)
	}
	f.settled = SearchEmail
	if n > 0 {
		f.settled = SearchShortRef
	}
	return f, nil
}

// Cursor is the position after the last row of a page: keyset pagination
// on (created_at, id), stable when timestamps tie.
type Cursor struct {
	CreatedAt time.Time
	ID        int64
}

// String encodes the cursor for a URL.
func (c Cursor) String() string {
	return strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "-" + strconv.FormatInt(c.ID, 10)
}

// ErrBadCursor is returned for a cursor that was not made by String.
var ErrBadCursor = errors.New("malformed cursor")

// ParseCursor reads a cursor made by Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	at, id, ok := strings.Cut(s, "-")
	if !ok {
		return Cursor{}, ErrBadCursor
	}
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || us < 0 {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{CreatedAt: time.UnixMicro(us).UTC(), ID: n}, nil
}

// TopUp is one row of the list.
type TopUp struct {
	ID            int64
	PublicID      string
	UserID        int64
	Email         string
	AmountRials   int64
	Gateway       string
	Authority     *string
	RefID         *int64
	CardPANMasked string
	Status        string
	StatusReason  string
	CreatedAt     time.Time
	ResolvedAt    *time.Time
}

// PageSize is how many payments a page of the list shows.
const PageSize = 50

const topUpColumns = "p.id, p.public_id, p.user_id, u.email, p.amount_rials, p.gateway, p.authority, p.ref_id, " +
	"p.card_pan_masked, p.status, p.status_reason, p.created_at, p.resolved_at"

// statusList writes statuses as SQL literals. They are checked against the
// fixed set first, so no text of the request reaches the SQL; literals
// (not parameters) let PostgreSQL match the partial index of open
// statuses.
func statusList(statuses []string) (string, error) {
	quoted := make([]string, 0, len(statuses))
	for _, s := range statuses {
		if !ValidStatus(s) {
			return "", fmt.Errorf("unknown status %q", s)
		}
		quoted = append(quoted, "'"+s+"'")
	}
	return strings.Join(quoted, ", "), nil
}

// gatewayNameRE is a gateway's name that is safe to write as an SQL
// literal.
var gatewayNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// where applies the filter to a query over "payments AS p" (the status
// condition only when withStatus).
func (r *Reader) where(tx *gorm.DB, f Filter, withStatus bool) (*gorm.DB, error) {
	if withStatus && len(f.Statuses) > 0 {
		list, err := statusList(f.Statuses)
		if err != nil {
			return nil, err
		}
		if len(f.Statuses) == 1 {
			tx = tx.Where("p.status = " + list)
		} else {
			tx = tx.Where("p.status IN (" + list + ")")
		}
	}
	if f.Gateway != "" {
		// A literal when it can be one (every gateway's name is a bare
		// lower-case word): the generic plan of "p.gateway = $1" assumes
		// an average gateway and walks the newest top-ups filtering by it,
		// which for a gateway that takes one top-up in a thousand reads
		// almost every top-up (TestScalePagesUseIndexes).
		if gatewayNameRE.MatchString(f.Gateway) {
			tx = tx.Where("p.gateway = '" + f.Gateway + "'")
		} else {
			tx = tx.Where("p.gateway = ?", f.Gateway)
		}
	}
	if f.UserID != 0 {
		tx = tx.Where("p.user_id = ?", f.UserID)
	}
	if !f.From.IsZero() {
		tx = tx.Where("p.created_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		tx = tx.Where("p.created_at < ?", f.To.UTC())
	}
	switch {
	case f.MinRials > 0 && f.MinRials == f.MaxRials:
		// One amount ("exactly 50,000 tomans"): written as "=", so that
		// the list walks (amount_rials, created_at, id) in its order and
		// stops at the page, and each capped count per status is one
		// range of (amount_rials, status, created_at, id) (migration
		// 00031); as a range of one value the planner sorted every
		// top-up of the amount and filtered each count by status.
		tx = tx.Where("p.amount_rials = ?", f.MinRials)
	default:
		if f.MinRials > 0 {
			tx = tx.Where("p.amount_rials >= ?", f.MinRials)
		}
		if f.MaxRials > 0 {
			tx = tx.Where("p.amount_rials <= ?", f.MaxRials)
		}
	}
	q := NormalizeQuery(f.Query)
	switch f.kind() {
	case SearchPublicID:
		tx = tx.Where("p.public_id = ?", q)
	case SearchShortRef:
		// A prefix of the unique public id, as a range the index serves
		// on both databases.
		pre, _ := shortRef(q)
		lo, hi := prefixRange(pre)
		tx = tx.Where("p.public_id BETWEEN ? AND ?", lo, hi)
	case SearchShortRefOrEmail:
		return nil, errors.New("topupread: a search that may be a reference or part of an address is searched once settled")
	case SearchAuthority:
		tx = tx.Where("p.authority = ?", q)
	case SearchRefID:
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			n = -1 // more digits than any reference: finds nothing
		}
		tx = tx.Where("p.ref_id = ?", n)
	case SearchCard:
		tx = tx.Where(r.db.RightChars("p.card_pan_masked", 4)+" = ? AND p.card_pan_masked <> ''", q)
	case SearchEmail:
		if email.LooksWhole(q) {
			// A whole address is that user (the unique index on
			// lower(email)): "=", not IN, so that the planner walks the
			// user's top-ups in the list's order and stops at the page
			// (or the count's cap) instead of sorting all of them.
			tx = tx.Where(`p.user_id = (SELECT id FROM users WHERE lower(email) = ?)`, strings.ToLower(q))
		} else {
			tx = tx.Where(`p.user_id IN (SELECT id FROM users WHERE lower(email) LIKE ? ESCAPE '\')`,
				store.Containing(strings.ToLower(q)))
		}
	}
	return tx, nil
}

// FragmentUsers bounds a search by part of an e-mail address: a text found
// in more addresses than this is refused (FragmentTooWide), so that the
// list reads at most this many people's newest top-ups, a page each.
const FragmentUsers = 200

// emailFragment returns the LIKE pattern of f's search when it is part of
// an e-mail address (not a whole one), else "".
func emailFragment(f Filter) string {
	q := NormalizeQuery(f.Query)
	if f.kind() != SearchEmail || email.LooksWhole(q) {
		return ""
	}
	return store.Containing(strings.ToLower(q))
}

// FragmentTooShort reports whether f searches by part of an e-mail address
// that holds no three letters or digits in a row: the trigram index finds
// nothing by it, and the search would read every user
// (store.TrigramSearchable); the page then asks for a longer part.
func (r *Reader) FragmentTooShort(ctx context.Context, f Filter) (bool, error) {
	f, err := r.settle(ctx, f)
	if err != nil {
		return false, err
	}
	return emailFragment(f) != "" && !store.TrigramSearchable(NormalizeQuery(f.Query)), nil
}

// FragmentTooWide reports whether f searches by part of an e-mail address
// that more than FragmentUsers addresses contain (the trigram index finds
// them; at most FragmentUsers+1 are counted): the page then asks for a
// longer part instead of reading their top-ups.
func (r *Reader) FragmentTooWide(ctx context.Context, f Filter) (bool, error) {
	f, err := r.settle(ctx, f)
	if err != nil {
		return false, err
	}
	pat := emailFragment(f)
	if pat == "" {
		return false, nil
	}
	var n int64
	err = r.page().Gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM users WHERE lower(email) LIKE ? ESCAPE '\' LIMIT `+
		strconv.Itoa(FragmentUsers+1)+`) AS m`, pat).Row().Scan(&n)
	if err != nil {
		return false, fmt.Errorf("users matching %q: %w", f.Query, err)
	}
	return n > FragmentUsers, nil
}

// List returns a page of the list under f, after the cursor (nil: the
// first page), and the cursor of the next page (nil: this is the last).
// A search by part of an e-mail address reads each matching person's
// newest top-ups from their index (a page each, at most FragmentUsers
// people) and keeps the newest of those: never every top-up of people
// with thousands (on PostgreSQL, with LATERAL; SQLite, one process's
// database, reads them as the other searches do).
func (r *Reader) List(ctx context.Context, f Filter, after *Cursor, limit int) ([]TopUp, *Cursor, error) {
	if limit <= 0 {
		limit = PageSize
	}
	f, err := r.settle(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	order := "p.created_at DESC, p.id DESC"
	if f.Oldest {
		order = "p.created_at ASC, p.id ASC"
	}
	page := func(tx *gorm.DB) *gorm.DB {
		if after != nil {
			if f.Oldest {
				tx = tx.Where("(p.created_at, p.id) > (?, ?)", after.CreatedAt.UTC(), after.ID)
			} else {
				tx = tx.Where("(p.created_at, p.id) < (?, ?)", after.CreatedAt.UTC(), after.ID)
			}
		}
		return tx.Order(order).Limit(limit + 1)
	}
	var tx *gorm.DB
	if pat := emailFragment(f); pat != "" && r.db.Dialect == store.Postgres {
		g := f
		g.Query, g.settled = "", ""
		inner, err := r.where(r.page().Gorm.Table("topups AS p").Select("p.created_at, p.id").Where("p.user_id = u.id"), g, true)
		if err != nil {
			return nil, nil, err
		}
		// Each person's page is read as keys only, from the index
		// (user_id, created_at, id) without their rows; only the page's
		// own rows are read whole. Reading each person's rows read a
		// heap page per row: at 10M, 5,661 pages for 111 people, 385 ms
		// cold, where the keys take 191 pages, 27 ms.
		keys := r.page().Gorm.Table("users AS u").Select("k.id").
			Joins("CROSS JOIN LATERAL (?) AS k", page(inner)).
			Where(`u.id IN (SELECT id FROM users WHERE lower(email) LIKE ? ESCAPE '\' LIMIT `+strconv.Itoa(FragmentUsers+1)+`)`, pat).
			Order(strings.ReplaceAll(order, "p.", "k.")).Limit(limit + 1)
		tx = r.page().Gorm.WithContext(ctx).Table("(?) AS top", keys).Select(topUpColumns).
			Joins("JOIN topups p ON p.id = top.id").Joins("JOIN users u ON u.id = p.user_id").
			Order(order)
	} else if len(f.Statuses) > 1 && r.db.Dialect == store.Postgres {
		// Several statuses: each one's page from its own index range,
		// then the newest of those. As one IN list the plan walked the
		// open top-ups' partial index and read the row of every entry in
		// another status (at 10M, the 10,000 in review, a heap page each:
		// 300 ms cold for "awaiting or pending"); PostgreSQL before 17
		// does not apply an IN list on a later key of an ordered walk.
		branches := make([]any, 0, len(f.Statuses))
		for i, st := range f.Statuses {
			if slices.Contains(f.Statuses[:i], st) {
				continue // a status named twice is one range, not two
			}
			g := f
			g.Statuses = []string{st}
			b, err := r.where(r.page().Gorm.Table("topups AS p").Select("p.*"), g, true)
			if err != nil {
				return nil, nil, err
			}
			branches = append(branches, page(b))
		}
		union := "(?)" + strings.Repeat(" UNION ALL (?)", len(branches)-1) // at least one
		tx = page(r.page().Gorm.WithContext(ctx).Table("(?) AS p", r.page().Gorm.Raw(union, branches...)).
			Select(topUpColumns).Joins("JOIN users u ON u.id = p.user_id"))
	} else {
		var err error
		tx, err = r.where(r.page().Gorm.WithContext(ctx).Table("topups AS p").Select(topUpColumns).Joins("JOIN users u ON u.id = p.user_id"), f, true)
		if err != nil {
			return nil, nil, err
		}
		tx = page(tx)
	}
	rows, err := scanTopUps(tx)
	if err != nil {
		return nil, nil, fmt.Errorf("list payments: %w", err)
	}
	var next *Cursor
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		next = &Cursor{CreatedAt: last.CreatedAt.UTC(), ID: last.ID}
	}
	return rows, next, nil
}

// scanPayments runs a query selecting paymentColumns and reads its rows
// with database/sql's Scan, in the columns' order: GORM's reflective Scan
// into structs cost more than the query on a page of 50.
func scanTopUps(tx *gorm.DB) ([]TopUp, error) {
	rs, err := tx.Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []TopUp
	for rs.Next() {
		var p TopUp
		if err := rs.Scan(&p.ID, &p.PublicID, &p.UserID, &p.Email, &p.AmountRials, &p.Gateway, &p.Authority, &p.RefID,
			&p.CardPANMasked, &p.Status, &p.StatusReason, &p.CreatedAt, &p.ResolvedAt); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rs.Err()
}

// EachTopUp calls fn for every payment under f, in the list's order,
// reading a batch at a time (never the whole result in memory).
func (r *Reader) EachTopUp(ctx context.Context, f Filter, after *Cursor, fn func(TopUp) error) error {
	for {
		rows, next, err := r.List(ctx, f, after, 500)
		if err != nil {
			return err
		}
		for _, p := range rows {
			if err := fn(p); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		after = next
	}
}

// CountCap bounds each per-status count of the list: a filter matching
// more shows "more than CountCap", so that counting never reads millions
// of rows (six capped counts stay within the list's time budget on a
// table of millions; the dashboard's totals by status go further, see
// Totals).
const CountCap = 1_000

// StatusCounts counts the payments of each status under f (its status
// condition left out, so every status has its number), each up to limit+1:
// a count above limit means "more than limit". The six capped counts are
// scalar subqueries of one statement: one round trip and one plan instead
// of six.
func (r *Reader) StatusCounts(ctx context.Context, f Filter, limit int) (map[string]int64, error) {
	f, err := r.settle(ctx, f)
	if err != nil {
		return nil, err
	}
	cols := make([]string, len(Statuses))
	subs := make([]any, len(Statuses))
	for i, st := range Statuses {
		sub := r.page().Gorm.WithContext(ctx).Table("topups AS p").Select("1").Where("p.status = '" + st + "'")
		sub, err := r.where(sub, f, false)
		if err != nil {
			return nil, err
		}
		// In the list's order, so that each count walks the same index as
		// the list and stops at the cap (never a scan of the whole table).
		subs[i] = sub.Order("p.created_at DESC, p.id DESC").Limit(limit + 1)
		cols[i] = "(SELECT COUNT(*) FROM (?) AS t" + strconv.Itoa(i) + ") AS n" + strconv.Itoa(i)
	}
	row := r.page().Gorm.WithContext(ctx).Raw("SELECT "+strings.Join(cols, ", "), subs...).Row()
	ns := make([]int64, len(Statuses))
	dest := make([]any, len(Statuses))
	for i := range ns {
		dest[i] = &ns[i]
	}
	if err := row.Scan(dest...); err != nil {
		return nil, fmt.Errorf("count payments by status: %w", err)
	}
	out := make(map[string]int64, len(Statuses))
	for i, st := range Statuses {
		out[st] = ns[i]
	}
	return out, nil
}
