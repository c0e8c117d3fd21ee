package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// Enabling again: the owner brings back an endpoint they disabled, or
// one marked failing; new events reach it from then on, while what ended
// when it was disabled (or gave up) stays ended and what happened while
// it was disabled was never queued. An endpoint an admin disabled stays
// disabled for its owner (also when the owner had disabled it first) until
// an admin enables it, audited; an admin does not enable one its owner
// disabled. Another user's endpoint is not found, and enabling past the
// limit of enabled endpoints is refused.
func TestEnable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		uid, pays := seedTopUp(t, db, "owner@example.com", 4)
		stranger, _ := seedTopUp(t, db, "stranger@example.com", 0)
		admin, _ := seedTopUp(t, db, "admin@example.com", 0)
		ep, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/hook", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		get := func() webhook.Endpoint {
			t.Helper()
			e, err := svc.Get(ctx, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		queued := func(pid int64) int64 {
			t.Helper()
			return storetest.Count(t, db, `SELECT COUNT(*) FROM webhook_deliveries WHERE topup_id = ?`, pid)
		}
		audits := func() int64 {
			t.Helper()
			return storetest.Count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action = 'webhook_enable' AND target_user_id = ?`, uid)
		}
		ev := func(pid int64) webhook.Event {
			return webhook.Event{UserID: uid, TopUpID: pid, Type: webhook.TypeCredited, TopUp: map[string]any{"p": pid}, CreatedAt: clk.Now()}
		}

		// Disabled by its owner: the pending row ends, a new event is not
		// queued; enabled again, the next event is, the ended row stays.
		enqueue(t, db, ev(pays[0]))
		if err := svc.Disable(ctx, uid, ep.ID); err != nil {
			t.Fatal(err)
		}
		if e := get(); e.DisabledAt == nil || e.DisabledByAdmin() {
			t.Fatalf("after the owner's disable: %+v", e)
		}
		enqueue(t, db, ev(pays[1]))
		if err := svc.Enable(ctx, stranger, ep.ID, nil); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("another user's enable: %v", err)
		}
		if err := svc.Enable(ctx, uid, ep.ID, nil); err != nil {
			t.Fatal(err)
		}
		if e := get(); e.DisabledAt != nil || e.DisabledBy != nil || e.FailingSince != nil {
			t.Fatalf("after enable: %+v", e)
		}
		enqueue(t, db, ev(pays[2]))
		if a, b, c := queued(pays[0]), queued(pays[1]), queued(pays[2]); a != 1 || b != 0 || c != 1 {
			t.Fatalf("rows per event (before, while disabled, after): %d %d %d", a, b, c)
		}
		if d := deliveryRowOf(t, db, pays[0]); d.Status != webhook.StatusFailed || d.LastError != "endpoint disabled" {
			t.Fatalf("the row ended by the disable: %+v", d)
		}
		if d := deliveryRowOf(t, db, pays[2]); d.Status != webhook.StatusPending {
			t.Fatalf("the event after enable: %+v", d)
		}
		if err := svc.Enable(ctx, uid, ep.ID, nil); err != nil {
			t.Fatalf("enabling an enabled endpoint: %v", err)
		}

		// An admin's disable binds the owner, also over the owner's own.
		for _, ownerFirst := range []bool{false, true} {
			if ownerFirst {
				if err := svc.Disable(ctx, uid, ep.ID); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := svc.AdminDisable(ctx, admin, ep.ID); err != nil {
				t.Fatal(err)
			}
			if err := svc.Disable(ctx, uid, ep.ID); err != nil {
				t.Fatal(err)
			}
			if e := get(); e.DisabledAt == nil || !e.DisabledByAdmin() {
				t.Fatalf("owner first %v: after the admin's disable: %+v", ownerFirst, e)
			}
			if err := svc.Enable(ctx, uid, ep.ID, nil); !errors.Is(err, webhook.ErrDisabledByAdmin) {
				t.Fatalf("owner first %v: the owner enabled an admin's disable: %v", ownerFirst, err)
			}
			if e := get(); e.DisabledAt == nil {
				t.Fatalf("owner first %v: enabled after a refusal", ownerFirst)
			}
			before := audits()
			if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
				t.Fatal(err)
			}
			if e := get(); e.DisabledAt != nil || audits() != before+1 {
				t.Fatalf("owner first %v: after the admin's enable %+v, %d audit rows", ownerFirst, e, audits()-before)
			}
		}
		// An admin leaves the owner's disable alone.
		if err := svc.Disable(ctx, uid, ep.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AdminEnable(ctx, admin, ep.ID); !errors.Is(err, webhook.ErrDisabledByOwner) {
			t.Fatalf("an admin enabled the owner's disable: %v", err)
		}
		// Disabled by an admin whose account is gone (NULL): the owner's
		// enable is refused all the same.
		db.Gorm.Exec(`UPDATE webhook_endpoints SET disabled_by = NULL WHERE id = ?`, ep.ID)
		if err := svc.Enable(ctx, uid, ep.ID, nil); !errors.Is(err, webhook.ErrDisabledByAdmin) {
			t.Fatalf("the owner enabled a disable of unknown origin: %v", err)
		}
		if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
			t.Fatal(err)
		}

		// Failing: enabling clears the mark (audited for an admin); the
		// delivery that gave up stays failed (an admin may send it again).
		db.Gorm.Exec(`UPDATE webhook_deliveries SET status = 'failed', last_error = 'HTTP 500' WHERE topup_id = ?`, pays[2])
		db.Gorm.Exec(`UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?`, clk.Now(), ep.ID)
		if err := svc.Enable(ctx, uid, ep.ID, nil); err != nil {
			t.Fatal(err)
		}
		if e := get(); e.FailingSince != nil || e.DisabledAt != nil {
			t.Fatalf("after enabling a failing endpoint: %+v", e)
		}
		if d := deliveryRowOf(t, db, pays[2]); d.Status != webhook.StatusFailed {
			t.Fatalf("the given-up delivery after enable: %+v", d)
		}
		db.Gorm.Exec(`UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?`, clk.Now(), ep.ID)
		before := audits()
		if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
			t.Fatal(err)
		}
		if e := get(); e.FailingSince != nil || audits() != before+1 {
			t.Fatalf("after an admin's enable of a failing endpoint: %+v, %d audit rows", e, audits()-before)
		}

		// The limit counts enabled endpoints: the 11th cannot come back.
		if err := svc.Disable(ctx, uid, ep.ID); err != nil {
			t.Fatal(err)
		}
		for i := range webhook.MaxEndpoints {
			if _, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/more/"+strconv.Itoa(i), webhook.Types(), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.Enable(ctx, uid, ep.ID, nil); !errors.Is(err, webhook.ErrTooMany) {
			t.Fatalf("enabled past the limit: %v", err)
		}
		if e := get(); e.DisabledAt == nil {
			t.Fatal("enabled after the refusal")
		}
	})
}

// An endpoint marked failing still gets new events, and they are tried
// at once: its first 2xx clears the mark. A disabled endpoint gets none.
// One event's rows (one per endpoint) share its id and one body, encoded
// once.
func TestFailingEndpointGetsNewEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		down := true
		rec := &receiver{t: t, now: clk.Now, answer: func(int) int {
			if down {
				return 500
			}
			return 204
		}}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		uid, pays := seedTopUp(t, db, "a@example.com", 2)
		failing, secret, err := svc.Create(ctx, uid, srv.URL+"/failing", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.secret = secret
		s := webhook.NewSender(svc, webhook.SenderOptions{Jitter: func() float64 { return 0 }, RetryFor: time.Minute})
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeFailed, TopUp: map[string]any{"id": "p0"}, CreatedAt: clk.Now()})
		for range 10 {
			if _, err := s.DeliverDue(ctx); err != nil {
				t.Fatal(err)
			}
			clk.Add(20 * time.Second)
		}
		if e, _ := svc.Get(ctx, failing.ID); e.FailingSince == nil {
			t.Fatalf("not failing after the window: %+v", e)
		}
		other, _, err := svc.Create(ctx, uid, srv.URL+"/other", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		off, _, err := svc.Create(ctx, uid, srv.URL+"/off", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Disable(ctx, uid, off.ID); err != nil {
			t.Fatal(err)
		}

		at := clk.Now()
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[1], Type: webhook.TypeCredited,
			TopUp: map[string]any{"id": "p1", "status": "credited", "note": "<&>"}, CreatedAt: at})
		var rows []webhook.Delivery
		if err := db.Gorm.Where("topup_id = ?", pays[1]).Order("endpoint_id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].EndpointID != failing.ID || rows[1].EndpointID != other.ID {
			t.Fatalf("rows of the new event: %+v", rows)
		}
		want, _ := json.Marshal(map[string]any{"event_id": rows[0].EventID, "type": webhook.TypeCredited, "created_at": at,
			"topup": map[string]any{"id": "p1", "status": "credited", "note": "<&>"}})
		if rows[0].EventID != rows[1].EventID || rows[0].Body != rows[1].Body || !sameJSON(t, rows[0].Body, string(want)) {
			t.Fatalf("one event, two rows:\n%s\n%s\nwant %s", rows[0].Body, rows[1].Body, want)
		}

		// Tried at once, and again after the backoff; the first 2xx clears
		// the mark.
		calls := rec.n
		if _, err := s.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
		if d := deliveryRowOf(t, db, pays[1], failing.ID); d.Attempts != 1 || d.Status != webhook.StatusPending || rec.n != calls+2 {
			t.Fatalf("the failing endpoint's new row after one pass: %+v (%d calls)", d, rec.n-calls)
		}
		down = false
		clk.Add(20 * time.Second)
		if _, err := s.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
		if d := deliveryRowOf(t, db, pays[1], failing.ID); d.Status != webhook.StatusDelivered {
			t.Fatalf("the failing endpoint's new row: %+v", d)
		}
		if e, _ := svc.Get(ctx, failing.ID); e.FailingSince != nil {
			t.Fatalf("still failing after a delivery: %+v", e)
		}
		if d := deliveryRowOf(t, db, pays[0], failing.ID); d.Status != webhook.StatusFailed {
			t.Fatalf("the row that gave up: %+v", d)
		}
	})
}

// deliveryRowOf is the newest delivery of payment pid (to endpoint
// endpoint[0] when given).
func deliveryRowOf(t *testing.T, db *store.DB, pid int64, endpoint ...int64) webhook.Delivery {
	t.Helper()
	q := db.Gorm.Where("topup_id = ?", pid)
	if len(endpoint) > 0 {
		q = q.Where("endpoint_id = ?", endpoint[0])
	}
	var d webhook.Delivery
	if err := q.Order("id DESC").Take(&d).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// The admin reads one endpoint by its id, with its owner and its pending
// and failed deliveries counted, wherever it falls in the admin's list
// (its log page once looked it up in the list's first 500); the queue's
// figures count the same rows.
func TestAdminEndpointAndStats(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		uid, pays := seedTopUp(t, db, "owner@example.com", 3)
		other, _ := seedTopUp(t, db, "other@example.com", 0)
		first, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/first", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		newer, _, err := svc.Create(ctx, other, "http://127.0.0.1:9/newer", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pays {
			enqueue(t, db, webhook.Event{UserID: uid, TopUpID: p, Type: webhook.TypeCredited, TopUp: map[string]any{"p": p}, CreatedAt: clk.Now()})
		}
		// One of the three gave up.
		if err := db.Gorm.Exec(`UPDATE webhook_deliveries SET status = 'failed' WHERE id = (SELECT MIN(id) FROM webhook_deliveries)`).Error; err != nil {
			t.Fatal(err)
		}
		list, err := svc.All(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != newer.ID {
			t.Fatalf("the list's first: %+v, want endpoint %d alone", list, newer.ID)
		}
		got, err := svc.AdminEndpoint(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != first.ID || got.Email != "owner@example.com" || got.Pending != 2 || got.Failed != 1 {
			t.Fatalf("endpoint %d: id %d, %s, %d pending, %d failed; want owner@example.com, 2 pending, 1 failed", first.ID, got.ID, got.Email, got.Pending, got.Failed)
		}
		if _, err := svc.AdminEndpoint(ctx, newer.ID+1000); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("no such endpoint: %v, want ErrNotFound", err)
		}
		st, err := svc.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 2 || st.Failed != 1 {
			t.Fatalf("stats: %+v, want 2 pending and 1 failed", st)
		}
	})
}

// DisableAllForUser (what ends with every session): every endpoint of the
// user still on is turned off as its owner would, its pending deliveries
// end, and the owner may turn each on again; one an admin disabled stays
// the admin's, one already off stays as it was, and another user's
// endpoints and deliveries are not touched.
func TestDisableAllForUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		uid, pays := seedTopUp(t, db, "owner@example.com", 1)
		other, otherPays := seedTopUp(t, db, "other@example.com", 1)
		admin, _ := seedTopUp(t, db, "admin@example.com", 0)
		create := func(user int64, url string) webhook.Endpoint {
			t.Helper()
			ep, _, err := svc.Create(ctx, user, url, webhook.Types(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return ep
		}
		on1, on2 := create(uid, "http://127.0.0.1:9/one"), create(uid, "http://127.0.0.1:9/two")
		byOwner, byAdmin := create(uid, "http://127.0.0.1:9/three"), create(uid, "http://127.0.0.1:9/four")
		theirs := create(other, "http://127.0.0.1:9/theirs")
		if err := svc.Disable(ctx, uid, byOwner.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AdminDisable(ctx, admin, byAdmin.ID); err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"p": 1}, CreatedAt: clk.Now()})
		enqueue(t, db, webhook.Event{UserID: other, TopUpID: otherPays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"p": 2}, CreatedAt: clk.Now()})
		var n int64
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			var err error
			n, err = webhook.DisableAllForUser(tx, uid, clk.Now())
			return err
		}); err != nil || n != 2 {
			t.Fatalf("turned off %d, %v; want 2", n, err)
		}
		for _, ep := range []webhook.Endpoint{on1, on2, byOwner} {
			if e, err := svc.Get(ctx, ep.ID); err != nil || e.DisabledAt == nil || e.DisabledByAdmin() {
				t.Errorf("%s: %+v %v, want off as by its owner", ep.URL, e, err)
			}
		}
		if e, _ := svc.Get(ctx, byAdmin.ID); e.DisabledAt == nil || !e.DisabledByAdmin() {
			t.Errorf("the admin's disable: %+v", e)
		}
		if e, _ := svc.Get(ctx, theirs.ID); e.DisabledAt != nil {
			t.Errorf("another user's endpoint: %+v", e)
		}
		if d := deliveryRowOf(t, db, pays[0], on1.ID); d.Status != webhook.StatusFailed || d.LastError != webhook.LastErrorEndpointDisabled {
			t.Errorf("the owner's pending delivery: %s %q", d.Status, d.LastError)
		}
		if d := deliveryRowOf(t, db, otherPays[0], theirs.ID); d.Status != webhook.StatusPending {
			t.Errorf("another user's pending delivery: %s", d.Status)
		}
		// Nothing left on: a second call turns off nothing.
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			var err error
			n, err = webhook.DisableAllForUser(tx, uid, clk.Now())
			return err
		}); err != nil || n != 0 {
			t.Fatalf("again: %d, %v", n, err)
		}
		if err := svc.Enable(ctx, uid, on1.ID, nil); err != nil {
			t.Fatalf("the owner turns one on again: %v", err)
		}
		if e, _ := svc.Get(ctx, on1.ID); e.DisabledAt != nil {
			t.Errorf("after the owner's enable: %+v", e)
		}
	})
}

// The audit log (append-only) keeps an endpoint's URL without its query
// or fragment: a partner's query may hold its own secret. Each admin
// action on an endpoint is recorded with the URL as far as its path.
func TestAuditNotesKeepNoURLQuery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		uid, pays := seedTopUp(t, db, "secretive@example.com", 1)
		admin, _ := seedTopUp(t, db, "auditor@example.com", 0)
		ep, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/hook?token=PartnerSecret0123#frag", webhook.Types(), nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeCredited, TopUp: map[string]any{"p": pays[0]}, CreatedAt: clk.Now()})
		if _, err := svc.AdminDisable(ctx, admin, ep.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
			t.Fatal(err)
		}
		d := deliveryRowOf(t, db, pays[0], ep.ID) // ended by the disable
		if _, err := svc.Resend(ctx, admin, d.ID); err != nil {
			t.Fatal(err)
		}
		for _, action := range []string{"webhook_disable", "webhook_enable", "webhook_resend"} {
			var notes []string
			if err := db.Gorm.Raw(`SELECT note FROM admin_actions WHERE action = ? AND admin_id = ?`, action, admin).Scan(&notes).Error; err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 || !strings.Contains(notes[0], "http://127.0.0.1:9/hook") ||
				strings.ContainsAny(notes[0], "?#") || strings.Contains(notes[0], "PartnerSecret0123") {
				t.Errorf("%s: audit notes %q, want one with the URL up to its path and no query", action, notes)
			}
		}
	})
}
