package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/store"
)

// LastErrorEndpointDisabled is the last error of a delivery that ended
// because its endpoint was disabled (pages translate it).
const LastErrorEndpointDisabled = "endpoint disabled"

// Errors the pages translate.
var (
	ErrNoEvents      = errors.New("webhook: choose at least one event")
	ErrBadEvent      = errors.New("webhook: unknown event type")
	ErrTooMany       = errors.New("webhook: too many endpoints or origins")
	ErrNotFound      = errors.New("webhook: not found")
	ErrDuplicate     = errors.New("webhook: already registered")
	ErrNotResendable = errors.New("webhook: only a delivery that gave up or was delivered can be sent again")
	// ErrSuperseded: a later event of the same top-up, withdrawal or
	// charge to the same endpoint is delivered or queued; sent again, the
	// older event would arrive after it (out of order) and a partner
	// could act on the outdated state.
	ErrSuperseded = errors.New("webhook: a later event of the same subject was delivered or is queued; the older one is not sent again")
	// ErrDisabledByAdmin: an administrator disabled the endpoint; only an
	// administrator enables it again.
	ErrDisabledByAdmin = errors.New("webhook: endpoint disabled by an administrator")
	// ErrDisabledByOwner: its owner disabled the endpoint; an
	// administrator does not enable it over the owner's choice.
	ErrDisabledByOwner = errors.New("webhook: endpoint disabled by its owner")
)

// Limits per user.
const (
	MaxEndpoints = 10
	MaxOrigins   = 20
)

// RotationGrace is how long after a rotation (Rotate) deliveries are
// signed with the previous secret beside the new one, for the partner to
// deploy the new one (docs/webhooks.md).
const RotationGrace = 24 * time.Hour

// Endpoint is one webhook endpoint (without its secret). DisabledBy is
// who disabled it: the owner's own id, or an admin's (NULL on a disabled
// endpoint, its admin's account deleted, counts as an admin's).
type Endpoint struct {
	ID            int64 `gorm:"primaryKey"`
	UserID        int64
	URL           string `gorm:"column:url"`
	Events        string
	SecretEnc     string `json:"-"`
	CreatedAt     time.Time
	DisabledAt    *time.Time
	DisabledBy    *int64
	FailingSince  *time.Time
	LastSuccessAt *time.Time
	// PreviousSecretEnc is the secret the endpoint had before its last
	// rotation (sealed as SecretEnc), with which deliveries are signed
	// too until PreviousSecretUntil (Rotate); nil: never rotated.
	PreviousSecretEnc   *string `json:"-"`
	PreviousSecretUntil *time.Time
}

// Rotating reports whether deliveries to the endpoint are signed with its
// previous secret too at now (the grace period of its last rotation).
func (e Endpoint) Rotating(now time.Time) bool {
	return e.PreviousSecretEnc != nil && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil)
}

// TableName maps Endpoint to webhook_endpoints.
func (Endpoint) TableName() string { return "webhook_endpoints" }

// DisabledByAdmin reports whether the endpoint is disabled by someone
// other than its owner (an administrator): only an administrator enables
// it again.
func (e Endpoint) DisabledByAdmin() bool {
	return e.DisabledAt != nil && (e.DisabledBy == nil || *e.DisabledBy != e.UserID)
}

// EventTypes are the endpoint's subscribed types.
func (e Endpoint) EventTypes() []string { return eventsOf(e.Events) }

// Origin is one registered return origin.
type Origin struct {
	ID        int64 `gorm:"primaryKey"`
	UserID    int64
	Origin    string
	CreatedAt time.Time
}

// TableName maps Origin to webhook_return_origins.
func (Origin) TableName() string { return "webhook_return_origins" }

// Delivery is one outbox row: an event for one endpoint.
type Delivery struct {
	ID         int64 `gorm:"primaryKey"`
	EventID    string
	EndpointID int64
	// TopUpID names the top-up of a top-up's event, TransferID the
	// transfer of a transfer's, WithdrawalID the withdrawal of a
	// withdrawal's, ChargeID the charge of a charge's (exactly one of
	// them is set).
	TopUpID        *int64
	TransferID     *int64
	WithdrawalID   *int64
	ChargeID       *int64
	Type           string
	Body           string
	Status         string
	Attempts       int
	NextAttemptAt  time.Time
	LastAttemptAt  *time.Time
	LastHTTPStatus *int   `gorm:"column:last_http_status"`
	LastLatencyMS  *int64 `gorm:"column:last_latency_ms"`
	LastError      string
	CreatedAt      time.Time
	RetryFrom      time.Time
	DeliveredAt    *time.Time
}

