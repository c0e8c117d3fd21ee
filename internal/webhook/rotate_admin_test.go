package webhook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

// An endpoint an administrator disabled is not its owner's to rotate:
// ErrDisabledByAdmin, no secret, and the row (secret, previous secret,
// disable) stays as the administrator left it, also over the owner's own
// disable before it. One only its owner disabled rotates; once an
// administrator enables it again, so does the formerly refused one.
func TestRotateDisabledByAdmin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, _ := newService(t, db)
		uid, _ := seedTopUp(t, db, "rotate-admin@example.com", 0)
		admin, _ := seedTopUp(t, db, "admin@example.com", 0)
		ep, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/hook", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ownerFirst := range []bool{false, true} {
			if ownerFirst {
				if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
					t.Fatal(err)
				}
				if err := svc.Disable(ctx, uid, ep.ID); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := svc.AdminDisable(ctx, admin, ep.ID); err != nil {
				t.Fatal(err)
			}
			before, err := svc.Get(ctx, ep.ID)
			if err != nil || !before.DisabledByAdmin() {
				t.Fatalf("owner first %v: after the admin's disable: %+v %v", ownerFirst, before, err)
			}
			if _, sec, err := svc.Rotate(ctx, uid, ep.ID, nil); !errors.Is(err, webhook.ErrDisabledByAdmin) || sec != "" {
				t.Fatalf("owner first %v: rotating an admin's disable: %q %v", ownerFirst, sec, err)
			}
			after, err := svc.Get(ctx, ep.ID)
			if err != nil || after.SecretEnc != before.SecretEnc || after.PreviousSecretEnc != nil || after.PreviousSecretUntil != nil ||
				after.DisabledAt == nil || !after.DisabledAt.Equal(*before.DisabledAt) || !after.DisabledByAdmin() {
				t.Fatalf("owner first %v: a refused rotation changed the endpoint: %+v %v", ownerFirst, after, err)
			}
		}
		// Another user's rotation of it is still not found.
		if _, _, err := svc.Rotate(ctx, admin, ep.ID, nil); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("another user's rotation: %v", err)
		}

		// Disabled by its owner only: it rotates (and stays disabled).
		own, _, err := svc.Create(ctx, uid, "http://127.0.0.1:9/own", []string{webhook.TypeCredited}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Disable(ctx, uid, own.ID); err != nil {
			t.Fatal(err)
		}
		if got, sec, err := svc.Rotate(ctx, uid, own.ID, nil); err != nil || sec == "" || got.DisabledAt == nil {
			t.Fatalf("rotating the owner's own disable: %+v %v", got, err)
		}

		// Enabled again by an administrator: the owner's to rotate.
		if _, err := svc.AdminEnable(ctx, admin, ep.ID); err != nil {
			t.Fatal(err)
		}
		if _, sec, err := svc.Rotate(ctx, uid, ep.ID, nil); err != nil || sec == "" {
			t.Fatalf("rotating after the admin's enable: %v", err)
		}
	})
}
