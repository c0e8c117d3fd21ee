package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/lifecycle"
	"github.com/kifpool/kifpool/internal/testhook"
	"github.com/kifpool/kifpool/internal/usertext"
)

// Defaults of the sender (docs/design/webhooks.md).
const (
	// Timeout: a 2xx within it is delivered.
	DefaultTimeout = 10 * time.Second
	// DefaultRetryFor: how long an event is retried before it gives up and
	// its endpoint is marked failing (WEBHOOK_RETRY_FOR).
	DefaultRetryFor = 72 * time.Hour
	// maxResponse is how much of an answer is read (and dropped).
	maxResponse = 64 << 10
)

// Observer hears about attempts (the metrics). Any method may be nil.
type Observer interface {
	WebhookAttempt(ok bool, d time.Duration)
	WebhookGaveUp()
}

// SenderOptions tune the sender; zero values take the defaults.
type SenderOptions struct {
	Timeout     time.Duration // per attempt (10 s)
	RetryFor    time.Duration // retry window (72 h)
	BaseBackoff time.Duration // first wait (15 s), doubling
	MaxBackoff  time.Duration // longest wait (6 h)
	// Lease is how long a claimed row is not taken by another sender
	// (its attempt's timeout and a margin; 60 s).
	Lease time.Duration
	// Batch is the most attempts under way at once on this sender (16):
	// a place is freed as soon as its attempt ends, and filled by the
	// next claim.
	Batch int
	// PerEndpoint is the most attempts under way at once to one endpoint
	// on this sender (1): an endpoint that hangs holds that many places,
	// not the sender.
	PerEndpoint int
	// Interval is how often Tick, while attempts are under way, looks for
	// rows that came due meanwhile (2 s, WEBHOOK_INTERVAL's default); an
	// attempt ending or a Kick makes it look at once.
	Interval time.Duration
	// Ticks makes Interval's ticker (nil: lifecycle.RealTicks).
	Ticks lifecycle.Ticks
	// Jitter returns a number in [0, 1) (math/rand/v2's Float64); tests
	// fix it.
	Jitter   func() float64
	Observer Observer
	// Client replaces the guarded HTTP client (tests).
	Client *http.Client
	Log    *slog.Logger
}

// Sender delivers due outbox rows: claimed in a transaction (FOR UPDATE
// SKIP LOCKED on PostgreSQL; SQLite's immediate transactions serialise
// claimers), each claim moving next_attempt_at forward by the lease and
// counting the attempt, so that instances never send a row at once and a
// sender that died mid-attempt lets another retry it when the lease ends.
// A row is not claimed while an earlier row of the same top-up for the
// same endpoint is pending: events of a top-up arrive in order.
//
// Attempts run side by side, at most Batch at once and PerEndpoint to one
// endpoint; each frees its place when it ends, and the next claim fills
// it. A claim passes over the rows of an endpoint with PerEndpoint
// attempts under way on this sender, so an endpoint that accepts
// connections and never answers holds one place (per instance) for its
// timeout while every other endpoint's rows go out. Rows of a disabled
// endpoint are never sent: a claim that meets one ends it
// (LastErrorEndpointDisabled).
type Sender struct {
	svc    *Service
	o      SenderOptions
	client *http.Client
	kick   chan struct{}
	// ended hears that an attempt ended (its place is free; the next
	// event of its subject may be due).
	ended chan struct{}
	// claiming serialises start: a claim sees the places it fills.
	claiming sync.Mutex
	// mu guards the attempts under way: flying in all, busy by endpoint.
	mu     sync.Mutex
	flying int
	busy   map[int64]int
}

// NewSender returns the sender of svc's endpoints.
func NewSender(svc *Service, o SenderOptions) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 15 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 6 * time.Hour
	}
	if o.Lease <= 0 {
		o.Lease = o.Timeout*5 + 10*time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 16
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = 1
	}
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Ticks == nil {
		o.Ticks = lifecycle.RealTicks
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := o.Client
	if c == nil {
		c = NewClient(o.Timeout, svc.allowLoopback)
	}
	return &Sender{svc: svc, o: o, client: c, kick: make(chan struct{}, 1), ended: make(chan struct{}, 1), busy: map[int64]int{}}
}

// errBlockedAddress: the target resolved to an address webhooks may not
// reach.
var errBlockedAddress = errors.New("webhook: target address is private, loopback or link-local")

// NewClient is the HTTP client of deliveries: no proxy, no redirects
// followed (a 3xx is a failed attempt), every dialled address checked
// after resolution (so a name that resolves to a private address, or is
// rebound to one, is refused), and timeout over the whole attempt.
func NewClient(timeout time.Duration, allowLoopback bool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			if addrBlocked(address, allowLoopback) {
				return fmt.Errorf("%w: %s", errBlockedAddress, address)
			}
			return nil
		}}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			MaxIdleConns:           50,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        60 * time.Second,
			TLSHandshakeTimeout:    5 * time.Second,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 16 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Kick asks the running sender to look for due rows now. It never blocks.
