package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Group commit (PostgreSQL, Write only): a transfer touching a hot account
// holds that row's lock from its statement through its commit's WAL flush,
// so transfers of one hot account run one commit at a time whatever the
// client. With GroupCommit, Write calls queue; a movement whose accounts
// are in flight goes to the ledger's one group writer, which takes what is
// waiting for it when its previous group has committed (up to size, with
// no delay added) and writes it as one database transaction: several
// transfers per flush. The others are written alone by their callers, side
// by side. See docs/design/ledger.md.

// Option configures a Ledger (New).
type Option func(*Ledger)

// GroupCommit makes Write on PostgreSQL write concurrent movements that
// share an account (a hot one) in groups of up to size per database
// transaction, from two goroutines of the ledger's, which its owner stops
// with Close. On SQLite, and with size < 2, it does nothing. Post, given
// a caller's transaction, is never grouped.
func GroupCommit(size int) Option {
	return func(l *Ledger) { l.groupMax = size }
}

// batchTimeout bounds one group's round trip: past it, the group's
// callers are told its outcome is unknown (ErrOutcomeUnknown).
const batchTimeout = 30 * time.Second

// errSingly is a batcher's answer to a request it did not write: the
// caller writes it on its own (postOne), as without group commit. Nothing
// of the request was committed.
var errSingly = errors.New("ledger: write on its own")

// errSinglyUnsure is errSingly for a group whose session PostgreSQL ended
// (a FATAL): perhaps after its commit. Written alone again under its
// reference, a committed movement is a replay; a caller whose context has
// ended cannot write it again, and looks it up instead (Write).
var errSinglyUnsure = fmt.Errorf("%w: the group's session ended, perhaps after its commit", errSingly)

// errNotSent marks a caller's context that ended before its movement was
// sent (waiting for the queue, or in it): nothing of it was written, so
// the outcome is known (settled), unlike a context that ends mid-statement.
var errNotSent = errors.New("ledger: not sent")

// notSent is ctxErr, the movement never sent.
func notSent(ctxErr error) error { return fmt.Errorf("%w: %w", errNotSent, ctxErr) }

// The states of a queued request: the batcher takes it, or its caller,
// cancelled, withdraws it, whichever comes first.
const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

type request struct {
	ctx   context.Context
	e     Entry
	net   []Posting
	state atomic.Int32
	out   chan result // buffered: the batcher never waits for its caller
	// alone: the dispatcher found none of its accounts in flight; its
	// caller writes it (set before out is sent).
	alone bool
}

type result struct {
	t   Transaction
	err error
}

// batcher is a ledger's group commit: every Write's queue, read by a
// dispatcher, and the queue of the group writer. A movement none of whose
// accounts is being written goes back to its caller, which writes it
// alone (its statement on its own, as without group commit: movements
// between unrelated accounts commit side by side on many connections). A
// movement with an account being written (a hot account) goes to the
// group writer, which writes what is waiting for it when its previous group
// has committed, as one group: the hot account's movements then take its
// lock once per group, not once each.
type batcher struct {
	l      *Ledger
	max    int
	queue  chan *request // every Write, to the dispatcher
	groupQ chan *request // those with an account in flight, to the group writer
	wg     sync.WaitGroup
	// before runs once each group is taken, before it is written, and all
	// sends every movement to the group writer (tests hold the writer
	// there).
	before func()
	all    bool
	// timeout bounds one group's round trip (batchTimeout).
	timeout time.Duration

	mu     sync.RWMutex // closed, and the queue's closing
	closed bool

	fmu      sync.Mutex
	inflight map[int64]int // accounts of the movements being written, or queued to the group writer

	groups, grouped atomic.Int64 // groups of two or more written, and their movements
}

func newBatcher(l *Ledger, max int, timeout time.Duration, before func(), all bool) *batcher {
	b := &batcher{l: l, max: max, queue: make(chan *request, 16*max), groupQ: make(chan *request, 16*max),
		before: before, all: all, timeout: timeout, inflight: map[int64]int{}}
	b.wg.Go(b.dispatch)
	b.wg.Go(b.run)
	return b
}