// TableName maps Delivery to webhook_deliveries.
func (Delivery) TableName() string { return "webhook_deliveries" }

// Service manages endpoints and return origins, and reads the delivery
// log and the queue's figures.
type Service struct {
	db            *store.DB
	now           func() time.Time
	seal          sealer
	allowLoopback bool
}

// Options configure a Service.
type Options struct {
	// SessionSecret keys the encryption of signing secrets.
	SessionSecret []byte
	// AllowLoopback accepts http://localhost-style URLs and origins and
	// delivers to loopback addresses (WEBHOOK_ALLOW_LOOPBACK, development
	// and tests only).
	AllowLoopback bool
}

// New returns the service over db.
func New(db *store.DB, now func() time.Time, o Options) (*Service, error) {
	s, err := newSealer(o.SessionSecret)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Service{db: db, now: now, seal: s, allowLoopback: o.AllowLoopback}, nil
}

// AllowLoopback reports whether loopback targets are accepted.
func (s *Service) AllowLoopback() bool { return s.allowLoopback }

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Still is a check an owner's write runs in its transaction once the
// user's row is locked: the web passes auth.SessionLive, so that an
// endpoint asked for by a session that "sign out everywhere" (or a new
// password) ended meanwhile is refused with that check's error, never
// left enabled. Nil checks nothing (tests, operators).
type Still func(tx *gorm.DB) error

// Create registers an endpoint for userID and returns it with its signing
// secret, which is never shown again. still runs after the user's row is
// locked (Still).
func (s *Service) Create(ctx context.Context, userID int64, rawURL string, events []string, still Still) (Endpoint, string, error) {
	u, err := CheckEndpointURL(rawURL, s.allowLoopback)
	if err != nil {
		return Endpoint{}, "", err
	}
	var types []string
	for _, t := range Types() { // the stored order is the table's
		for _, e := range events {
			if e == t {
				types = append(types, t)
				break
			}
		}
	}
	for _, e := range events {
		if !ValidType(e) {
			return Endpoint{}, "", ErrBadEvent
		}
	}
	if len(types) == 0 {
		return Endpoint{}, "", ErrNoEvents
	}
	secret := newSigningSecret()
	enc, err := s.seal.seal(userID, secret)
	if err != nil {
		return Endpoint{}, "", err
	}
	ep := Endpoint{UserID: userID, URL: u, Events: eventsColumn(types), SecretEnc: enc, CreatedAt: s.clock()}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// Locked, and only for an account whose address is confirmed
		// (owner.ErrUnconfirmed).
		if err := owner.LockConfirmed(tx, s.db.Dialect, userID); err != nil {
			return err
		}
		if still != nil {
			if err := still(tx); err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Model(&Endpoint{}).Where("user_id = ? AND disabled_at IS NULL", userID).Count(&n).Error; err != nil {
			return err
		}
		if n >= MaxEndpoints {
			return ErrTooMany
		}
		// An administrator's disable binds the URL for its owner until an
		// administrator lifts it: the same URL added again is refused.
		// Compared as a receiver sees it (case of the scheme and host, a
		// default port and an empty path do not make another URL).
		var held []string
		if err := tx.Model(&Endpoint{}).Where("user_id = ? AND "+disabledByAdminSQL, userID).Pluck("url", &held).Error; err != nil {
			return err
		}
		for _, h := range held {
			if sameEndpointURL(h, u) {
				return ErrDisabledByAdmin
			}
		}
		return tx.Create(&ep).Error
	})
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	return ep, secret, nil
}

// ForUser lists a user's endpoints, newest first.
func (s *Service) ForUser(ctx context.Context, userID int64) ([]Endpoint, error) {
	var out []Endpoint
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("webhook endpoints of user %d: %w", userID, err)
	}
	return out, nil
}

// Get reads one endpoint.
func (s *Service) Get(ctx context.Context, id int64) (Endpoint, error) {
	var ep Endpoint
	err := s.db.Gorm.WithContext(ctx).Take(&ep, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ep, ErrNotFound
	}
	return ep, err
}