func (s *Sender) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Kicks receives Kick's requests: the wake-up of the loop that runs Tick
// (internal/server runs it on lifecycle.Loop).
func (s *Sender) Kicks() <-chan struct{} { return s.kick }

// Tick delivers the rows due now, logging a failure: one beat of the
// background loop. It claims rows into the free places as long as it
// finds some, and while attempts are under way it looks again whenever
// one ends, on a Kick and every Interval; it returns when none is under
// way and nothing more is due. When ctx ends (shutdown), no row is
// claimed any more and the attempts under way finish first, each within
// Timeout (send detaches them from ctx).
func (s *Sender) Tick(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var ticks <-chan time.Time
	for ctx.Err() == nil {
		started, ended, idle, err := s.start(ctx, &wg)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Error("deliver webhooks", "err", err)
		}
		if err == nil && started+ended > 0 {
			continue // more may be due, of other endpoints
		}
		if idle {
			return // nothing under way, nothing found
		}
		// An attempt that ended since the claim has left its word in
		// s.ended: the claim is made again at once.
		if ticks == nil {
			c, stop := s.o.Ticks(s.o.Interval)
			defer stop()
			ticks = c
		}
		select {
		case <-s.ended:
		case <-s.kick:
		case <-ticks:
		case <-ctx.Done():
		}
	}
}

// claimed is a claimed row with its endpoint.
type claimed struct {
	Delivery
	URL       string `gorm:"column:url"`
	UserID    int64
	SecretEnc string
	// PreviousSecretEnc and PreviousSecretUntil are the endpoint's secret
	// before its last rotation and the end of its grace period
	// (Service.Rotate).
	PreviousSecretEnc   *string
	PreviousSecretUntil *time.Time
	Lease               time.Time `gorm:"-"`
}

// DeliverDue claims the rows due now into the sender's free places (at
// most Batch, at most PerEndpoint of one endpoint), sends them at once,
// waits for their outcomes and returns how many it claimed: one round of
// Tick.
func (s *Sender) DeliverDue(ctx context.Context) (int, error) {
	var wg sync.WaitGroup
	n, _, _, err := s.start(ctx, &wg)
	wg.Wait()
	return n, err
}

// start claims due rows into the free places and starts their attempts
// (counted in wg), each freeing its place when it ends. It returns how
// many it started, how many rows of disabled endpoints it ended, and
// whether no attempt was under way when it claimed.
func (s *Sender) start(ctx context.Context, wg *sync.WaitGroup) (started, ended int, idle bool, err error) {
	s.claiming.Lock()
	defer s.claiming.Unlock()
	s.mu.Lock()
	free, idle := s.o.Batch-s.flying, s.flying == 0
	busy := maps.Clone(s.busy)
	s.mu.Unlock()
	if free <= 0 {
		return 0, 0, false, nil
	}
	rows, ended, err := s.claim(ctx, free, busy)
	if err != nil {
		return 0, ended, idle, err
	}
	s.mu.Lock()
	for _, r := range rows {
		s.flying++
		s.busy[r.EndpointID]++
	}
	s.mu.Unlock()
	for _, r := range rows {
		wg.Go(func() {
			defer s.free(r.EndpointID)
			s.deliver(ctx, r)
		})
	}
	return len(rows), ended, idle, nil
}

// free gives back the place of an attempt to endpoint that ended.
func (s *Sender) free(endpoint int64) {
	s.mu.Lock()
	s.flying--
	if s.busy[endpoint]--; s.busy[endpoint] <= 0 {
		delete(s.busy, endpoint)
	}
	s.mu.Unlock()
	select {
	case s.ended <- struct{}{}:
	default:
	}
}

// candidate is a due row a claim may take.
type candidate struct {
	ID         int64
	EndpointID int64
}

