// Package limits holds a payer's top-up limits: how much and how many
// top-ups a day (a Tehran calendar day), the most a wallet may hold, and
// how many top-ups may wait at the bank at once (TOPUP_DAILY_MAX_RIALS,
// TOPUP_DAILY_MAX_COUNT, BALANCE_MAX_RIALS, TOPUP_WAITING_MAX_COUNT; 0
// turns each off). The rules are pure functions of a Usage; Policy reads
// the usage and is what the one top-up start asks before it writes
// anything. A limit never touches a credit: a payment the bank already
// took is credited whatever the limits say (the admin console flags one
// that took the balance over its cap).
package limits

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topupread"
	"github.com/kifpool/kifpool/internal/wallet"
)

// Rules are the limits; a zero field is off.
type Rules struct {
	DailyMaxRials   int64
	DailyMaxCount   int64
	BalanceMaxRials int64
	// WaitingMaxCount is how many of a payer's top-ups may wait for
	// payment at once (started, the payer not yet back from the bank):
	// each start is a call to the bank, so a script cannot make the
	// bank's pages by the thousand while a lifetime runs.
	WaitingMaxCount int64
}

// Any reports whether any limit is on.
func (r Rules) Any() bool { return r.Shown() || r.WaitingMaxCount > 0 }

// Shown reports whether a limit the top-up form shows what is left of is
// on (the daily ones and the balance cap; the waiting cap is only said
// when it refuses).
func (r Rules) Shown() bool {
	return r.DailyMaxRials > 0 || r.DailyMaxCount > 0 || r.BalanceMaxRials > 0
}

// Usage is what counts against the limits now.
type Usage struct {
	TodayRials   int64 // top-ups started today that did not fail
	TodayCount   int64
	BalanceRials int64 // the wallet's balance
	OpenRials    int64 // payments still open: they may yet be credited
	WaitingCount int64 // payments waiting for payment (created, awaiting_payment)
}

// Kinds of limit.
const (
	KindDailyAmount = "daily_amount"
	KindDailyCount  = "daily_count"
	KindBalance     = "balance"
	KindWaiting     = "waiting_count"
)

// Sentinels matched by errors.Is on an *Exceeded.
var (
	ErrDaily   = errors.New("daily top-up limit reached")
	ErrBalance = errors.New("wallet balance limit reached")
	ErrWaiting = errors.New("too many top-ups waiting for payment")
)

// Exceeded is a refused top-up: which limit, and what is left under it
// (rials, or top-ups for KindDailyCount).
type Exceeded struct {
	Kind  string
	Limit int64
	Left  int64
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("top-up limit %s (%d) reached: %d left", e.Kind, e.Limit, e.Left)
}

// Is makes errors.Is(err, ErrDaily/ErrBalance/ErrWaiting) true for the
// right kinds.
func (e *Exceeded) Is(target error) bool {
	switch e.Kind {
	case KindBalance:
		return target == ErrBalance
	case KindWaiting:
		return target == ErrWaiting
	}
	return target == ErrDaily
}

// Left is what the limits still allow (each only when its limit is on).
type Left struct {
	Rules
	TodayRials, TodayCount, BalanceRials int64
}

// Left says what may still be topped up.
func (r Rules) Left(u Usage) Left {
	return Left{Rules: r,
		TodayRials:   max(r.DailyMaxRials-u.TodayRials, 0),
		TodayCount:   max(r.DailyMaxCount-u.TodayCount, 0),
		BalanceRials: max(r.BalanceMaxRials-u.BalanceRials-u.OpenRials, 0),
	}
}

// Check refuses a new top-up of rials that would break a limit.
func (r Rules) Check(u Usage, rials int64) error {
	left := r.Left(u)
	switch {
	case r.WaitingMaxCount > 0 && u.WaitingCount >= r.WaitingMaxCount:
		return &Exceeded{Kind: KindWaiting, Limit: r.WaitingMaxCount, Left: 0}
	case r.DailyMaxCount > 0 && left.TodayCount < 1:
		return &Exceeded{Kind: KindDailyCount, Limit: r.DailyMaxCount, Left: 0}
	case r.DailyMaxRials > 0 && rials > left.TodayRials:
		return &Exceeded{Kind: KindDailyAmount, Limit: r.DailyMaxRials, Left: left.TodayRials}
	case r.BalanceMaxRials > 0 && rials > left.BalanceRials:
		return &Exceeded{Kind: KindBalance, Limit: r.BalanceMaxRials, Left: left.BalanceRials}
	}
	return nil
}

// tehran is Iran Standard Time (no daylight saving since 2022).
var tehran = time.FixedZone("IRST", 3*3600+1800)

// DayStart is the start of t's calendar day in Tehran.
func DayStart(t time.Time) time.Time {
	t = t.In(tehran)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, tehran).UTC()
}

// Policy reads a user's usage and applies the rules.
type Policy struct {
	rules   Rules
	reader  *topupread.Reader
	wallets *wallet.Service
	now     func() time.Time
}

// NewPolicy returns the policy of rules over the user's payments and wallet.
func NewPolicy(rules Rules, reader *topupread.Reader, wallets *wallet.Service, now func() time.Time) *Policy {
	if now == nil {
		now = time.Now
	}
	return &Policy{rules: rules, reader: reader, wallets: wallets, now: now}
}

// Rules are the policy's limits.
func (p *Policy) Rules() Rules { return p.rules }

// Usage reads what counts against the user's limits now.
func (p *Policy) Usage(ctx context.Context, userID int64) (Usage, error) {
	var u Usage
	var err error
	got, err := p.reader.Usage(ctx, userID, DayStart(p.now()))
	if err != nil {
		return Usage{}, err
	}
	u = Usage{TodayRials: got.SinceRials, TodayCount: got.SinceCount, OpenRials: got.OpenRials, WaitingCount: got.WaitingCount}
	w, err := p.wallets.Figures(ctx, userID)
	if err != nil {
		return Usage{}, fmt.Errorf("limits: wallet of user %d: %w", userID, err)
	}
	u.BalanceRials = w.BalanceRials
	return u, nil
}

// Allow refuses a new top-up of rials that would break a limit (an
// *Exceeded), reading nothing when every limit is off.
func (p *Policy) Allow(ctx context.Context, userID, rials int64) error {
	if !p.rules.Any() {
		return nil
	}
	u, err := p.Usage(ctx, userID)
	if err != nil {
		return err
	}
	return p.rules.Check(u, rials)
}

// Quota is the check of a new top-up of rials as the transaction that
// inserts it runs it (topup.Quota), under a lock of the payer's wallet
// row: two starts of one payer at once cannot both pass a limit that only
// one of them fits. Allow's earlier read refuses most starts without that
// lock; this is the one that holds under concurrency. Nil when every
// limit is off (nothing is locked then).
func (p *Policy) Quota(rials int64) *topup.Quota {
	if !p.rules.Any() {
		return nil
	}
	return &topup.Quota{Since: DayStart(p.now()), Admit: func(u topup.Usage) error {
		return p.rules.Check(Usage{TodayRials: u.SinceRials, TodayCount: u.SinceCount, BalanceRials: u.BalanceRials,
			OpenRials: u.OpenRials, WaitingCount: u.WaitingCount}, rials)
	}}
}
