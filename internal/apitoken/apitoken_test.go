package apitoken_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/auth"
	userrow "github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func TestTokenLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		users := auth.NewService(db, auth.Options{BcryptCost: 4})
		alice, err := users.SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		bob, _ := users.SignUp(ctx, "bob@example.com", "correct horse battery", "", "en")
		admin, _ := users.SignUp(ctx, "admin@example.com", "correct horse battery", "admin", "en")
		s := apitoken.NewService(db, clock)

		for _, tc := range []struct {
			name, scope, days string
			want              error
		}{
			{"", "read", "", apitoken.ErrNameRequired},
			{"   ", "read", "", apitoken.ErrNameRequired},
			{strings.Repeat("x", 101), "read", "", apitoken.ErrNameTooLong},
			{"app", "write", "", apitoken.ErrBadScope},
			{"app", "", "", apitoken.ErrBadScope},
			{"app", "read", "0", apitoken.ErrBadExpiry},
			{"app", "read", "366", apitoken.ErrBadExpiry},
			{"app", "read", "-1", apitoken.ErrBadExpiry},
			{"app", "read", "1.5", apitoken.ErrBadExpiry},
		} {
			if _, _, err := s.Create(ctx, apitoken.CreateInput{UserID: alice.ID, Name: tc.name, Scope: tc.scope, ExpiresDays: tc.days}); !errors.Is(err, tc.want) {
				t.Errorf("create %q/%q/%q: %v, want %v", tc.name, tc.scope, tc.days, err, tc.want)
			}
		}
		var n int64
		db.Gorm.Raw(`SELECT COUNT(*) FROM api_tokens`).Scan(&n)
		if n != 0 {
			t.Fatalf("%d tokens written by refused forms", n)
		}

		secret, tok, err := s.Create(ctx, apitoken.CreateInput{UserID: alice.ID, Name: " phone ", Scope: "topup", ExpiresDays: "30"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, "kp_") || len(secret) != 46 || tok.Name != "phone" || tok.Scope != apitoken.ScopeTopUp {
			t.Fatalf("token %q %+v", secret, tok)
		}
		var stored string
		db.Gorm.Raw(`SELECT token_hash FROM api_tokens WHERE id = ?`, tok.ID).Scan(&stored)
		if stored != apitoken.Hash(secret) || strings.Contains(stored, secret[3:]) {
			t.Fatalf("the token is not stored as its hash only")
		}
		p, err := s.Authenticate(ctx, secret)
		if err != nil || p.UserID != alice.ID || p.Email != "alice@example.com" || p.Scope != apitoken.ScopeTopUp {
			t.Fatalf("authenticate: %+v %v", p, err)
		}
		list, _ := s.ForUser(ctx, alice.ID)
		if len(list) != 1 || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(now) {
			t.Fatalf("last used not noted: %+v", list)
		}
		// Unknown, mangled and foreign-shaped secrets.
		for _, bad := range []string{"", "kp_", secret + "x", strings.TrimPrefix(secret, "kp_"), "Bearer " + secret} {
			if _, err := s.Authenticate(ctx, bad); !errors.Is(err, apitoken.ErrUnauthorized) {
				t.Errorf("authenticate %q: %v", bad, err)
			}
		}
		// Expiry.
		now = now.Add(30*24*time.Hour + time.Second)
		if _, err := s.Authenticate(ctx, secret); !errors.Is(err, apitoken.ErrUnauthorized) {
			t.Fatalf("expired token: %v", err)
		}
		// Revocation: only by the owner (bob gets not found), then 401.
		secret2, tok2, _ := s.Create(ctx, apitoken.CreateInput{UserID: alice.ID, Name: "ci", Scope: "read"})
		if err := s.Revoke(ctx, bob.ID, tok2.ID); !errors.Is(err, apitoken.ErrNotFound) {
			t.Fatalf("bob revokes alice's token: %v", err)
		}
		if _, err := s.Authenticate(ctx, secret2); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, alice.ID, tok2.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, alice.ID, tok2.ID); err != nil {
			t.Fatalf("revoking twice: %v", err)
		}
		if _, err := s.Authenticate(ctx, secret2); !errors.Is(err, apitoken.ErrUnauthorized) {
			t.Fatalf("revoked token: %v", err)
		}
		// Admins revoke anyone's token, recorded in the audit log.
		secret3, tok3, _ := s.Create(ctx, apitoken.CreateInput{UserID: bob.ID, Name: "server", Scope: "read"})
		rows, err := s.All(ctx, "bob@", 0)
		if err != nil || len(rows) != 1 || rows[0].Email != "bob@example.com" {
			t.Fatalf("admin list: %+v %v", rows, err)
		}
		// An address with an underscore is found by it, and the
		// underscore is no wildcard; Persian digits are read as Latin.
		under, _ := users.SignUp(ctx, "first_last7@example.com", "correct horse battery", "", "en")
		wild, _ := users.SignUp(ctx, "firstXlast7@example.com", "correct horse battery", "", "en")
		for _, u := range []int64{under.ID, wild.ID} {
			if _, _, err := s.Create(ctx, apitoken.CreateInput{UserID: u, Name: "leaked", Scope: "read"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []string{"first_last7@example.com", "st_la", "first_last۷"} {
			if rows, err := s.All(ctx, q, 0); err != nil || len(rows) != 1 || rows[0].Email != "first_last7@example.com" {
				t.Errorf("admin list by %q: %+v %v", q, rows, err)
			}
		}
		if rows, err := s.All(ctx, "%", 0); err != nil || len(rows) != 0 {
			t.Errorf("admin list by %%: %d rows %v, want none (no address holds it)", len(rows), err)
		}
		if _, err := s.AdminRevoke(ctx, admin.ID, tok3.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AdminRevoke(ctx, admin.ID, 999999); !errors.Is(err, apitoken.ErrNotFound) {
			t.Fatalf("revoke missing: %v", err)
		}
		if _, err := s.Authenticate(ctx, secret3); !errors.Is(err, apitoken.ErrUnauthorized) {
			t.Fatalf("admin-revoked token: %v", err)
		}
		db.Gorm.Raw(`SELECT COUNT(*) FROM admin_actions WHERE action = 'token_revoke' AND admin_id = ? AND target_user_id = ? AND result = 'done'`, admin.ID, bob.ID).Scan(&n)
		if n != 1 {
			t.Fatalf("%d audit entries for the revocation", n)
		}
	})
}

// A request notes its token's use in memory; FlushLastUsed writes it, at
// most once a minute per token; nothing is written on the request's path.
func TestLastUsedIsFlushed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		s := apitoken.NewService(db, func() time.Time { return now })
		alice, err := auth.NewService(db, auth.Options{BcryptCost: 4}).SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		secret, tok, err := s.Create(ctx, apitoken.CreateInput{UserID: alice.ID, Name: "ci", Scope: "read"})
		if err != nil {
			t.Fatal(err)
		}
		stored := func() *time.Time {
			var ts []apitoken.Token
			if err := db.Gorm.Where("id = ?", tok.ID).Find(&ts).Error; err != nil || len(ts) != 1 {
				t.Fatalf("token: %v", err)
			}
			return ts[0].LastUsedAt
		}
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if at := stored(); at != nil {
			t.Fatalf("written on the request's path: %v", at)
		}
		if n, err := s.FlushLastUsed(ctx); n != 1 || err != nil {
			t.Fatalf("flush: %d %v", n, err)
		}
		if at := stored(); at == nil || !at.Equal(now) {
			t.Fatalf("last use after the flush: %v", at)
		}
		// Within the minute: nothing noted; past it: noted again.
		now = now.Add(30 * time.Second)
		_, _ = s.Authenticate(ctx, secret)
		if n, _ := s.FlushLastUsed(ctx); n != 0 {
			t.Fatalf("noted twice in a minute: %d", n)
		}
		now = now.Add(time.Minute)
		_, _ = s.Authenticate(ctx, secret)
		if n, err := s.FlushLastUsed(ctx); n != 1 || err != nil {
			t.Fatalf("second flush: %d %v", n, err)
		}
		if at := stored(); at == nil || !at.Equal(now) {
			t.Fatalf("last use after the second flush: %v, want %v", at, now)
		}
	})
}

// An account whose address is not confirmed gets no token, whatever the
// form in front of the service: nothing is written.
func TestNoTokenForAnUnconfirmedAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		var uid int64
		if err := db.Gorm.Raw(`INSERT INTO users (email, password_hash, created_at) VALUES ('squat@example.com', 'x', ?) RETURNING id`, now).Scan(&uid).Error; err != nil {
			t.Fatal(err)
		}
		s := apitoken.NewService(db, func() time.Time { return now })
		if _, _, err := s.Create(context.Background(), apitoken.CreateInput{UserID: uid, Name: "app", Scope: string(apitoken.ScopeRead)}); !errors.Is(err, userrow.ErrUnconfirmed) {
			t.Fatalf("create: %v", err)
		}
		if n := storetest.Rows(t, db, "api_tokens")["api_tokens"]; n != 0 {
			t.Fatalf("%d tokens written", n)
		}
		if err := db.Gorm.Exec(`UPDATE users SET email_verified_at = ? WHERE id = ?`, now, uid).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(context.Background(), apitoken.CreateInput{UserID: uid, Name: "app", Scope: string(apitoken.ScopeRead)}); err != nil {
			t.Fatalf("create once confirmed: %v", err)
		}
	})
}