// claim claims at most limit due rows in one transaction, none of an
// endpoint that busy (attempts under way here) holds at PerEndpoint and
// at most PerEndpoint of one endpoint in all. A due row of a disabled
// endpoint is not claimed but ended (failed, LastErrorEndpointDisabled):
// an event queued as its endpoint was being disabled is never sent.
// ended is how many it ended.
func (s *Sender) claim(ctx context.Context, limit int, busy map[int64]int) (rows []claimed, ended int, err error) {
	now := s.svc.clock()
	lease := now.Add(s.o.Lease)
	var full []int64
	for ep, n := range busy {
		if n >= s.o.PerEndpoint {
			full = append(full, ep)
		}
	}
	err = s.svc.db.Tx(ctx, func(tx *gorm.DB) error {
		var cands []candidate
		q := tx.Table("webhook_deliveries AS d").Select("d.id, d.endpoint_id").
			Where("d.status = 'pending' AND d.next_attempt_at <= ?", now).
			Where(`NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id
				AND (e.topup_id = d.topup_id OR e.withdrawal_id = d.withdrawal_id) AND e.status = 'pending' AND e.id < d.id)`).
			Where(`d.charge_id IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id
				AND e.charge_id = d.charge_id AND e.status = 'pending' AND e.id < d.id)`)
		if len(full) > 0 {
			q = q.Where("d.endpoint_id NOT IN ?", full)
		}
		// More than limit: rows of one endpoint beyond PerEndpoint are
		// passed over, the next endpoints' taken.
		q = q.Order("d.next_attempt_at, d.id").Limit(limit * 4)
		if err := s.svc.db.SkipLocked(q).Find(&cands).Error; err != nil {
			return err
		}
		if len(cands) == 0 {
			return nil
		}
		var eps, off []int64
		for _, c := range cands {
			eps = append(eps, c.EndpointID)
		}
		if err := tx.Model(&Endpoint{}).Where("id IN ? AND disabled_at IS NOT NULL", eps).Pluck("id", &off).Error; err != nil {
			return err
		}
		taken := map[int64]int{}
		var ids, gone []int64
		for _, c := range cands {
			switch {
			case slices.Contains(off, c.EndpointID):
				gone = append(gone, c.ID)
			case len(ids) < limit && busy[c.EndpointID]+taken[c.EndpointID] < s.o.PerEndpoint:
				taken[c.EndpointID]++
				ids = append(ids, c.ID)
			}
		}
		if len(gone) > 0 {
			// Only the rows this claim holds: ending every pending row of
			// the endpoint would wait on other claimers' locks.
			res := tx.Model(&Delivery{}).
				Where("id IN ? AND status = 'pending' AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled_at IS NOT NULL)", gone).
				Updates(map[string]any{"status": StatusFailed, "last_error": LastErrorEndpointDisabled})
			if res.Error != nil {
				return res.Error
			}
			ended = int(res.RowsAffected)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Model(&Delivery{}).Where("id IN ? AND status = 'pending' AND next_attempt_at <= ?", ids, now).
			Updates(map[string]any{"next_attempt_at": lease, "attempts": gorm.Expr("attempts + 1"), "last_attempt_at": now}).Error; err != nil {
			return err
		}
		return tx.Table("webhook_deliveries AS d").
			Select("d.*, e.url AS url, e.user_id AS user_id, e.secret_enc AS secret_enc, e.previous_secret_enc AS previous_secret_enc, e.previous_secret_until AS previous_secret_until").
			Joins("JOIN webhook_endpoints e ON e.id = d.endpoint_id").
			Where("d.id IN ? AND d.next_attempt_at = ? AND e.disabled_at IS NULL", ids, lease).Order("d.id").Scan(&rows).Error
	})
	if err != nil {
		return nil, 0, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	if ended > 0 {
		s.o.Log.Warn("webhook deliveries of a disabled endpoint ended unsent", "count", ended)
	}
	for i := range rows {
		rows[i].Lease = lease
	}
	return rows, ended, nil
}

// attempt is one attempt's outcome.
type attempt struct {
	status  int
	latency time.Duration
	err     string
}

func (a attempt) ok() bool { return a.err == "" && a.status >= 200 && a.status < 300 }

// send makes one attempt at r.
func (s *Sender) send(ctx context.Context, r claimed) attempt {
	secret, err := s.svc.seal.open(r.UserID, r.SecretEnc)
	if err != nil {
		return attempt{err: err.Error()}
	}
	secrets := []string{secret}
	at := s.svc.now()
	// Within a rotation's grace period the previous secret signs too (a
	// second v1=, after the new one's): a receiver that has not deployed
	// the new secret yet still verifies. One that does not open (sealed
	// under another SESSION_SECRET) is left out.
	ep := Endpoint{PreviousSecretEnc: r.PreviousSecretEnc, PreviousSecretUntil: r.PreviousSecretUntil}
	if ep.Rotating(at) {
		if prev, err := s.svc.seal.open(r.UserID, *r.PreviousSecretEnc); err == nil {
			secrets = append(secrets, prev)
		}
	}
	body := []byte(r.Body)
	// Detached from ctx's cancellation, bounded by the timeout: an attempt
	// under way when shutdown starts finishes (an attempt cut short would
	// be recorded as failed, backed off, and at the end of the window give
	// the row up), and no attempt outlives its timeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return attempt{err: "the endpoint's URL is invalid"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Kifpool-Webhooks/1")
	req.Header.Set(HeaderEventID, r.EventID)
	req.Header.Set(HeaderSignature, SignAll(at, body, secrets...))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return attempt{latency: time.Since(start), err: transportError(err)}
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()
	a := attempt{status: resp.StatusCode, latency: time.Since(start)}
	if !a.ok() {
		a.err = "HTTP " + strconv.Itoa(resp.StatusCode)
		if t := printable(head); t != "" {
			a.err += ": " + t
		}
	}
	return a
}

// transportError is a failed request's error as the row and the log keep
// it: without the URL (Go's *url.Error names it whole, and an endpoint's
// query may hold the partner's own secret), what went wrong only (a
// refused connection, a time-out, an address refused).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return "timed out: " + ue.Err.Error()
		}
		return ue.Err.Error()
	}
	return err.Error()
}

