// Package idempotency holds the API's idempotency keys (table
// idempotency_keys): a client sends an Idempotency-Key with a POST, the
// first request does the work and stores its response, and every later
// request with that key gets the stored response back instead of a second
// side effect.
//
// The guarantee is the unique (user_id, idempotency_key) index: of two
// concurrent first requests one inserts the key and the other's insert
// violates the index, which is handled as a replay (the stored response,
// "in use" while the first still runs, or "reused" when the request is a
// different one). A request in flight holds the key by a lease
// (locked_until); a request that died without finishing leaves the key
// unlocked once its lease ends, and the next request with the same key and
// the same request takes it over. Keys live at least TTL and are then
// deleted by Cleanup; a key used again after that starts a new request.
package idempotency

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
)

// MaxKeyLen is the longest key accepted (as Stripe's).
const MaxKeyLen = 255

// Errors of a key's shape.
var (
	ErrKeyMissing = errors.New("the Idempotency-Key header is required")
	ErrKeyInvalid = errors.New("the Idempotency-Key must be 1 to 255 visible ASCII characters")
)

// CheckKey validates a key: 1 to 255 visible ASCII characters.
func CheckKey(k string) error {
	if k == "" {
		return ErrKeyMissing
	}
	if len(k) > MaxKeyLen {
		return ErrKeyInvalid
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return ErrKeyInvalid
		}
	}
	return nil
}

// Field is one parsed field of a request, as the handler uses it. A
// request's fingerprint is over its fields, never over the bytes it came
// in: two bodies that mean the same request (other key order, spacing,
// escapes, number spelling) have one fingerprint, and two that mean
// different requests have different ones, whatever a JSON reader's
// leniencies (case-insensitive or repeated keys) would make of them.
type Field struct {
	name  string
	kind  byte // 'i' an integer, 's' a string, '-' absent
	value string
}

// Int is an integer field; nil: absent.
func Int(name string, v *int64) Field {
	if v == nil {
		return Field{name: name, kind: '-'}
	}
	return Field{name: name, kind: 'i', value: strconv.FormatInt(*v, 10)}
}

// String is a text field; nil: absent (an empty string is present).
func String(name string, v *string) Field {
	if v == nil {
		return Field{name: name, kind: '-'}
	}
	return Field{name: name, kind: 's', value: *v}
}

