package ledger

import (
	"time"

	"github.com/kifpool/kifpool/internal/store"
)

// SetCacheCap sets how many ids each of l's caches holds (tests).
func SetCacheCap(l *Ledger, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cacheCap = n
}

// CacheSizes is how many ids l's caches hold, by code and by wallet.
func CacheSizes(l *Ledger) (codes, wallets int) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.byCode), len(l.byWallet)
}

// NewBeforeGroup is New with every Write sent to the group commit's
// writer, and before run each time that writer has taken a group, before
// it is written (tests hold it there).
func NewBeforeGroup(db *store.DB, before func(), opts ...Option) *Ledger {
	return newLedger(db, before, true, opts...)
}

// Queued is how many Write calls wait in l's group commit queue.
func Queued(l *Ledger) int {
	if l.batch == nil {
		return 0
	}
	return len(l.batch.queue) + len(l.batch.groupQ)
}

// Grouping reports whether l's Write groups concurrent calls.
func Grouping(l *Ledger) bool { return l.batch != nil }

// GroupTimeout bounds each round trip of a grouping ledger's writer
// (batchTimeout otherwise).
func GroupTimeout(d time.Duration) Option {
	return func(l *Ledger) { l.groupTimeout = d }
}

// WaitingForWriter is how many Write calls wait for l's group writer
// (routed to it, not yet taken).
func WaitingForWriter(l *Ledger) int {
	if l.batch == nil {
		return 0
	}
	return len(l.batch.groupQ)
}

// InFlight is how many accounts l's group commit holds in flight.
func InFlight(l *Ledger) int {
	if l.batch == nil {
		return 0
	}
	l.batch.fmu.Lock()
	defer l.batch.fmu.Unlock()
	return len(l.batch.inflight)
}
