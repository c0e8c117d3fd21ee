package admin

import (
	"strconv"
	"time"

	"github.com/kifpool/kifpool/views"
)

// DashboardView is the admin overview: unresolved payments, the gateway's
// circuit breaker and the latest reconciliations.
type DashboardView struct {
	Notice     string          // message key of the last action's result
	Unresolved []UnresolvedRow // the top-ups under review or late
	// UnresolvedAllURL links to every unresolved top-up, oldest first,
	// when the dashboard shows only the oldest ("": it shows them all).
	UnresolvedAllURL string
	Counts           []StatusCount
	// CountsEstimated: some count is an estimate; each status is counted
	// exactly up to ExactUpTo payments.
	CountsEstimated bool
	ExactUpTo       int64
	Breakers        []BreakerView
	Reconcile       []ReconcileView
	// TopUps are the last 24 hours of top-ups, oldest first.
	TopUps []HourView
	// HoursFreshMinutes: the chart is counted again after this many
	// minutes (top-ups started since the last count at every load).
	HoursFreshMinutes int64
	// Latency is the bank's latency per operation over the last 24 hours,
	// ranked again after LatencyFreshSeconds.
	Latency             []LatencyView
	LatencyFreshSeconds int64
	Backlog             BacklogView
	// PayoutDifferences are the payout providers whose newest
	// reconciliation flagged differences (shown on the withdrawals page).
	PayoutDifferences []PayoutDifferenceFlag
	// CardRefundsUnderReview wait for an admin on their top-ups' pages
	// (oldest first, at most CardRefundsShown).
	CardRefundsUnderReview []CardRefundFlag
	// Replica is the read database of DATABASE_READ_URL (nil: none).
	Replica *ReplicaView
	// Waiting is what waits for an admin's decision, by kind, in the
	// order the section lists them (only kinds with some waiting).
	Waiting []WaitingKind
}

// WaitingKind is how many of one kind wait for an admin, and since when
// the one waiting longest has.
type WaitingKind struct {
	Kind  string // withdrawals, bank_accounts, card_refunds
	N     int64
	Since time.Time
	URL   string // where an admin resolves them
}

// ReplicaView is what the last check of the read database found.
type ReplicaView struct {
	Up, Standby bool
	// Behind: further behind than DATABASE_READ_MAX_LAG (Stale): the
	// pages read the primary.
	Behind bool
	Stale  time.Duration
	Lag    time.Duration
	// LagBytes is the WAL it is behind (-1 unknown).
	LagBytes int64
}

// State names the sentence that describes the replica.
func (r ReplicaView) State() string {
	switch {
	case !r.Up:
		return "down"
	case r.Behind:
		return "behind"
	case !r.Standby:
		return "not_standby"
	case r.LagBytes < 0:
		return "unknown"
	case r.LagBytes == 0:
		return "caught_up"
	}
	return "lag"
}

// CardRefundsShown is how many card refunds under review the dashboard
// lists.
const CardRefundsShown = 20

// CardRefundFlag is one card refund under review: its amount held from
// the payer's wallet until an admin resolves it on the top-up's page.
type CardRefundFlag struct {
	PublicID      string
	TopUpPublicID string
	AmountRials   int64
	Reason        string
	Since         time.Time
}

// PayoutDifferenceFlag is one payout provider's open differences.
type PayoutDifferenceFlag struct {
	Provider    string
	Differences int
}

// StatusCount is how many payments have a status.
type StatusCount struct {
	Status string
	N      int64
	// Estimate: N is an estimate from the database's statistics (shown
	// with "≈"), not a count.
	Estimate bool
}

// UnresolvedRow is one unresolved payment.
type UnresolvedRow struct {
	PublicID    string
	Email       string
	AmountRials int64
	Status      string
	Reason      string
	Attempts    int
	CreatedAt   time.Time
	NextCheckAt *time.Time
	// Late: open, and its check is overdue (the worker is behind, or the
	// payment is stuck).
	Late bool
}

// BreakerView is a gateway's circuit breaker.
type BreakerView struct {
	Name                string
	State               string
	Requests            uint32
	Failures            uint32
	ConsecutiveFailures uint32
	Since               time.Time
}