// Close stops the ledger's group commit (GroupCommit), once every request
// already queued is written; a Write after it is written on its own. A
// ledger without group commit has nothing to stop.
func (l *Ledger) Close() {
	b := l.batch
	if b == nil {
		return
	}
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// GroupStats reports how many groups of two or more movements Write's
// group commit has committed, and how many movements they held (0, 0
// without group commit).
func (l *Ledger) GroupStats() (groups, movements int64) {
	if l.batch == nil {
		return 0, 0
	}
	return l.batch.groups.Load(), l.batch.grouped.Load()
}

// write is Write through the queue: e's outcome, or errSingly when the
// ledger is closed (the caller writes it on its own).
func (b *batcher) write(ctx context.Context, e Entry) (Transaction, error) {
	net, err := Validate(e)
	if err != nil {
		return Transaction{}, err
	}
	if err := ctx.Err(); err != nil {
		return Transaction{}, notSent(err)
	}
	r := &request{ctx: ctx, e: e, net: net, out: make(chan result, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return Transaction{}, errSingly
	}
	select {
	case b.queue <- r:
	case <-ctx.Done():
		b.mu.RUnlock()
		return Transaction{}, notSent(ctx.Err())
	}
	b.mu.RUnlock()
	var res result
	select {
	case res = <-r.out:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqWithdrawn) {
			return Transaction{}, notSent(ctx.Err()) // not taken: never written
		}
		res = <-r.out // taken: its real outcome
	}
	if r.alone {
		// Nothing of its accounts in flight: written alone, here, unless
		// ctx ended meanwhile: then nothing is sent, and nothing written.
		defer b.release(r.net)
		if err := ctx.Err(); err != nil {
			return Transaction{}, notSent(err)
		}
		return b.l.Post(b.l.db.Gorm.WithContext(ctx), e)
	}
	return res.t, res.err
}

// release takes ps's accounts off the ones in flight.
func (b *batcher) release(ps []Posting) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	for _, p := range ps {
		if b.inflight[p.AccountID]--; b.inflight[p.AccountID] <= 0 {
			delete(b.inflight, p.AccountID)
		}
	}
}

// dispatch sends each request with an account in flight to the group
// writer, and every other back to its caller to be written alone, until
// the queue is closed and empty.
func (b *batcher) dispatch() {
	defer close(b.groupQ)
	for r := range b.queue {
		if r.ctx.Err() != nil {
			if r.state.CompareAndSwap(reqQueued, reqWithdrawn) {
				r.out <- result{err: notSent(r.ctx.Err())}
			}
			continue
		}
		if r.state.Load() != reqQueued {
			continue // withdrawn
		}
		b.fmu.Lock()
		busy := b.all
		for _, p := range r.net {
			busy = busy || b.inflight[p.AccountID] > 0
			b.inflight[p.AccountID]++
		}
		b.fmu.Unlock()
		switch {
		case busy:
			b.groupQ <- r
		case r.state.CompareAndSwap(reqQueued, reqTaken):
			r.alone = true
			r.out <- result{err: errSingly}
		default:
			b.release(r.net) // withdrawn meanwhile
		}
	}
}

// run takes what waits for the group writer, up to max at a time, and
// writes it, until its queue is closed and empty.
func (b *batcher) run() {
	group := make([]*request, 0, b.max)
	for r := range b.groupQ {
		group = append(group[:0], r)
	fill:
		for len(group) < b.max {
			select {
			case r, ok := <-b.groupQ:
				if !ok {
					break fill
				}
				group = append(group, r)
			default:
				break fill
			}
		}
		live := group[:0]
		for _, r := range group {
			switch {
			case r.ctx.Err() != nil:
				if r.state.CompareAndSwap(reqQueued, reqWithdrawn) {
					r.out <- result{err: notSent(r.ctx.Err())}
				}
				b.release(r.net)
			case r.state.CompareAndSwap(reqQueued, reqTaken):
				live = append(live, r)
			default:
				b.release(r.net) // withdrawn
			}
		}
		if b.before != nil {
			b.before()
		}
		b.l.writeGroup(live, b.timeout)
		for _, r := range live {
			b.release(r.net)
		}
		clear(group)
	}
}

