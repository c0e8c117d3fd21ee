// Package payouts is the sandbox bank's payout provider: one book of
// payouts keyed by the provider and the merchant's own id (Jibit's
// transferID, Zibal's uniqueCode), imitated at each provider's paths
// (jibit.go: the Transferor under /trf; zibal.go: the platform's wallet
// checkout, its inquiry, the balance and the ownership inquiry), with the
// faults that make cash-out hard (faults.go) and the control API that
// settles, fails and returns a payout (control.go).
//
// A payout is IN_PROGRESS when taken, then TRANSFERRED (settled) or
// FAILED; a transferred Jibit payout may later become MANUALLY_FAILED
// (failed by hand, its money back). Zibal has no late failure.
package payouts

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The providers imitated.
const (
	Jibit = "jibit"
	Zibal = "zibal"
)

// Protocols are the payout protocols (a payout driver's
// Sandbox.Protocol).
const (
	ProtocolJibit = "jibit-transferor"
	ProtocolZibal = "zibal-checkout"
)

// Protocols lists the payout protocols the bank imitates.
func Protocols() []string { return []string{ProtocolJibit, ProtocolZibal} }

// State is where a payout stands (Jibit's words).
type State string

// The states.
const (
	StateInProgress     State = "IN_PROGRESS"
	StateTransferred    State = "TRANSFERRED"
	StateFailed         State = "FAILED"
	StateManuallyFailed State = "MANUALLY_FAILED"
)

// Errors of the control operations.
var (
	ErrUnknownPayout = errors.New("sandbank: no such payout")
	ErrWrongState    = errors.New("sandbank: the payout is not in a state that allows this")
	ErrNoLateFailure = errors.New("sandbank: this provider has no late failure")
)