// disable stops an endpoint: it receives nothing more, and what was
// queued for it ends as failed ("endpoint disabled"). by is who: the
// owner, or an admin. An admin's disable of an endpoint its owner had
// disabled takes it over (only an admin enables it again then).
func (s *Service) disable(tx *gorm.DB, where string, args []any, by int64) error {
	now := s.clock()
	var ep Endpoint
	if err := tx.Where(where, args...).Take(&ep).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		}
		return err
	}
	if ep.DisabledAt != nil {
		if ep.DisabledByAdmin() || by == ep.UserID {
			return nil
		}
		return tx.Model(&Endpoint{}).Where("id = ?", ep.ID).Update("disabled_by", by).Error
	}
	// The deliveries before the endpoint, in the sender's order (it
	// records an attempt on the delivery, then on its endpoint): two
	// transactions taking the rows the other way round could deadlock.
	// 'pending' as a literal: the pending deliveries' partial index serves
	// it, not every delivery the endpoint ever had. One queued between
	// the two statements is ended by the claim (a disabled endpoint's).
	if err := tx.Model(&Delivery{}).Where("endpoint_id = ? AND status = '"+StatusPending+"'", ep.ID).
		Updates(map[string]any{"status": StatusFailed, "last_error": LastErrorEndpointDisabled}).Error; err != nil {
		return err
	}
	return tx.Model(&Endpoint{}).Where("id = ?", ep.ID).Updates(map[string]any{"disabled_at": now, "disabled_by": by}).Error
}

// DisableAllForUser stops every endpoint of the user still on, inside tx,
// as its owner would (the owner may enable each again): part of what
// ends with every session (sign out everywhere, a password change or
// reset), so that an endpoint someone else added while signed in does not
// go on hearing of the account's money. Their pending deliveries end, as
// when one endpoint is disabled. It returns how many it stopped.
func DisableAllForUser(tx *gorm.DB, userID int64, now time.Time) (int64, error) {
	var ids []int64
	if err := tx.Model(&Endpoint{}).Where("user_id = ? AND disabled_at IS NULL", userID).Pluck("id", &ids).Error; err != nil {
		return 0, fmt.Errorf("endpoints of user %d: %w", userID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	// The deliveries before the endpoints, in the sender's order (disable).
	if err := tx.Model(&Delivery{}).Where("endpoint_id IN ? AND status = '"+StatusPending+"'", ids).
		Updates(map[string]any{"status": StatusFailed, "last_error": LastErrorEndpointDisabled}).Error; err != nil {
		return 0, fmt.Errorf("end deliveries of user %d: %w", userID, err)
	}
	res := tx.Model(&Endpoint{}).Where("id IN ? AND disabled_at IS NULL", ids).
		Updates(map[string]any{"disabled_at": now.UTC().Truncate(time.Microsecond), "disabled_by": userID})
	if res.Error != nil {
		return 0, fmt.Errorf("disable endpoints of user %d: %w", userID, res.Error)
	}
	return res.RowsAffected, nil
}

// Disable stops one of the user's endpoints.
func (s *Service) Disable(ctx context.Context, userID, id int64) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		return s.disable(tx, "id = ? AND user_id = ?", []any{id, userID}, userID)
	})
}