// writeGroup writes the requests of one group and answers each, within
// timeout. One request alone is written alone, postOne's statement as
// Write sends it without group commit (the worker waits for it: meanwhile
// the next group gathers). Two or more are sent in one round trip (a
// pipeline, one implicit transaction, one commit): a statement locking
// every account of the group in ascending id, then each request's own
// guarded statement (groupSQL), which writes nothing and says why when it
// is refused, so that one refusal spoils no other. An error PostgreSQL
// reports means nothing of the group was committed: each request goes back
// to its caller, to be written alone (errSingly). Any other error (the
// connection lost, the timeout) leaves the commit's outcome unknown: every
// request of the group, or the one alone, is answered ErrOutcomeUnknown.
func (l *Ledger) writeGroup(reqs []*request, timeout time.Duration) {
	switch len(reqs) {
	case 0:
		return
	case 1:
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		t, err := l.Post(l.db.Gorm.WithContext(ctx), reqs[0].e)
		cancel()
		if err != nil && !settled(err) {
			err = fmt.Errorf("ledger: %s %s written alone: %w: %w", reqs[0].e.Kind, reqs[0].e.Reference, ErrOutcomeUnknown, err)
		}
		reqs[0].out <- result{t: t, err: err}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	answer := func(err error) {
		for _, r := range reqs {
			r.out <- result{err: err}
		}
	}
	sqlDB, err := l.db.Gorm.DB()
	if err != nil {
		answer(errSingly)
		return
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		answer(errSingly) // nothing sent
		return
	}
	defer func() { _ = conn.Close() }() // back to the pool; a broken one is dropped by it
	var out []result
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errSingly
		}
		out, err = sendGroup(ctx, c.Conn(), reqs)
		return err
	})
	switch {
	case err == nil:
		if l.batch != nil {
			l.batch.groups.Add(1)
			l.batch.grouped.Add(int64(len(reqs)))
		}
		for i, r := range reqs {
			r.out <- out[i]
		}
	case errors.Is(err, errSingly), rolledBack(err):
		// PostgreSQL refused a statement or the commit: the implicit
		// transaction rolled back whole.
		answer(errSingly)
	case errors.As(err, new(*pgconn.PgError)):
		// PostgreSQL ended the session (a FATAL), perhaps after the
		// commit: each movement is written again under its reference.
		answer(errSinglyUnsure)
	default:
		answer(fmt.Errorf("ledger: a group of %d movements: %w: %w", len(reqs), ErrOutcomeUnknown, err))
	}
}

// settled reports whether err, from a statement sent alone in its own
// transaction, says for sure that nothing was committed: a refusal, or an
// error PostgreSQL reported as the statement's (rolledBack), a connection
// that could not be made (nothing was sent on it), or a context that ended
// before it was sent. Any other error (the connection lost, a timeout, the
// session ended by a FATAL) may have come after the commit.
func settled(err error) bool {
	var connErr *pgconn.ConnectError
	return rolledBack(err) || errors.As(err, &connErr) || errors.Is(err, errNotSent) || errors.Is(err, ErrDuplicate) || errors.Is(err, ErrInsufficientFunds) ||
		errors.Is(err, ErrAccountNotFound) || errors.Is(err, ErrUnbalanced) || errors.Is(err, ErrReversalReversed)
}