// printable is b as log text: valid UTF-8, no control characters, short.
func printable(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	for len(s) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}

// deliver sends one claimed row and records the outcome.
func (s *Sender) deliver(ctx context.Context, r claimed) {
	a := s.send(ctx, r)
	if s.o.Observer != nil {
		s.o.Observer.WebhookAttempt(a.ok(), a.latency)
	}
	now := s.svc.clock()
	g := s.svc.db.Gorm.WithContext(context.WithoutCancel(ctx))
	ms := a.latency.Milliseconds()
	upd := map[string]any{"last_latency_ms": ms, "last_error": usertext.Cut(a.err, 500)}
	if a.status != 0 {
		upd["last_http_status"] = a.status
	} else {
		upd["last_http_status"] = nil
	}
	log := s.o.Log.With("delivery", r.ID, "event", r.EventID, "type", r.Type, "endpoint", r.EndpointID, "attempt", r.Attempts)
	if a.ok() {
		testhook.At(testhook.AfterWebhookSent) // e2e: the partner has it, we have not recorded it
		upd["status"], upd["delivered_at"] = StatusDelivered, now
		err := s.svc.db.Tx(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
			// Delivered is true whoever holds the claim now.
			if err := tx.Model(&Delivery{}).Where("id = ? AND status = 'pending'", r.ID).Updates(upd).Error; err != nil {
				return err
			}
			return tx.Model(&Endpoint{}).Where("id = ?", r.EndpointID).
				Updates(map[string]any{"failing_since": nil, "last_success_at": now}).Error
		})
		if err != nil {
			log.Error("webhook delivered but not recorded (it will be sent again)", "err", err)
			return
		}
		log.Info("webhook delivered", "status", a.status, "latency_ms", ms)
		return
	}
	giveUpAt := r.RetryFrom.Add(s.o.RetryFor)
	if !now.Before(giveUpAt) {
		upd["status"] = StatusFailed
		gaveUp := false
		err := s.svc.db.Tx(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
			res := tx.Model(&Delivery{}).Where("id = ? AND status = 'pending' AND next_attempt_at = ?", r.ID, r.Lease).Updates(upd)
			if res.Error != nil || res.RowsAffected == 0 {
				return res.Error
			}
			gaveUp = true
			return tx.Model(&Endpoint{}).Where("id = ? AND failing_since IS NULL", r.EndpointID).Update("failing_since", now).Error
		})
		switch {
		case err != nil:
			log.Error("record webhook failure", "err", err)
		case !gaveUp:
			log.Warn("webhook not delivered; the row is no longer this attempt's (ended meanwhile, or claimed again after its lease)", "err", a.err)
		default:
			if s.o.Observer != nil {
				s.o.Observer.WebhookGaveUp()
			}
			log.Error("webhook gave up: endpoint marked failing", "err", a.err)
		}
		return
	}
	next := now.Add(s.Backoff(r.Attempts))
	if next.After(giveUpAt) {
		next = giveUpAt // one last attempt at the end of the window
	}
	upd["next_attempt_at"] = next
	res := g.Model(&Delivery{}).Where("id = ? AND status = 'pending' AND next_attempt_at = ?", r.ID, r.Lease).Updates(upd)
	switch {
	case res.Error != nil:
		log.Error("record webhook failure", "err", res.Error)
	case res.RowsAffected == 0:
		log.Warn("webhook not delivered; the row is no longer this attempt's (ended meanwhile, or claimed again after its lease)", "err", a.err)
	default:
		log.Warn("webhook not delivered, will retry", "err", a.err, "next", next)
	}
}

// Backoff is the wait after the attempts-th failed attempt: BaseBackoff
// doubled per attempt up to MaxBackoff, of which a random half is taken
// off ("equal jitter": never sooner than half, so receivers that are down
// are not hammered, and instances spread out).
func (s *Sender) Backoff(attempts int) time.Duration {
	return lifecycle.Backoff(attempts, s.o.BaseBackoff, s.o.MaxBackoff, s.o.Jitter())
}