// enable brings ep back: not disabled, not marked failing. New events
// are queued for it again from now on; deliveries that gave up (or ended
// when it was disabled) stay as they are, and events of the time it was
// disabled were never queued for it. A disabled endpoint counts again
// towards the owner's MaxEndpoints.
func (s *Service) enable(tx *gorm.DB, ep Endpoint, still Still) error {
	if ep.DisabledAt == nil && ep.FailingSince == nil {
		return nil
	}
	if ep.DisabledAt != nil {
		// Locked for the count, and only for an account whose address
		// is confirmed, as a new endpoint (Create); still as there.
		if err := owner.LockConfirmed(tx, s.db.Dialect, ep.UserID); err != nil {
			return err
		}
		if still != nil {
			if err := still(tx); err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Model(&Endpoint{}).Where("user_id = ? AND disabled_at IS NULL", ep.UserID).Count(&n).Error; err != nil {
			return err
		}
		if n >= MaxEndpoints {
			return ErrTooMany
		}
	}
	// Conditional on the row as read: a disable meanwhile is not undone.
	q := tx.Model(&Endpoint{}).Where("id = ?", ep.ID)
	switch {
	case ep.DisabledAt == nil:
		q = q.Where("disabled_at IS NULL")
	case ep.DisabledBy == nil:
		q = q.Where("disabled_at IS NOT NULL AND disabled_by IS NULL")
	default:
		q = q.Where("disabled_at IS NOT NULL AND disabled_by = ?", *ep.DisabledBy)
	}
	res := q.Updates(map[string]any{"disabled_at": nil, "disabled_by": nil, "failing_since": nil})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// Enable brings back one of the user's endpoints that its owner disabled
// or that is marked failing (enable). One an administrator disabled stays
// disabled: ErrDisabledByAdmin. still is as Create's: an endpoint that
// "sign out everywhere" turned off while this request was on its way
// stays off.
func (s *Service) Enable(ctx context.Context, userID, id int64, still Still) error {
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		var ep Endpoint
		if err := tx.Where("id = ? AND user_id = ?", id, userID).Take(&ep).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		if ep.DisabledByAdmin() {
			return ErrDisabledByAdmin
		}
		return s.enable(tx, ep, still)
	})
	if err != nil {
		return fmt.Errorf("enable webhook endpoint %d: %w", id, err)
	}
	return nil
}

// Rotate gives one of the user's endpoints a new signing secret, sealed
// as Create's, on the same row: its queue and log stay as they are. The
// secret it had becomes its previous one, with which deliveries are
// signed too for RotationGrace (Kifpool-Signature then carries two v1=,
// the new first); past that, with the new one only. Rotated again within
// the grace period, the previous secret is the then-current one (the
// secret before it is no longer signed with) and the grace period starts
// over. The new secret is returned once, never stored in the clear.
// still is as Create's: a session "sign out everywhere" ended while this
// request was on its way gets no secret. Another user's endpoint, or
// none, is ErrNotFound, and nothing changes. One an administrator
// disabled is ErrDisabledByAdmin, and nothing changes either: it stays
// as the administrator left it (as Delete and Enable refuse it) until an
// administrator enables it, with the secret its owner had.
func (s *Service) Rotate(ctx context.Context, userID, id int64, still Still) (Endpoint, string, error) {
	secret := newSigningSecret()
	enc, err := s.seal.seal(userID, secret)
	if err != nil {
		return Endpoint{}, "", err
	}
	now := s.clock()
	var ep Endpoint
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The owner's row first, as Create and "sign out everywhere"
		// (which then writes the endpoints) take it.
		if _, err := owner.Lock(tx, s.db.Dialect, userID); err != nil {
			return err
		}
		if still != nil {
			if err := still(tx); err != nil {
				return err
			}
		}
		// One conditional statement: only the owner's own row, not one
		// an administrator disabled, its current secret (as the statement
		// reads it) made the previous.
		res := tx.Model(&Endpoint{}).Where("id = ? AND user_id = ? AND NOT ("+disabledByAdminSQL+")", id, userID).
			Updates(map[string]any{"previous_secret_enc": gorm.Expr("secret_enc"), "previous_secret_until": now.Add(RotationGrace), "secret_enc": enc})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			// Why not: told apart after the fact, for the page's word.
			var n int64
			if err := tx.Model(&Endpoint{}).Where("id = ? AND user_id = ?", id, userID).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return ErrDisabledByAdmin
			}
			return ErrNotFound
		}
		return tx.Where("id = ? AND user_id = ?", id, userID).Take(&ep).Error
	})
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("rotate the secret of webhook endpoint %d: %w", id, err)
	}
	return ep, secret, nil
}

// disabledByAdminSQL is Endpoint.DisabledByAdmin as a condition.
const disabledByAdminSQL = "disabled_at IS NOT NULL AND (disabled_by IS NULL OR disabled_by <> user_id)"

