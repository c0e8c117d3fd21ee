package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
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
	Batch int // rows claimed at once, sent concurrently (16)
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
type Sender struct {
	svc    *Service
	o      SenderOptions
	client *http.Client
	kick   chan struct{}
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
	return &Sender{svc: svc, o: o, client: c, kick: make(chan struct{}, 1)}
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

// Tick delivers the rows due now, batch after batch while batches come
// back full, logging a failure: one beat of the background loop. Attempts
// in flight finish first.
func (s *Sender) Tick(ctx context.Context) {
	for {
		n, err := s.DeliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Error("deliver webhooks", "err", err)
		}
		if n < s.o.Batch || ctx.Err() != nil {
			return // a full batch would mean more may be due at once
		}
	}
}

// claimed is a claimed row with its endpoint.
type claimed struct {
	Delivery
	URL       string `gorm:"column:url"`
	UserID    int64
	SecretEnc string
	Lease     time.Time `gorm:"-"`
}

// DeliverDue claims the rows due now (at most Batch), sends them at once
// and returns how many it claimed.
func (s *Sender) DeliverDue(ctx context.Context) (int, error) {
	rows, err := s.claim(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, r := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.deliver(ctx, r)
		}()
	}
	wg.Wait()
	return len(rows), nil
}

func (s *Sender) claim(ctx context.Context) ([]claimed, error) {
	now := s.svc.clock()
	lease := now.Add(s.o.Lease)
	var rows []claimed
	err := s.svc.db.Tx(ctx, func(tx *gorm.DB) error {
		var ids []int64
		q := tx.Table("webhook_deliveries AS d").Select("d.id").
			Where("d.status = 'pending' AND d.next_attempt_at <= ?", now).
			Where(`NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id
				AND (e.topup_id = d.topup_id OR e.withdrawal_id = d.withdrawal_id) AND e.status = 'pending' AND e.id < d.id)`).
			Where(`d.charge_id IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id
				AND e.charge_id = d.charge_id AND e.status = 'pending' AND e.id < d.id)`).
			Order("d.next_attempt_at, d.id").Limit(s.o.Batch)
		if err := s.svc.db.SkipLocked(q).Find(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Model(&Delivery{}).Where("id IN ? AND status = 'pending' AND next_attempt_at <= ?", ids, now).
			Updates(map[string]any{"next_attempt_at": lease, "attempts": gorm.Expr("attempts + 1"), "last_attempt_at": now}).Error; err != nil {
			return err
		}
		return tx.Table("webhook_deliveries AS d").
			Select("d.*, e.url AS url, e.user_id AS user_id, e.secret_enc AS secret_enc").
			Joins("JOIN webhook_endpoints e ON e.id = d.endpoint_id").
			Where("d.id IN ? AND d.next_attempt_at = ?", ids, lease).Order("d.id").Scan(&rows).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	for i := range rows {
		rows[i].Lease = lease
	}
	return rows, nil
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
	body := []byte(r.Body)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return attempt{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Kifpool-Webhooks/1")
	req.Header.Set(HeaderEventID, r.EventID)
	req.Header.Set(HeaderSignature, Sign(secret, s.svc.now(), body))
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return attempt{latency: time.Since(start), err: err.Error()}
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
		err := s.svc.db.Tx(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
			res := tx.Model(&Delivery{}).Where("id = ? AND status = 'pending' AND next_attempt_at = ?", r.ID, r.Lease).Updates(upd)
			if res.Error != nil || res.RowsAffected == 0 {
				return res.Error
			}
			return tx.Model(&Endpoint{}).Where("id = ? AND failing_since IS NULL", r.EndpointID).Update("failing_since", now).Error
		})
		if err != nil {
			log.Error("record webhook failure", "err", err)
		}
		if s.o.Observer != nil {
			s.o.Observer.WebhookGaveUp()
		}
		log.Error("webhook gave up: endpoint marked failing", "err", a.err)
		return
	}
	next := now.Add(s.Backoff(r.Attempts))
	if next.After(giveUpAt) {
		next = giveUpAt // one last attempt at the end of the window
	}
	upd["next_attempt_at"] = next
	if err := g.Model(&Delivery{}).Where("id = ? AND status = 'pending' AND next_attempt_at = ?", r.ID, r.Lease).Updates(upd).Error; err != nil {
		log.Error("record webhook failure", "err", err)
	}
	log.Warn("webhook not delivered, will retry", "err", a.err, "next", next)
}

// Backoff is the wait after the attempts-th failed attempt: BaseBackoff
// doubled per attempt up to MaxBackoff, of which a random half is taken
// off ("equal jitter": never sooner than half, so receivers that are down
// are not hammered, and instances spread out).
func (s *Sender) Backoff(attempts int) time.Duration {
	return lifecycle.Backoff(attempts, s.o.BaseBackoff, s.o.MaxBackoff, s.o.Jitter())
}