// Payout is one payout as the provider holds it.
type Payout struct {
	Provider    string `json:"provider"`
	ID          string `json:"id"` // the merchant's id
	AmountRials int64  `json:"amount_rials"`
	Sheba       string `json:"sheba"`
	Mode        string `json:"mode"` // ACH, RTGS (Jibit); PAYA (Zibal)
	Description string `json:"description,omitempty"`
	State       State  `json:"state"`
	// Ref is the provider's reference (Zibal's checkout id), and
	// BankRef the bank's once transferred.
	Ref     string `json:"ref"`
	BankRef string `json:"bank_ref,omitempty"`
	// Submits counts every submit of this id that reached the provider
	// (the first, and each refused as a duplicate).
	Submits int `json:"submits"`
	// LateFail: marked to fail by hand after it is transferred (the
	// late-failure fault), at its next inquiry.
	LateFail    bool      `json:"late_fail,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Transferred time.Time `json:"transferred_at,omitzero"`
	Returned    time.Time `json:"returned_at,omitzero"`
}

// DefaultBalanceRials is each provider's balance when the book starts:
// enough for any test, and only the balance fault makes it short.
const DefaultBalanceRials int64 = 1_000_000_000_000_000

// Options configure a Book.
type Options struct {
	Clock  func() time.Time
	Logger *slog.Logger
	// Seed seeds the fault decisions (0: a fixed seed).
	Seed uint64
	// OnChange is called after every change (the bank's state file).
	OnChange func()
}

// Book holds every payout. Safe for concurrent use.
type Book struct {
	clock    func() time.Time
	log      *slog.Logger
	onChange func()

	mu       sync.Mutex
	payouts  map[string]*Payout // provider + "\x00" + id
	seq      int64
	balances map[string]int64
	owners   map[string]bool // sheba + "\x00" + national code → owned
	faults   faultState
}

// NewBook returns an empty book.
func NewBook(o Options) *Book {
	b := &Book{clock: o.Clock, log: o.Logger, onChange: o.OnChange, payouts: map[string]*Payout{},
		balances: map[string]int64{Jibit: DefaultBalanceRials, Zibal: DefaultBalanceRials}, owners: map[string]bool{}}
	if b.clock == nil {
		b.clock = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.onChange == nil {
		b.onChange = func() {}
	}
	b.faults.init(o.Seed)
	return b
}

func key(provider, id string) string { return provider + "\x00" + id }

// Payouts returns a snapshot of every payout, oldest first.
func (b *Book) Payouts() []Payout {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Payout, 0, len(b.payouts))
	for _, p := range b.payouts {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Ref < out[j].Ref
	})
	return out
}

// Payout returns one payout.
func (b *Book) Payout(provider, id string) (Payout, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.payouts[key(provider, id)]
	if !ok {
		return Payout{}, false
	}
	return *p, true
}

// Forget drops one payout from the book, as a provider that lost its
// record of it: its status answers "not found" from then on. It reports
// whether there was one.
func (b *Book) Forget(provider, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := key(provider, id)
	_, ok := b.payouts[k]
	delete(b.payouts, k)
	return ok
}

// Balance is what a provider may still pay out.
func (b *Book) Balance(provider string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.balances[provider]
}

// SetOwner makes the ownership inquiry of sheba and nationalCode answer
// owned (every other pair is owned).
func (b *Book) SetOwner(sheba, nationalCode string, owned bool) {
	b.mu.Lock()
	b.owners[sheba+"\x00"+nationalCode] = owned
	b.mu.Unlock()
	b.onChange()
}

// owned answers the ownership inquiry.
func (b *Book) owned(sheba, nationalCode string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	owned, set := b.owners[sheba+"\x00"+nationalCode]
	return !set || owned
}

// submitResult is what a submit did.
type submitResult int

const (
	submitTaken submitResult = iota
	submitDuplicate
	submitBalanceShort
)

// submit takes a payout, once per id: a second submit of an id is a
// duplicate (counted, nothing else changes); a payout above the balance is
// refused. A taken payout's amount leaves the balance.
func (b *Book) submit(p Payout) (Payout, submitResult) {
	b.mu.Lock()
	k := key(p.Provider, p.ID)
	if old, ok := b.payouts[k]; ok {
		old.Submits++
		out := *old
		b.mu.Unlock()
		b.onChange()
		return out, submitDuplicate
	}
	if p.AmountRials > b.balances[p.Provider] {
		b.mu.Unlock()
		return Payout{}, submitBalanceShort
	}
	b.seq++
	now := b.clock().UTC()
	p.State, p.Submits, p.CreatedAt, p.UpdatedAt = StateInProgress, 1, now, now
	p.Ref = strconv.FormatInt(4_000_000+b.seq, 10)
	b.balances[p.Provider] -= p.AmountRials
	b.payouts[k] = &p
	b.mu.Unlock()
	b.log.Info("sandbank: payout taken", "provider", p.Provider, "id", p.ID, "amount", p.AmountRials)
	b.onChange()
	return p, submitTaken
}

// inquire is a payout as an inquiry sees it: a transferred payout marked
// for late failure fails now, and with auto-settle an in-progress one is
// transferred now.
func (b *Book) inquire(provider, id string) (Payout, bool) {
	b.mu.Lock()
	p, ok := b.payouts[key(provider, id)]
	if !ok {
		b.mu.Unlock()
		return Payout{}, false
	}
	changed := b.advanceLocked(p)
	out := *p
	b.mu.Unlock()
	if changed {
		b.onChange()
	}
	return out, true
}

// advanceLocked applies what happens on its own to a payout an inquiry
// looks at (auto-settle, a late failure due).
func (b *Book) advanceLocked(p *Payout) bool {
	f := b.faults.cfg.of(p.Provider)
	switch {
	case p.State == StateInProgress && f.AutoSettle:
		b.transferLocked(p)
		return true
	case p.State == StateTransferred && p.LateFail:
		b.returnLocked(p)
		return true
	}
	return false
}

func (b *Book) transferLocked(p *Payout) {
	now := b.clock().UTC()
	p.State, p.UpdatedAt, p.Transferred = StateTransferred, now, now
	p.BankRef = "BT" + p.Ref
	f := b.faults.cfg.of(p.Provider)
	if p.Provider == Jibit && f.LateFailRate > 0 && b.faults.draw() < f.LateFailRate {
		p.LateFail = true
	}
	b.log.Info("sandbank: payout transferred", "provider", p.Provider, "id", p.ID)
}

func (b *Book) returnLocked(p *Payout) {
	now := b.clock().UTC()
	p.State, p.UpdatedAt, p.Returned, p.LateFail = StateManuallyFailed, now, now, false
	b.balances[p.Provider] += p.AmountRials
	b.log.Info("sandbank: payout failed by hand after it was transferred", "provider", p.Provider, "id", p.ID)
}

// Settle transfers an in-progress payout (the control API's settle).
func (b *Book) Settle(provider, id string) (Payout, error) {
	return b.change(provider, id, func(p *Payout) error {
		if p.State != StateInProgress {
			return fmt.Errorf("%w: %s is %s", ErrWrongState, id, p.State)
		}
		b.transferLocked(p)
		return nil
	})
}

// Fail fails an in-progress payout: its money stays with the provider.
func (b *Book) Fail(provider, id string) (Payout, error) {
	return b.change(provider, id, func(p *Payout) error {
		if p.State != StateInProgress {
			return fmt.Errorf("%w: %s is %s", ErrWrongState, id, p.State)
		}
		p.State, p.UpdatedAt = StateFailed, b.clock().UTC()
		b.balances[p.Provider] += p.AmountRials
		return nil
	})
}

// Return fails a transferred payout by hand (Jibit's MANUALLY_FAILED).
func (b *Book) Return(provider, id string) (Payout, error) {
	if provider != Jibit {
		return Payout{}, fmt.Errorf("%w: %s", ErrNoLateFailure, provider)
	}
	return b.change(provider, id, func(p *Payout) error {
		if p.State != StateTransferred {
			return fmt.Errorf("%w: %s is %s", ErrWrongState, id, p.State)
		}
		b.returnLocked(p)
		return nil
	})
}

func (b *Book) change(provider, id string, f func(p *Payout) error) (Payout, error) {
	b.mu.Lock()
	p, ok := b.payouts[key(provider, id)]
	if !ok {
		b.mu.Unlock()
		return Payout{}, fmt.Errorf("%w: %s %s", ErrUnknownPayout, provider, id)
	}
	err := f(p)
	out := *p
	b.mu.Unlock()
	if err == nil {
		b.onChange()
	}
	return out, err
}

// Saved is what the bank's state file keeps of the book.
type Saved struct {
	Payouts  []Payout         `json:"payouts"`
	Balances map[string]int64 `json:"balances"`
	Seq      int64            `json:"seq"`
}

// Save is the book's state.
func (b *Book) Save() Saved {
	out := Saved{Payouts: b.Payouts()}
	b.mu.Lock()
	defer b.mu.Unlock()
	out.Seq = b.seq
	out.Balances = map[string]int64{}
	for k, v := range b.balances {
		out.Balances[k] = v
	}
	return out
}

// Restore puts a saved state back (at start).
func (b *Book) Restore(s Saved) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range s.Payouts {
		p := s.Payouts[i]
		b.payouts[key(p.Provider, p.ID)] = &p
	}
	for k, v := range s.Balances {
		b.balances[k] = v
	}
	b.seq = max(b.seq, s.Seq)
}