// Delete removes one of the user's endpoints and its delivery log. One an
// administrator disabled stays (ErrDisabledByAdmin): it is what binds its
// URL for the owner until an administrator enables it (Create refuses the
// URL meanwhile), so that deleting and adding it again undoes nothing.
func (s *Service) Delete(ctx context.Context, userID, id int64) error {
	res := s.db.Gorm.WithContext(ctx).Where("id = ? AND user_id = ? AND NOT ("+disabledByAdminSQL+")", id, userID).Delete(&Endpoint{})
	if res.Error != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := s.db.Gorm.WithContext(ctx).Model(&Endpoint{}).Where("id = ? AND user_id = ?", id, userID).Count(&n).Error; err != nil {
			return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
		}
		if n > 0 {
			return ErrDisabledByAdmin
		}
		return ErrNotFound
	}
	return nil
}

// AdminEndpoint is an endpoint with its owner and queue figures.
type AdminEndpoint struct {
	Endpoint
	Email   string
	Pending int64
	Failed  int64
}

// adminEndpoints is the admin's read of endpoints: each with its owner's
// address and its pending and failed deliveries counted (each count a
// range of a partial index: webhook_deliveries_order_idx, 00042's
// webhook_deliveries_failed_idx).
func (s *Service) adminEndpoints(ctx context.Context) *gorm.DB {
	return s.db.Gorm.WithContext(ctx).Table("webhook_endpoints AS e").
		Select(`e.*, u.email AS email,
			(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending,
			(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'failed') AS failed`).
		Joins("JOIN users u ON u.id = e.user_id")
}

// All lists every endpoint (failing first, then newest), at most limit.
func (s *Service) All(ctx context.Context, limit int) ([]AdminEndpoint, error) {
	var out []AdminEndpoint
	err := s.adminEndpoints(ctx).Order("CASE WHEN e.failing_since IS NULL THEN 1 ELSE 0 END, e.id DESC").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints: %w", err)
	}
	return out, nil
}

// AdminEndpoint reads endpoint id as All lists it, whoever owns it;
// ErrNotFound when there is none.
func (s *Service) AdminEndpoint(ctx context.Context, id int64) (AdminEndpoint, error) {
	var out []AdminEndpoint
	if err := s.adminEndpoints(ctx).Where("e.id = ?", id).Limit(1).Scan(&out).Error; err != nil {
		return AdminEndpoint{}, fmt.Errorf("webhook endpoint %d: %w", id, err)
	}
	if len(out) == 0 {
		return AdminEndpoint{}, ErrNotFound
	}
	return out[0], nil
}

// lockOwnerOf locks the row of endpoint id's owner first (ErrNotFound for
// no such endpoint): an admin's action writes the endpoint, then its
// audit row, which refers to the owner's row; "sign out everywhere" locks
// that row, then writes the endpoints. Taken in the same order, the two
// wait for each other instead of deadlocking.
func (s *Service) lockOwnerOf(tx *gorm.DB, id int64) error {
	var uid []int64
	if err := tx.Model(&Endpoint{}).Where("id = ?", id).Pluck("user_id", &uid).Error; err != nil {
		return err
	}
	if len(uid) == 0 {
		return ErrNotFound
	}
	_, err := owner.Lock(tx, s.db.Dialect, uid[0])
	return err
}

// AdminDisable stops any endpoint; the audit log records it.
func (s *Service) AdminDisable(ctx context.Context, adminID, id int64) (Endpoint, error) {
	var ep Endpoint
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := s.lockOwnerOf(tx, id); err != nil {
			return err
		}
		if err := s.disable(tx, "id = ?", []any{id}, adminID); err != nil {
			return err
		}
		if err := tx.Take(&ep, id).Error; err != nil {
			return err
		}
		owner := ep.UserID
		return audit.Record(tx, audit.Entry{AdminID: adminID, Action: audit.ActionWebhookDisable, TargetUserID: &owner,
			Note: noteURL(ep.URL), Result: audit.ResultDone, CreatedAt: s.clock()})
	})
	return ep, err
}

// AdminEnable brings back an endpoint an administrator disabled, or one
// marked failing (enable); the audit log records it. One its owner
// disabled is the owner's to enable: ErrDisabledByOwner.
func (s *Service) AdminEnable(ctx context.Context, adminID, id int64) (Endpoint, error) {
	var ep Endpoint
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := s.lockOwnerOf(tx, id); err != nil {
			return err
		}
		if err := tx.Take(&ep, id).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		if ep.DisabledAt != nil && !ep.DisabledByAdmin() {
			return ErrDisabledByOwner
		}
		if ep.DisabledAt == nil && ep.FailingSince == nil {
			return nil // nothing to do, nothing to record
		}
		if err := s.enable(tx, ep, nil); err != nil {
			return err
		}
		owner := ep.UserID
		return audit.Record(tx, audit.Entry{AdminID: adminID, Action: audit.ActionWebhookEnable, TargetUserID: &owner,
			Note: noteURL(ep.URL), Result: audit.ResultDone, CreatedAt: s.clock()})
	})
	return ep, err
}

