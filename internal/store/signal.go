package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Signals tell the parts of every instance that keep something in memory
// that the database changed under them (the session cache of
// internal/auth, the token cache of internal/apitoken, the gateway
// switches of internal/topup/sqlstore). Within one
// process, Signal calls each subscriber of the channel before it returns:
// two instances over one *DB (SQLite's tests) hear each other at once.
// Across processes, PostgreSQL's NOTIFY (sent by the triggers of
// migrations 00039, 00037 and 00040, at commit) reaches Listen.

type subscriber struct {
	channel string
	fn      func(payload string)
}

type signals struct {
	mu   sync.Mutex
	next int
	subs map[int]subscriber
}

// Subscribe calls fn with the payload of every Signal on channel in this
// process, until cancel is called.
func (db *DB) Subscribe(channel string, fn func(payload string)) (cancel func()) {
	db.sig.mu.Lock()
	defer db.sig.mu.Unlock()
	id := db.sig.next
	db.sig.next++
	db.sig.subs[id] = subscriber{channel, fn}
	return func() {
		db.sig.mu.Lock()
		defer db.sig.mu.Unlock()
		delete(db.sig.subs, id)
	}
}

// Signal calls every subscriber of channel in this process, synchronously,
// with payload. It is called after the change has committed.
func (db *DB) Signal(channel, payload string) {
	db.sig.mu.Lock()
	fns := make([]func(string), 0, len(db.sig.subs))
	for _, s := range db.sig.subs {
		if s.channel == channel {
			fns = append(fns, s.fn)
		}
	}
	db.sig.mu.Unlock()
	for _, fn := range fns {
		fn(payload)
	}
}

// ListenOptions tune Listen; zero values take defaults.
type ListenOptions struct {
	// Check is how long Listen waits for a notification before it asks
	// the connection whether it is still alive (default 2 s); a silent
	// connection is declared down after at most twice this.
	Check time.Duration
	// Retry is the pause before reconnecting after a failure (default 1 s).
	Retry time.Duration
}

// Listen hears channel's notifications from the database until ctx ends:
// on PostgreSQL through its own connection (LISTEN), calling fn with each
// payload and up(true) once the LISTEN is in effect, up(false) as soon as
// the connection fails or stops answering (and again while it reconnects);
// on SQLite, which has one process only, up(true) at once (Signal is the
// only source). up(false) is called once more when ctx ends.
func (db *DB) Listen(ctx context.Context, channel string, fn func(payload string), up func(bool), o ListenOptions) {
	if o.Check <= 0 {
		o.Check = 2 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	defer up(false)
	if db.Dialect != Postgres {
		up(true)
		<-ctx.Done()
		return
	}
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, channel, fn, up, o.Check)
		up(false)
		if ctx.Err() != nil {
			return
		}
		_ = err // the next attempt's success or failure is what matters
		t := time.NewTimer(o.Retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce is one connection's life: LISTEN, then notifications until
// the connection fails, stops answering a ping, or ctx ends.
func (db *DB) listenOnce(ctx context.Context, channel string, fn func(string), up func(bool), check time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, check)
	conn, err := pgx.Connect(cctx, db.dsn)
	cancel()
	if err != nil {
		return fmt.Errorf("listen %s: connect: %w", channel, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	up(true)
	for {
		wctx, cancel := context.WithTimeout(ctx, check)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			fn(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case !conn.PgConn().IsClosed() && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)):
			// Quiet: is the connection still there?
			pctx, cancel := context.WithTimeout(ctx, check)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("listen %s: ping: %w", channel, err)
			}
		default:
			return fmt.Errorf("listen %s: %w", channel, err)
		}
	}
}

// isTimeout reports whether err is a deadline that left the connection
// usable (pgconn closes it on any other error).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