// ReconcileView is one stored reconciliation.
type ReconcileView struct {
	StartedAt     time.Time
	Listed        int
	Ours          int
	Credited      int
	CreditedRials int64
	Foreign       int
	ForeignRials  int64
	Mismatches    int
	Error         string
	Items         []ReconcileItemView
}

// ReconcileItemView is one line of a reconciliation.
type ReconcileItemView struct {
	Authority   string
	AmountRials int64
	PublicID    string
	Kind        string
	Detail      string
}

// HourView is one hour of the top-ups chart.
type HourView struct {
	Start                   time.Time
	Total, Credited, Failed int64
	// Ratio is the success ratio in percent (credited of finished), -1
	// when nothing finished.
	Ratio int
}

// LatencyView is one operation's latency percentiles, in milliseconds.
type LatencyView struct {
	Operation     string
	Calls         int
	P50, P90, P99 int64
}

// BacklogView is the worker's queue.
type BacklogView struct {
	Due int64
	Lag time.Duration
}

// Chart geometry (SVG user units).
const (
	chartW      = 720
	chartH      = 200
	chartPad    = 28 // room for the axis labels
	latencyRowH = 34
)

// bar is one rectangle of a chart.
type bar struct {
	X, Y, W, H string
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// hourBars places the 24 hours' bars: the whole hour (total) and, inside
// it, the credited part.
func hourBars(hours []HourView) (total, credited []bar) {
	var max int64 = 1
	for _, h := range hours {
		if h.Total > max {
			max = h.Total
		}
	}
	n := float64(len(hours))
	if n == 0 {
		return nil, nil
	}
	slot := float64(chartW) / n
	plot := float64(chartH - chartPad)
	for i, h := range hours {
		x := float64(i)*slot + slot*0.15
		w := slot * 0.7
		th := plot * float64(h.Total) / float64(max)
		ch := plot * float64(h.Credited) / float64(max)
		total = append(total, bar{X: num(x), Y: num(plot - th), W: num(w), H: num(th)})
		credited = append(credited, bar{X: num(x), Y: num(plot - ch), W: num(w), H: num(ch)})
	}
	return total, credited
}

// hourLabelX is where the label of hour i goes (every sixth hour).
func hourLabelX(i, n int) string {
	slot := float64(chartW) / float64(n)
	return num(float64(i)*slot + slot/2)
}

// latencyBars places three bars (p50, p90, p99) per operation, scaled to
// the largest p99.
func latencyBars(ls []LatencyView) (out [][3]bar, labelsY []string) {
	var max int64 = 1
	for _, l := range ls {
		if l.P99 > max {
			max = l.P99
		}
	}
	left, width := 150.0, float64(chartW-150-170)
	for i, l := range ls {
		top := float64(i) * float64(2*latencyRowH)
		var row [3]bar
		for j, v := range []int64{l.P50, l.P90, l.P99} {
			w := width * float64(v) / float64(max)
			if v > 0 && w < 2 {
				w = 2
			}
			row[j] = bar{X: num(left), Y: num(top + float64(j)*18 + 4), W: num(w), H: "14"}
		}
		out = append(out, row)
		labelsY = append(labelsY, num(top+22))
	}
	return out, labelsY
}

func latencyChartH(n int) string { return strconv.Itoa(n*2*latencyRowH + 8) }

func (b bar) end(extra float64) string {
	x, _ := strconv.ParseFloat(b.X, 64)
	w, _ := strconv.ParseFloat(b.W, 64)
	return num(x + w + extra)
}

func (b bar) mid() string {
	y, _ := strconv.ParseFloat(b.Y, 64)
	h, _ := strconv.ParseFloat(b.H, 64)
	return num(y + h/2 + 4)
}

// hour writes the Tehran time of day of t ("۱۴:۰۰").
func hour(p views.Page, t time.Time) string {
	r := []rune(p.DateTime(t))
	if len(r) >= 5 {
		return string(r[len(r)-5:])
	}
	return string(r)
}