// Deliveries is an endpoint's delivery log, newest first, at most limit.
func (s *Service) Deliveries(ctx context.Context, endpointID int64, limit int) ([]Delivery, error) {
	var out []Delivery
	// The endpoint is written as a literal (a number): with a parameter,
	// PostgreSQL's generic plan assumes an average endpoint and walks
	// every delivery newest first filtering by it, which for a quiet
	// partner beside a busy one reads nearly all of them
	// (TestScalePagesUseIndexes). Endpoints are few, so are the
	// statements this makes.
	if err := s.db.Gorm.WithContext(ctx).Where("endpoint_id = " + strconv.FormatInt(endpointID, 10)).Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("deliveries of webhook endpoint %d: %w", endpointID, err)
	}
	return out, nil
}

// laterOfSubject holds for a row of webhook_deliveries (the statement's
// own table, unaliased) that a later delivery (a greater id: the order
// the sender keeps) of the same endpoint and the same top-up, withdrawal
// or charge supersedes: one pending (queued, or being sent) or delivered.
// A transfer has one event per endpoint and no order to keep.
const laterOfSubject = `EXISTS (SELECT 1 FROM webhook_deliveries later
	WHERE later.endpoint_id = webhook_deliveries.endpoint_id AND later.id > webhook_deliveries.id
	AND later.status IN ('pending', 'delivered')
	AND (later.topup_id = webhook_deliveries.topup_id OR later.withdrawal_id = webhook_deliveries.withdrawal_id
		OR later.charge_id = webhook_deliveries.charge_id))`

// Resend queues a delivery again now, with a fresh retry window (an
// admin's "send again"; audited). A delivery still pending is already
// going to be sent: ErrNotResendable. So is one of a disabled endpoint.
// One that a later event of its subject to the same endpoint, delivered
// or pending, supersedes is ErrSuperseded: sent again it would arrive
// after that event (the sender orders only pending rows), and the partner
// would apply an outdated state (topup.failed after topup.credited). The
// one conditional UPDATE checks it all, so a move racing it cannot slip
// between a check and the write.
func (s *Service) Resend(ctx context.Context, adminID, deliveryID int64) (Delivery, error) {
	var d Delivery
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		now := s.clock()
		res := tx.Model(&Delivery{}).
			Where("id = ? AND status IN ? AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled_at IS NULL)",
				deliveryID, []string{StatusFailed, StatusDelivered}).
			Where("NOT " + laterOfSubject).
			// Its backoff starts over with the window: counted on from the
			// attempts that gave up, the first retry would wait hours.
			Updates(map[string]any{"status": StatusPending, "next_attempt_at": now, "retry_from": now, "attempts": 0})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			if err := tx.Take(&d, deliveryID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			} else if err != nil {
				return err
			}
			if d.Status == StatusPending {
				return ErrNotResendable
			}
			// Why not: told apart after the fact, for the page's word only.
			var later int64
			if err := tx.Model(&Delivery{}).Where("id = ? AND "+laterOfSubject, deliveryID).Count(&later).Error; err != nil {
				return err
			}
			if later > 0 {
				return ErrSuperseded
			}
			return ErrNotResendable
		}
		if err := tx.Take(&d, deliveryID).Error; err != nil {
			return err
		}
		var ep Endpoint
		if err := tx.Take(&ep, d.EndpointID).Error; err != nil {
			return err
		}
		owner := ep.UserID
		return audit.Record(tx, audit.Entry{AdminID: adminID, Action: audit.ActionWebhookResend, TargetUserID: &owner, TopUpID: d.TopUpID,
			Note: d.EventID + " → " + noteURL(ep.URL), Result: audit.ResultDone, CreatedAt: now})
	})
	return d, err
}

// ---- return origins ----

