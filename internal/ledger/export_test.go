package ledger

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
