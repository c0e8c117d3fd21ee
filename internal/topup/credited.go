package topup

import "sync"

// creditedCache keeps credited payments of this instance in memory, so
// that a repeat callback or a receipt reload of one is answered without a
// database round trip. Only credited payments are kept: no transition
// leaves credited (TestTransitionTableRules pins it), and what a page
// shows of one (amount, bank reference, masked card, times) never changes
// once it is credited, so a kept copy is never stale, on any instance.
// It is bounded: when full, the oldest entry makes room (first in, first
// out). A nil cache keeps nothing.
type creditedCache struct {
	mu    sync.Mutex
	max   int
	byID  map[string]TopUp
	order []string // ring of the kept public ids, oldest at next
	next  int
}

func newCreditedCache(size int) *creditedCache {
	if size <= 0 {
		return nil
	}
	// The map grows with use: a large bound costs nothing until it is used.
	return &creditedCache{max: size, byID: make(map[string]TopUp, min(size, 1024))}
}

func (c *creditedCache) get(publicID string) (TopUp, bool) {
	if c == nil {
		return TopUp{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.byID[publicID]
	if !ok {
		return TopUp{}, false
	}
	return detached(p), true
}

// put keeps p if it is credited; anything else is ignored.
func (c *creditedCache) put(p TopUp) {
	if c == nil || p.Status != StatusCredited || p.PublicID == "" {
		return
	}
	p = detached(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[p.PublicID]; ok {
		return
	}
	if len(c.order) < c.max {
		c.order = append(c.order, p.PublicID)
	} else {
		delete(c.byID, c.order[c.next])
		c.order[c.next] = p.PublicID
		c.next = (c.next + 1) % c.max
	}
	c.byID[p.PublicID] = p
}

// detached copies p without sharing its pointer fields with the caller's
// copy, so that no caller can change what another one is handed. The
// lease, pacing and reconciliation fields are dropped: they are not part of what was
// credited, and they are the only ones that still change afterwards.
func detached(p TopUp) TopUp {
	p.Authority = clonePtr(p.Authority)
	p.RefID = clonePtr(p.RefID)
	p.VerifiedAmountRials = clonePtr(p.VerifiedAmountRials)
	p.ReturnedAt = clonePtr(p.ReturnedAt)
	p.OpenedAt = clonePtr(p.OpenedAt)
	p.ResolvedAt = clonePtr(p.ResolvedAt)
	p.NextCheckAt, p.LeaseUntil, p.LeaseOwner, p.LastCheckedAt, p.ReconciledAt = nil, nil, "", nil, nil
	return p
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