// AddOrigin registers a return origin for userID (canonical form).
func (s *Service) AddOrigin(ctx context.Context, userID int64, raw string) (Origin, error) {
	origin, err := CanonicalOrigin(raw, s.allowLoopback)
	if err != nil {
		return Origin{}, err
	}
	o := Origin{UserID: userID, Origin: origin, CreatedAt: s.clock()}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := owner.LockConfirmed(tx, s.db.Dialect, userID); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&Origin{}).Where("user_id = ?", userID).Count(&n).Error; err != nil {
			return err
		}
		if n >= MaxOrigins {
			return ErrTooMany
		}
		return tx.Create(&o).Error
	})
	if store.IsUniqueViolation(err) {
		return Origin{}, ErrDuplicate
	}
	return o, err
}

// Origins lists a user's return origins.
func (s *Service) Origins(ctx context.Context, userID int64) ([]Origin, error) {
	var out []Origin
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("origin").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("return origins of user %d: %w", userID, err)
	}
	return out, nil
}

// DeleteOrigin removes one of the user's return origins.
func (s *Service) DeleteOrigin(ctx context.Context, userID, id int64) error {
	res := s.db.Gorm.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&Origin{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// CheckReturnURL accepts raw as a return_url of userID's top-up when it
// is a clean absolute URL whose origin (scheme, host and port, exactly)
// the user registered; else ErrReturnURLNotAllowed. It returns the URL as
// stored.
func (s *Service) CheckReturnURL(ctx context.Context, userID int64, raw string) (string, error) {
	u, origin, err := parseAbsolute(raw)
	if err != nil {
		return "", ErrReturnURLNotAllowed
	}
	var n int64
	if err := s.db.Gorm.WithContext(ctx).Model(&Origin{}).Where("user_id = ? AND origin = ?", userID, origin).Count(&n).Error; err != nil {
		return "", fmt.Errorf("return origins of user %d: %w", userID, err)
	}
	if n == 0 {
		return "", ErrReturnURLNotAllowed
	}
	return u.String(), nil
}

// ---- figures ----

// Stats are the queue's figures (metrics, admin page).
type Stats struct {
	// Pending deliveries, and the age of the oldest (zero when none).
	Pending   int64
	OldestAge time.Duration
	// Overdue: how long the pending delivery due longest has waited past
	// its attempt time (zero when none is due). A delivery waiting out its
	// endpoint's backoff, or claimed by a sender (its time moved on by
	// the lease), is not due: a large one means no sender runs.
	Overdue          time.Duration
	Failed           int64 // deliveries that gave up (or whose endpoint was disabled)
	FailingEndpoints int64
}

// The conditions of the queue's figures, their statuses written into the
// statements (see Stats).
const (
	pendingCond = "status = '" + StatusPending + "'"
	failedCond  = "status = '" + StatusFailed + "'"
)

// Stats reads the queue's figures at now.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	g := s.db.Gorm.WithContext(ctx)
	var oldest []time.Time
	// The statuses are written into the statements, not sent as
	// arguments: each statement then names its partial index's condition
	// (status = 'pending', status = 'failed', migrations 00015 and 00042)
	// in the plan PostgreSQL keeps for it too, which knows no argument.
	if err := g.Model(&Delivery{}).Where(pendingCond).Count(&st.Pending).Error; err != nil {
		return st, err
	}
	if err := g.Model(&Delivery{}).Where(pendingCond).Order("created_at").Limit(1).Pluck("created_at", &oldest).Error; err != nil {
		return st, err
	}
	if len(oldest) == 1 {
		st.OldestAge = max(s.clock().Sub(oldest[0]), 0)
	}
	// The due index (next_attempt_at where pending, migration 00015).
	var due []time.Time
	if err := g.Model(&Delivery{}).Where(pendingCond).Order("next_attempt_at").Limit(1).Pluck("next_attempt_at", &due).Error; err != nil {
		return st, err
	}
	if len(due) == 1 {
		st.Overdue = max(s.clock().Sub(due[0]), 0)
	}
	if err := g.Model(&Delivery{}).Where(failedCond).Count(&st.Failed).Error; err != nil {
		return st, err
	}
	if err := g.Model(&Endpoint{}).Where("failing_since IS NOT NULL AND disabled_at IS NULL").Count(&st.FailingEndpoints).Error; err != nil {
		return st, err
	}
	return st, nil
}
