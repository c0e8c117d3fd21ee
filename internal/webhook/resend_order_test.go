package webhook_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// "Send again" keeps a subject's order: an older delivery that a later
// event of the same top-up to the same endpoint supersedes (delivered,
// or pending: queued or being sent) is refused, nothing changed, since
// sent again it would arrive after that event (topup.failed after
// topup.credited) and the partner would apply the outdated state. A later
// event of another top-up, or to another endpoint, or one that gave up
// itself, does not stand in the way; nor does none.
func TestResendKeepsSubjectOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, clk := newService(t, db)
		admin, _ := seedTopUp(t, db, "resend-admin@example.com", 0)
		for i, c := range []struct {
			name string
			// later is the later event's status ("" for none), of the
			// same top-up unless otherTopUp, to the same endpoint unless
			// otherEndpoint.
			later                     string
			otherTopUp, otherEndpoint bool
			want                      error
		}{
			{name: "later delivered, same subject", later: webhook.StatusDelivered, want: webhook.ErrSuperseded},
			{name: "later pending, same subject", later: webhook.StatusPending, want: webhook.ErrSuperseded},
			{name: "later gave up, same subject", later: webhook.StatusFailed},
			{name: "later delivered, other top-up", later: webhook.StatusDelivered, otherTopUp: true},
			{name: "later delivered, other endpoint", later: webhook.StatusDelivered, otherEndpoint: true},
			{name: "later pending, other endpoint", later: webhook.StatusPending, otherEndpoint: true},
			{name: "no later event"},
		} {
			t.Run(c.name, func(t *testing.T) {
				uid, pays := seedTopUp(t, db, "resend"+strconv.Itoa(i)+"@example.com", 2)
				ep, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/hook", webhook.Types(), nil)
				if err != nil {
					t.Fatal(err)
				}
				// The older event, to ep only (the second endpoint comes
				// after it), gave up.
				enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pays[0], Type: webhook.TypeFailed, TopUp: map[string]any{"p": pays[0]}, CreatedAt: clk.Now()})
				old := deliveryRowOf(t, db, pays[0], ep.ID)
				if err := db.Gorm.Exec(`UPDATE webhook_deliveries SET status = 'failed', attempts = 7 WHERE id = ?`, old.ID).Error; err != nil {
					t.Fatal(err)
				}
				if c.later != "" {
					pid := pays[0]
					if c.otherTopUp {
						pid = pays[1]
					}
					endpoint := ep.ID
					if c.otherEndpoint {
						if err := db.Gorm.Exec(`UPDATE webhook_endpoints SET events = ',topup.needs_review,' WHERE id = ?`, ep.ID).Error; err != nil {
							t.Fatal(err)
						}
						other, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/other", webhook.Types(), nil)
						if err != nil {
							t.Fatal(err)
						}
						endpoint = other.ID
					}
					clk.Add(1)
					enqueue(t, db, webhook.Event{UserID: uid, TopUpID: pid, Type: webhook.TypeCredited, TopUp: map[string]any{"p": pid}, CreatedAt: clk.Now()})
					later := deliveryRowOf(t, db, pid, endpoint)
					if later.ID <= old.ID || later.Type != webhook.TypeCredited {
						t.Fatalf("later delivery %+v, older %+v", later, old)
					}
					if err := db.Gorm.Exec(`UPDATE webhook_deliveries SET status = ? WHERE id = ?`, c.later, later.ID).Error; err != nil {
						t.Fatal(err)
					}
				}
				byID := func() webhook.Delivery {
					t.Helper()
					var d webhook.Delivery
					if err := db.Gorm.Take(&d, old.ID).Error; err != nil {
						t.Fatal(err)
					}
					return d
				}
				before := byID()
				audits := func() int64 {
					return storetest.Count(t, db, `SELECT COUNT(*) FROM admin_actions WHERE action = 'webhook_resend' AND target_user_id = ?`, uid)
				}
				clk.Add(1)
				_, err = svc.Resend(ctx, admin, old.ID)
				after := byID()
				if c.want != nil {
					if !errors.Is(err, c.want) {
						t.Fatalf("Resend: %v, want %v", err, c.want)
					}
					if after.Status != webhook.StatusFailed || after.Attempts != 7 || !after.RetryFrom.Equal(before.RetryFrom) ||
						!after.NextAttemptAt.Equal(before.NextAttemptAt) || audits() != 0 {
						t.Fatalf("a refused resend changed the row or was audited: %+v -> %+v, %d audited", before, after, audits())
					}
					return
				}
				if err != nil {
					t.Fatalf("Resend: %v", err)
				}
				if after.Status != webhook.StatusPending || after.Attempts != 0 || audits() != 1 {
					t.Fatalf("resent row %+v, %d audited", after, audits())
				}
			})
		}
	})
}