// Fingerprint identifies a request: SHA-256 of its method, its route and
// its parsed fields, in the handler's fixed order. Every part is written
// with its length first, so no two different requests encode alike.
func Fingerprint(method, path string, fields ...Field) string {
	h := sha256.New()
	part := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	part("kifpool-request-v2")
	part(method)
	part(path)
	for _, f := range fields {
		part(f.name)
		part(string(f.kind))
		part(f.value)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Record is one stored key.
type Record struct {
	ID             int64 `gorm:"primaryKey"`
	UserID         int64
	IdempotencyKey string
	RequestMethod  string
	RequestPath    string
	Fingerprint    string
	LockedUntil    *time.Time
	ResponseStatus *int
	ResponseType   string
	ResponseBody   *string
	TopUpID        *int64
	// Token is the token the request's effect is created with (FormToken),
	// derived when the record is made and kept; "" for a record made
	// before it was kept (migration 00052), or by an instance without the
	// column, whose token is derived.
	Token      string `gorm:"column:form_token"`
	CreatedAt  time.Time
	FinishedAt *time.Time
	// takenOver: Begin took this record over from a request that left it
	// unfinished, which may have made its effect (Discard keeps it).
	takenOver bool `gorm:"-"`
}

// TableName maps Record to idempotency_keys.
func (Record) TableName() string { return "idempotency_keys" }

// Finished reports whether the record holds a response.
func (r Record) Finished() bool { return r.ResponseStatus != nil && r.ResponseBody != nil }

// Outcome is what Begin decided.
type Outcome int

const (
	// Acquired: the caller runs the request and then calls Finish (a
	// response to store), Release (no response, keep the key for a retry
	// of the same request) or Discard (nothing happened: forget the key).
	Acquired Outcome = iota
	// Replay: the key holds a finished request's response.
	Replay
	// InUse: another request with this key is still running.
	InUse
	// Mismatch: the key was used for another request (method, path or
	// body differ).
	Mismatch
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Replay:
		return "replay"
	case InUse:
		return "in_use"
	case Mismatch:
		return "mismatch"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Options tune the store. Zero values take defaults.
type Options struct {
	// TTL: keys are kept at least this long (default 24h).
	TTL time.Duration
	// Lease: how long a request in flight holds its key; past it a retry
	// takes the key over (default 1 minute). It must be longer than the
	// slowest request.
	Lease time.Duration
	// Secret keys the tokens derived from records made before each kept
	// its own (FormToken).
	Secret []byte
	Now    func() time.Time
}

// Store runs idempotency keys over the database.
type Store struct {
	db     *store.DB
	ttl    time.Duration
	lease  time.Duration
	secret []byte
	now    func() time.Time
	// cleanupBatch: Cleanup's batch (cleanupBatch; tests set less).
	cleanupBatch int
}

// NewStore returns a key store over db.
func NewStore(db *store.DB, o Options) *Store {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{db: db, ttl: o.TTL, lease: o.Lease, secret: o.Secret, now: o.Now, cleanupBatch: cleanupBatch}
}

// TTL is how long keys are kept at least.
func (s *Store) TTL() time.Duration { return s.ttl }

func (s *Store) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Request identifies the request a key is used for.
type Request struct {
	UserID      int64
	Key         string
	Method      string
	Path        string
	Fingerprint string
}

// Begin looks the key up for the user and decides: run the request
// (Acquired, the key is now leased to the caller), replay the stored
// response, refuse it as in use, or refuse it as a mismatch.
//
// A key seen before is answered by its one read (Lookup), writing
// nothing: a partner's retries of a finished request cost no insert that
// the unique index refuses, which on PostgreSQL left a dead row and spent
// a transaction id each. A new key, or one its request left unfinished,
// goes on to the insert, whose unique index decides between racing
// requests as before.
func (s *Store) Begin(ctx context.Context, r Request) (Outcome, Record, error) {
	out, old, found, err := s.Lookup(ctx, r)
	switch {
	case err != nil:
		return 0, Record{}, err
	case found && out != Acquired:
		return out, old, nil
	}
	for attempt := 0; attempt < 5; attempt++ {
		now := s.clock()
		until := now.Add(s.lease)
		rec := Record{UserID: r.UserID, IdempotencyKey: r.Key, RequestMethod: r.Method, RequestPath: r.Path,
			Fingerprint: r.Fingerprint, LockedUntil: &until, CreatedAt: now}
		// The record and its token in one transaction: the token is the
		// one an instance without the column derives (a rolling upgrade's
		// old instances agree on it), and from then on the record's own,
		// whatever the secret becomes. A record is never left without
		// it, which a later secret would derive otherwise.
		err := s.db.Tx(ctx, func(tx *gorm.DB) error {
			if err := tx.Create(&rec).Error; err != nil {
				return err
			}
			rec.Token = s.derive(rec)
			return tx.Model(&Record{}).Where("id = ?", rec.ID).Update("form_token", rec.Token).Error
		})
		if err == nil {
			return Acquired, rec, nil
		}
		rec.Token = ""
		if !store.IsUniqueViolation(err) {
			return 0, Record{}, fmt.Errorf("store idempotency key: %w", err)
		}
		// The unique (user_id, key) index refused a second row: answer
		// from the first one.
		var old Record
		err = s.db.Gorm.WithContext(ctx).Where("user_id = ? AND idempotency_key = ?", r.UserID, r.Key).Take(&old).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue // deleted meanwhile (cleanup): insert again
		}
		if err != nil {
			return 0, Record{}, fmt.Errorf("load idempotency key: %w", err)
		}
		if out := s.decide(r, old, now); out != Acquired {
			return out, old, nil
		}
		// Released, or its request died: take it over, if no one else
		// just did.
		res := s.db.Gorm.WithContext(ctx).Model(&Record{}).
			Where("id = ? AND response_status IS NULL AND (locked_until IS NULL OR locked_until <= ?)", old.ID, now).
			Update("locked_until", until)
		if res.Error != nil {
			return 0, Record{}, fmt.Errorf("take over idempotency key %d: %w", old.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			old.LockedUntil, old.takenOver = &until, true
			return Acquired, old, nil
		}
	}
	return InUse, Record{}, nil
}

// Lookup reads the key without writing and decides as Begin would: the
// stored response (Replay), InUse, Mismatch, or Acquired for a key whose
// request left it unfinished and unleased (the caller then goes through
// Begin, which takes it over). found is false when the user has no such
// key: the caller may Claim it in its own transaction.
func (s *Store) Lookup(ctx context.Context, r Request) (out Outcome, rec Record, found bool, err error) {
	if err := CheckKey(r.Key); err != nil {
		return 0, Record{}, false, err
	}
	var recs []Record
	if err := s.db.Gorm.WithContext(ctx).Where("user_id = ? AND idempotency_key = ?", r.UserID, r.Key).Limit(1).Find(&recs).Error; err != nil {
		return 0, Record{}, false, fmt.Errorf("load idempotency key: %w", err)
	}
	if len(recs) == 0 {
		return 0, Record{}, false, nil
	}
	return s.decide(r, recs[0], s.clock()), recs[0], true, nil
}

// decide is what a request finds in its key's record.
func (s *Store) decide(r Request, old Record, now time.Time) Outcome {
	switch {
	case old.RequestMethod != r.Method || old.RequestPath != r.Path || old.Fingerprint != r.Fingerprint:
		return Mismatch
	case old.Finished():
		return Replay
	case old.LockedUntil != nil && old.LockedUntil.After(now):
		return InUse
	}
	return Acquired
}

// Answer is a request's response as its key stores it.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Claim inserts the key's record, already finished with its answer, in
// the caller's transaction tx: the request's effect and its answer then
// commit together, in one commit, or neither does. ok is false when the
// user has the key already (the unique (user_id, key) index; on
// PostgreSQL the insert first waits for a racing transaction that holds
// it to end): the caller rolls back and answers from that record
// (Lookup). Nothing else in tx may have been written before: a refusal
// rolls the record back with the rest, as Discard forgets a key.
func (s *Store) Claim(tx *gorm.DB, r Request, now time.Time, a Answer) (rec Record, ok bool, err error) {
	if err := CheckKey(r.Key); err != nil {
		return Record{}, false, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	status, body := a.Status, string(a.Body)
	var ids []int64
	if err := store.Scan(tx.Raw(`INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, fingerprint,
			response_status, response_type, response_body, created_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING id`,
		r.UserID, r.Key, r.Method, r.Path, r.Fingerprint, status, a.ContentType, body, now, now), &ids); err != nil {
		return Record{}, false, fmt.Errorf("store idempotency key: %w", err)
	}
	if len(ids) == 0 {
		return Record{}, false, nil
	}
	return Record{ID: ids[0], UserID: r.UserID, IdempotencyKey: r.Key, RequestMethod: r.Method, RequestPath: r.Path,
		Fingerprint: r.Fingerprint, ResponseStatus: &status, ResponseType: a.ContentType, ResponseBody: &body,
		CreatedAt: now, FinishedAt: &now}, true, nil
}

// Finish stores the response of an acquired request and unlocks the key.
func (s *Store) Finish(ctx context.Context, rec Record, status int, contentType string, body []byte, topUpID *int64) (Record, error) {
	now := s.clock()
	b := string(body)
	res := s.held(s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&Record{}), rec).
		Updates(map[string]any{"response_status": status, "response_type": contentType, "response_body": b,
			"topup_id": topUpID, "locked_until": nil, "finished_at": now})
	if res.Error != nil {
		return rec, fmt.Errorf("store response of idempotency key %d: %w", rec.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return rec, fmt.Errorf("store response of idempotency key %d: already finished, deleted, or taken over by a retry after its lease", rec.ID)
	}
	rec.ResponseStatus, rec.ResponseType, rec.ResponseBody, rec.TopUpID, rec.LockedUntil, rec.FinishedAt = &status, contentType, &b, topUpID, nil, &now
	return rec, nil
}

// Release unlocks an acquired key without a response: the request may
// have had an effect (a payment row), so the key stays, and a retry of the
// same request takes it over at once and finds that effect.
func (s *Store) Release(ctx context.Context, rec Record) error {
	err := s.held(s.db.Gorm.WithContext(context.WithoutCancel(ctx)).Model(&Record{}), rec).
		Update("locked_until", nil).Error
	if err != nil {
		return fmt.Errorf("release idempotency key %d: %w", rec.ID, err)
	}
	return nil
}

// Discard forgets an acquired key whose request failed before any side
// effect: the client may fix the request and retry with the same key. A
// record Begin took over is only released (Release): the request that
// left it may have made its effect, which the next retry must find by
// the record's token, not make again under a new record's.
func (s *Store) Discard(ctx context.Context, rec Record) error {
	if rec.takenOver {
		return s.Release(ctx, rec)
	}
	err := s.held(s.db.Gorm.WithContext(context.WithoutCancel(ctx)), rec).Delete(&Record{}).Error
	if err != nil {
		return fmt.Errorf("discard idempotency key %d: %w", rec.ID, err)
	}
	return nil
}

// held narrows q to rec's row while the caller still holds it: no
// response yet, and the lease Begin gave this caller. A request that ran
// past its lease, whose key a retry took over, changes nothing of the
// retry's: its Discard does not delete the record the retry works under
// (whose next retry would then make the effect again under a new token),
// its Release does not end the retry's lease, and its Finish does not
// answer for it. The key's effect is one either way (the token's unique
// indexes): the request that lost its lease only loses the say.
func (s *Store) held(q *gorm.DB, rec Record) *gorm.DB {
	q = q.Where("id = ? AND response_status IS NULL", rec.ID)
	if rec.LockedUntil != nil {
		q = q.Where("locked_until = ?", *rec.LockedUntil)
	}
	return q
}

// FormToken is the token a record's effect is created with (22 base64url
// characters, the shape of a form token): the effects' unique (user_id,
// form_token) indexes then also guard the API, and a retry that takes a
// key over finds the effect its first request made. It is the record's
// own, kept with it, so that it does not depend on a secret an instance
// may not share; a record made before it was kept derives it from the
// record with the secret, as then.
func (s *Store) FormToken(rec Record) string {
	if rec.Token != "" {
		return rec.Token
	}
	return s.derive(rec)
}

// derive is a record's token derived from it with the secret (22
// base64url characters, the shape of a form token).
func (s *Store) derive(rec Record) string {
	m := hmac.New(sha256.New, s.secret)
	fmt.Fprintf(m, "idempotency-key:%d:%d", rec.UserID, rec.ID)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// UnfinishedTTL is how long a key whose request never stored its answer
// (it died, or failed after it may have made its effect) is kept at least,
// whatever the TTL: its client never had an answer and may still be
// retrying, and a retry that finds no key would make the effect again
// under a new token.
const UnfinishedTTL = 7 * 24 * time.Hour

// Cleanup deletes the answered keys older than the TTL, and the unanswered
// ones older than the longer of the TTL and UnfinishedTTL (never one whose
// request is somehow still running), and returns how many.
//
// It deletes in batches of cleanupBatch, each its own statement: a
// backlog (a client that sends a new key with every request) is never one
// long delete holding its locks.
func (s *Store) Cleanup(ctx context.Context) (int64, error) {
	now := s.clock()
	var total int64
	for {
		// created_at < now-TTL holds for both kinds: said on its own, it
		// bounds the index scan; the OR then picks within it.
		expired := s.db.Gorm.Model(&Record{}).Select("id").
			Where("created_at < ?", now.Add(-s.ttl)).
			Where("(locked_until IS NULL OR locked_until <= ?)", now).
			Where("(response_status IS NOT NULL AND created_at < ?) OR created_at < ?", now.Add(-s.ttl), now.Add(-max(s.ttl, UnfinishedTTL))).
			Limit(s.cleanupBatch)
		res := s.db.Gorm.WithContext(ctx).Where("id IN (?)", expired).Delete(&Record{})
		if res.Error != nil {
			return total, fmt.Errorf("delete expired idempotency keys: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(s.cleanupBatch) || ctx.Err() != nil {
			return total, nil
		}
	}
}

// cleanupBatch is how many keys one of Cleanup's deletes takes at most.
const cleanupBatch = 1000
