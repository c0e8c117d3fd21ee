package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/revocable"
	"github.com/kifpool/kifpool/internal/store"
)

// The gateway switches, kept in memory.
//
// Every top-up (the form, its submit, the API's) asks which gateways an
// operator switched off; read each time, that is one round trip per
// request, a quarter of the CPU of a top-up refused because the bank is
// down. CacheSwitches keeps the switches as one read found them for at
// most a TTL (1 s in serve), and only while their changes are heard —
// the rules of the session and token caches (internal/revocable):
//
//   - SwitchGateway drops the kept switches in this process before it
//     returns (store.DB.Signal, after the commit);
//   - on PostgreSQL, the trigger of migration 00040 NOTIFYs
//     kifpool_gateway_switches at the commit of any write to
//     gateway_switches, by any writer (another instance, an operator's
//     SQL); every instance LISTENs (KeepSwitches) and drops its copy on
//     arrival: a switch applies at every instance's next top-up, as
//     before;
//   - while the LISTEN connection is down (or KeepSwitches does not run),
//     nothing is served from memory: every top-up reads the table;
//   - whatever happens to the notifications, a copy is never served longer
//     than the TTL after it was read (on SQLite, a write by another
//     process).
//
// A read that began before a change never keeps its older copy after it
// (the cache's epoch).
type switchCache = revocable.Cache[map[string]bool]

const (
	// switchesChannel is migration 00040's NOTIFY channel and this
	// process's signal.
	switchesChannel = "kifpool_gateway_switches"
	// switchesKey is the one entry's key.
	switchesKey = "switches"
)

// CacheSwitches makes DisabledGateways keep what it read for at most ttl
// on the clock now, while KeepSwitches runs (see switchCache). It is
// wiring, set before the store is used; it returns s.
func (s *Store) CacheSwitches(now func() time.Time, ttl time.Duration) *Store {
	s.now = now
	s.switches = revocable.New[map[string]bool](now, ttl, 1)
	return s
}

// KeepSwitches hears changes to the gateway switches (store.DB.Listen,
// and this process's signals) until ctx ends, and lets DisabledGateways
// serve its kept copy while they are heard. Nothing without
// CacheSwitches.
func (s *Store) KeepSwitches(ctx context.Context, o store.ListenOptions) {
	if s.switches == nil {
		return
	}
	cancel := s.db.Subscribe(switchesChannel, s.switches.Heard)
	defer cancel()
	s.db.Listen(ctx, switchesChannel, s.switches.Heard, s.switches.SetUp, o)
}

// SwitchesServing reports whether the switches may be served from memory
// now (KeepSwitches runs and hears their changes).
func (s *Store) SwitchesServing() bool { return s.switches != nil && s.switches.Serving() }

// DisabledGateways names the gateways switched off (gateway_switches).
// The map is shared with later calls: read it, never change it.
func (s *Store) DisabledGateways(ctx context.Context) (map[string]bool, error) {
	var epoch uint64
	if s.switches != nil {
		if e, ok := s.switches.Get(switchesKey); ok {
			return e.Value, nil
		}
		epoch = s.switches.Begin()
	}
	var names []string
	if err := s.db.Gorm.WithContext(ctx).Table("gateway_switches").Where("disabled").Pluck("gateway", &names).Error; err != nil {
		return nil, fmt.Errorf("gateways switched off: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	if s.switches != nil {
		s.switches.Put(epoch, switchesKey, revocable.Entry[map[string]bool]{Value: out, Read: s.now()})
	}
	return out, nil
}

// switched tells every keeper of the switches in this process that they
// changed (other processes hear the trigger's NOTIFY).
func (s *Store) switched() {
	s.db.Signal(switchesChannel, "*")
}
