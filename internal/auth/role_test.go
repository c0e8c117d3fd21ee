package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// Role changes and resets from the command line are audited (admin_id
// NULL), end every session's second factor, and hand out enrolment codes;
// the enrolment code gates the authenticator's secret (issue 20, findings
// 9 and 10), on both databases.
func TestRoleChangesAndEnrolmentCodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost})
		u, err := svc.SignUp(ctx, "ops@example.com", "correct horse battery", auth.RoleUser, "en")
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := svc.NewSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := svc.SetRole(ctx, "ops@example.com", auth.RoleAdmin)
		if err != nil || ch.EnrolmentCode == "" || !ch.User.IsAdmin() {
			t.Fatalf("promote: %+v %v", ch, err)
		}
		_, sess, err := svc.Lookup(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		// Without the code, no secret.
		if _, err := svc.BeginTOTP(ctx, u.ID, "AAAA-BBBB-CCCC-DDDD"); !errors.Is(err, auth.ErrEnrolmentCode) {
			t.Fatalf("a wrong enrolment code: %v", err)
		}
		en, err := svc.BeginTOTP(ctx, u.ID, strings.ToLower(ch.EnrolmentCode))
		if err != nil || en.Secret == "" {
			t.Fatalf("the right enrolment code (typed in lower case): %v", err)
		}
		if _, _, err := svc.ConfirmTOTP(ctx, u.ID, sess.ID, "AAAA-BBBB-CCCC-DDDD", "123456"); !errors.Is(err, auth.ErrEnrolmentCode) {
			t.Fatalf("confirm with a wrong enrolment code: %v", err)
		}
		if _, _, err := svc.ResetTOTP(ctx, "nobody@example.com"); err == nil {
			t.Fatal("reset of nobody")
		}
		_, code, err := svc.ResetTOTP(ctx, "ops@example.com")
		if err != nil || code == "" || code == ch.EnrolmentCode {
			t.Fatalf("reset: %q %v", code, err)
		}
		if _, err := svc.BeginTOTP(ctx, u.ID, ch.EnrolmentCode); !errors.Is(err, auth.ErrEnrolmentCode) {
			t.Fatalf("the old enrolment code after a reset: %v", err)
		}
		// A passed session loses its second factor on any role change.
		if err := db.Gorm.Exec(`UPDATE sessions SET second_factor_at = ?`, time.Now().UTC()).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetRole(ctx, "ops@example.com", auth.RoleUser); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetRole(ctx, "ops@example.com", auth.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if _, s2, err := svc.Lookup(ctx, tok); err != nil || s2.SecondFactorAt != nil {
			t.Fatalf("after demote and promote: %+v %v, want the second factor gone", s2, err)
		}
		rows, err := audit.NewLog(db).List(ctx, audit.Query{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			if r.AdminID != 0 || r.AdminEmail != "" || r.TargetUserID == nil || *r.TargetUserID != u.ID {
				t.Errorf("entry %+v: want no admin, the user as target", r.Entry)
			}
			got = append([]string{string(r.Action)}, got...)
		}
		if want := "cli_promote cli_reset_2fa cli_demote cli_promote"; strings.Join(got, " ") != want {
			t.Fatalf("audit log %q, want %q", strings.Join(got, " "), want)
		}
		// An admin's action still needs its admin.
		if err := audit.Record(db.Gorm, audit.Entry{Action: audit.ActionRecheck}); err == nil {
			t.Fatal("an admin action without an admin was recorded")
		}
	})
}