// rolledBack reports whether err is PostgreSQL's word that the statement
// failed, and with it its transaction: an error at severity ERROR. A
// FATAL or a PANIC ends the session instead (an administrator's or a
// shutdown's termination, a crash), and PostgreSQL can send it after the
// commit record is written and before the statement's answer: it says
// nothing of the commit.
func rolledBack(err error) bool {
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	if !errors.As(err, &pgErr) || errors.As(err, &connErr) {
		return false
	}
	severity := pgErr.SeverityUnlocalized
	if severity == "" {
		severity = pgErr.Severity
	}
	return severity != "FATAL" && severity != "PANIC"
}

// sendGroup sends reqs in one pipeline and reads each one's outcome.
func sendGroup(ctx context.Context, c *pgx.Conn, reqs []*request) ([]result, error) {
	var ids []int64
	for _, r := range reqs {
		for _, p := range r.net {
			ids = append(ids, p.AccountID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	batch := &pgx.Batch{}
	// Every account of the group locked at once, in ascending id (the one
	// global order): the group's statements then take no lock another
	// transaction could hold while waiting for one of theirs.
	batch.Queue(`SELECT id FROM ledger_accounts WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, ids)
	for _, r := range reqs {
		sql, args := groupSQL(r.e, r.net)
		batch.Queue(sql, args...)
	}
	br := c.SendBatch(ctx, batch)
	out, err := readGroup(br, reqs)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func readGroup(br pgx.BatchResults, reqs []*request) ([]result, error) {
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	out := make([]result, len(reqs))
	for i, r := range reqs {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		var found, funded, plain bool
		after := make(map[int64]int64, len(r.net))
		var txID int64
		for rows.Next() {
			var tid, aid, bal *int64
			if err := rows.Scan(&found, &funded, &plain, &tid, &aid, &bal); err != nil {
				rows.Close()
				return nil, err
			}
			if tid != nil && aid != nil && bal != nil {
				txID = *tid
				after[*aid] = *bal
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out[i] = groupResult(r, found, funded, plain, txID, after)
	}
	return out, nil
}

// groupResult is one request's outcome from its statement's rows.
func groupResult(r *request, found, funded, plain bool, txID int64, after map[int64]int64) result {
	e := r.e
	switch {
	case !found:
		return result{err: fmt.Errorf("%s %s: an account of %d: %w", e.Kind, e.Reference, len(r.net), ErrAccountNotFound)}
	case !plain:
		return result{err: fmt.Errorf("%s %s: transaction %d is a reversal: %w", e.Kind, e.Reference, e.ReversesID, ErrReversalReversed)}
	case !funded:
		return result{err: fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrInsufficientFunds)}
	case txID == 0:
		// The unique index took it: a replay (of a committed movement,
		// or of one earlier in this group).
		return result{err: fmt.Errorf("%s %s: %w", e.Kind, e.Reference, ErrDuplicate)}
	case len(after) != len(r.net):
		return result{err: fmt.Errorf("%s %s: %d postings written of %d", e.Kind, e.Reference, len(after), len(r.net))}
	}
	at := e.At.UTC()
	t := Transaction{ID: txID, Kind: e.Kind, Reference: e.Reference, Note: e.Note, CreatedAt: at}
	if e.TopUpID != 0 {
		t.TopUpID = &e.TopUpID
	}
	if e.ReversesID != 0 {
		t.ReversesID = &e.ReversesID
	}
	for _, p := range r.net {
		t.Postings = append(t.Postings, PostingRow{TransactionID: t.ID, AccountID: p.AccountID, AmountRials: p.AmountRials,
			BalanceAfterRials: after[p.AccountID], CreatedAt: at})
	}
	return result{t: t}
}

// groupSQL is one movement's statement inside a group: postOne's steps,
// but a refusal writes nothing and raises nothing (an error would end the
// group's transaction): lk locks the accounts (already locked by the
// group's first statement) and reads their figures, ok says whether all
// exist (found) and whether every one that may not go below zero keeps
// available ≥ 0 and held ≥ 0 after it (funded: the CHECK constraints'
// rules, read under the lock) and whether the original a reversal names
// is not a reversal itself (plain), t inserts the transaction only then, and a
// taken (kind, reference) or original inserts nothing (ON CONFLICT DO
// NOTHING: a replay); mv and the postings follow t as in postOne. It
// always returns ok's row, with the postings when written.
func groupSQL(e Entry, net []Posting) (string, []any) {
	n := len(net)
	var vals, ids strings.Builder
	args := make([]any, 0, 3*n+6)
	for i, p := range net {
		if i > 0 {
			vals.WriteString(", ")
			ids.WriteString(", ")
		}
		k := 3 * i
		fmt.Fprintf(&vals, "($%d::bigint, $%d::bigint, $%d::bigint)", k+1, k+2, k+3)
		fmt.Fprintf(&ids, "$%d::bigint", k+1)
		args = append(args, p.AccountID, p.AmountRials, int64(0))
	}
	var topUp, reverses *int64
	if e.TopUpID != 0 {
		topUp = &e.TopUpID
	}
	if e.ReversesID != 0 {
		reverses = &e.ReversesID
	}
	k := 3 * n
	args = append(args, string(e.Kind), e.Reference, topUp, reverses, e.Note, e.At.UTC())
	p := func(j int) string { return "$" + strconv.Itoa(k+j) }
	// plain: a reversal's original is not a reversal (only a reversal's
	// statement reads it; every other one's says TRUE).
	plain := "TRUE"
	if e.ReversesID != 0 {
		plain = `NOT EXISTS (SELECT 1 FROM ledger_transactions o WHERE o.id = ` + p(4) + `::bigint AND o.kind = 'reversal')`
	}
	sql := `WITH v (account_id, amount, held) AS (VALUES ` + vals.String() + `),
		lk AS (SELECT a.id, a.posted_rials, a.held_rials, a.may_go_negative FROM ledger_accounts a WHERE a.id IN (` + ids.String() + `) ORDER BY a.id FOR NO KEY UPDATE),
		ok AS (SELECT (SELECT count(*) FROM lk) = ` + strconv.Itoa(n) + ` AS found,
			NOT EXISTS (SELECT 1 FROM lk JOIN v ON v.account_id = lk.id
				WHERE lk.held_rials + v.held < 0 OR NOT (lk.may_go_negative OR lk.posted_rials + v.amount - (lk.held_rials + v.held) >= 0)) AS funded,
			` + plain + ` AS plain),
		t AS (INSERT INTO ledger_transactions (kind, reference, topup_id, reverses_id, note, created_at)
			SELECT ` + p(1) + `::text, ` + p(2) + `::text, ` + p(3) + `::bigint, ` + p(4) + `::bigint, ` + p(5) + `::text, ` + p(6) + `::timestamptz
			WHERE (SELECT found AND funded AND plain FROM ok) ON CONFLICT DO NOTHING RETURNING id),
		mv AS (UPDATE ledger_accounts a SET posted_rials = a.posted_rials + v.amount, held_rials = a.held_rials + v.held, updated_at = ` + p(6) + `
			FROM v WHERE a.id = v.account_id AND EXISTS (SELECT 1 FROM t) RETURNING a.id, a.posted_rials, v.amount),
		ps AS (INSERT INTO ledger_postings (transaction_id, account_id, amount_rials, balance_after_rials, created_at)
			SELECT t.id, mv.id, mv.amount, mv.posted_rials, ` + p(6) + ` FROM t, mv
			RETURNING transaction_id, account_id, balance_after_rials)
		SELECT ok.found, ok.funded, ok.plain, ps.transaction_id, ps.account_id, ps.balance_after_rials FROM ok LEFT JOIN ps ON TRUE`
	return sql, args
}

// unbalancedViolation reports whether err is the Σ = 0 trigger's refusal
// (migration 00041 names its rule), not a balance's CHECK.
func unbalancedViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == "ledger_transaction_balanced"
}
