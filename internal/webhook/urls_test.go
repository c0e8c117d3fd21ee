package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/owner"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/webhook"
)

func TestCheckEndpointURL(t *testing.T) {
	for _, c := range []struct {
		url      string
		loopback bool
		want     error
	}{
		{"https://partner.example/hooks", false, nil},
		{"https://partner.example:8443/hooks?x=1", false, nil},
		{"http://partner.example/hooks", false, webhook.ErrURLScheme},
		{"http://partner.example/hooks", true, webhook.ErrURLScheme},
		{"http://127.0.0.1:9000/hook", false, webhook.ErrURLPrivate},
		{"http://127.0.0.1:9000/hook", true, nil},
		{"http://localhost:9000/hook", true, nil},
		{"http://[::1]:9000/hook", true, nil},
		{"https://localhost/hook", false, webhook.ErrURLPrivate},
		{"https://10.0.0.5/hook", false, webhook.ErrURLPrivate},
		{"https://10.0.0.5/hook", true, webhook.ErrURLPrivate},
		{"https://169.254.169.254/latest", true, webhook.ErrURLPrivate},
		{"https://[fe80::1]/x", true, webhook.ErrURLPrivate},
		{"https://[::ffff:192.168.1.1]/x", true, webhook.ErrURLPrivate},
		{"https://100.64.1.1/x", false, webhook.ErrURLPrivate},
		// Issue 31, item 10: IPv4-compatible and IPv4-translated IPv6
		// forms embed any IPv4 address; refused, loopback allowed or not.
		{"https://[::127.0.0.1]/x", false, webhook.ErrURLPrivate},
		{"https://[::127.0.0.1]/x", true, webhook.ErrURLPrivate},
		{"https://[::10.0.0.1]/x", true, webhook.ErrURLPrivate},
		{"https://[::a9fe:a9fe]/latest", true, webhook.ErrURLPrivate},
		{"https://[::8.8.8.8]/x", false, webhook.ErrURLPrivate},
		{"https://[::ffff:0:10.0.0.1]/x", true, webhook.ErrURLPrivate},
		{"https://0.0.0.0/x", true, webhook.ErrURLPrivate},
		{"https://user:pw@partner.example/x", false, webhook.ErrURLInvalid},
		{"https://partner.example\\@evil.example/", false, webhook.ErrURLInvalid},
		{"ftp://partner.example/", false, webhook.ErrURLScheme},
		{"/relative", false, webhook.ErrURLInvalid},
		{"https:///nohost", false, webhook.ErrURLInvalid},
		{"https://partner.example/ x", false, webhook.ErrURLInvalid},
		{"", false, webhook.ErrURLInvalid},
	} {
		_, err := webhook.CheckEndpointURL(c.url, c.loopback)
		if !errors.Is(err, c.want) && !(c.want != nil && err != nil && c.want == webhook.ErrURLInvalid) {
			t.Errorf("%q (loopback %v): %v, want %v", c.url, c.loopback, err, c.want)
		}
		if (err == nil) != (c.want == nil) {
			t.Errorf("%q (loopback %v): %v, want %v", c.url, c.loopback, err, c.want)
		}
	}
}

func TestCanonicalOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Shop.Example":       "https://shop.example",
		"https://shop.example/":      "https://shop.example",
		"https://shop.example:443":   "https://shop.example",
		"https://shop.example:8443":  "https://shop.example:8443",
		"http://127.0.0.1:8080":      "http://127.0.0.1:8080",
		"https://shop.example/path":  "",
		"https://shop.example?x":     "",
		"https://u@shop.example":     "",
		"http://shop.example":        "",
		"https://shop.example:0443x": "",
	} {
		got, err := webhook.CanonicalOrigin(in, true)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}

// return_url: only an exactly registered origin (scheme, host, port);
// user info and lookalikes are refused.
func TestCheckReturnURL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, err := webhook.New(db, nil, webhook.Options{SessionSecret: secretKey})
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := seedTopUp(t, db, "a@example.com", 0)
		other, _ := seedTopUp(t, db, "b@example.com", 0)
		if _, err := svc.AddOrigin(ctx, uid, "https://Shop.Example"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AddOrigin(ctx, uid, "https://shop.example/"); !errors.Is(err, webhook.ErrDuplicate) {
			t.Fatalf("second registration: %v", err)
		}
		if _, err := svc.AddOrigin(ctx, other, "https://evil.example"); err != nil {
			t.Fatal(err)
		}
		for raw, ok := range map[string]bool{
			"https://shop.example/done?order=7":         true,
			"https://SHOP.example:443/done":             true,
			"https://shop.example:444/done":             false,
			"http://shop.example/done":                  false,
			"https://shop.example.evil.example/":        false,
			"https://shop.example@evil.example/":        false,
			"https://evil.example/":                     false, // another user's origin
			"https://evil.example\\@shop.example/":      false,
			"//shop.example/done":                       false,
			"https://sub.shop.example/":                 false,
			"javascript:alert(1)//https://shop.example": false,
		} {
			_, err := svc.CheckReturnURL(ctx, uid, raw)
			if (err == nil) != ok {
				t.Errorf("%q: %v, want allowed=%v", raw, err, ok)
			}
		}
		got, err := webhook.ReturnTarget("https://shop.example/done?order=7&status=fake", "abc", "credited")
		if err != nil || got != "https://shop.example/done?order=7&topup_id=abc&status=credited" {
			t.Fatalf("return target %q %v", got, err)
		}
	})
}

// The delivery client refuses what a name resolves to when it is not
// public (here: loopback without the development setting), and follows
// no redirect.
func TestClientRefusesPrivateAndRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c := webhook.NewClient(2*time.Second, false)
	if _, err := c.Post(u+"/ok", "application/json", nil); err == nil || !strings.Contains(err.Error(), "private") {
		t.Fatalf("loopback dialled without the setting: %v", err)
	}
	c = webhook.NewClient(2*time.Second, true)
	resp, err := c.Post(u+"/redirect", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect followed: %d", resp.StatusCode)
	}
}

// An account whose address is not confirmed registers no endpoint and no
// return origin, nor gets a disabled endpoint back (by itself or by an
// admin), whatever the form in front of the service: nothing is written;
// once confirmed, all are.
func TestNothingForAnUnconfirmedAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc, err := webhook.New(db, nil, webhook.Options{SessionSecret: secretKey})
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := seedTopUp(t, db, "squat@example.com", 0)
		adminID, _ := seedTopUp(t, db, "admin@example.com", 0)
		// Two endpoints from before the rule: one its owner disabled, one
		// an admin did.
		var old []int64
		for _, path := range []string{"/old-1", "/old-2"} {
			ep, _, err := svc.Create(ctx, uid, "https://partner.example"+path, []string{webhook.TypeCredited}, nil)
			if err != nil {
				t.Fatal(err)
			}
			old = append(old, ep.ID)
		}
		if err := svc.Disable(ctx, uid, old[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AdminDisable(ctx, adminID, old[1]); err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`UPDATE users SET email_verified_at = NULL WHERE id = ?`, uid).Error; err != nil {
			t.Fatal(err)
		}
		if err := svc.Enable(ctx, uid, old[0], nil); !errors.Is(err, owner.ErrUnconfirmed) {
			t.Fatalf("enable: %v", err)
		}
		if _, err := svc.AdminEnable(ctx, adminID, old[1]); !errors.Is(err, owner.ErrUnconfirmed) {
			t.Fatalf("admin's enable: %v", err)
		}
		var live int64
		if err := db.Gorm.Table("webhook_endpoints").Where("disabled_at IS NULL").Count(&live).Error; err != nil || live != 0 {
			t.Fatalf("%d endpoints enabled (%v)", live, err)
		}
		if _, _, err := svc.Create(ctx, uid, "https://partner.example/hooks", []string{webhook.TypeCredited}, nil); !errors.Is(err, owner.ErrUnconfirmed) {
			t.Fatalf("endpoint: %v", err)
		}
		if _, err := svc.AddOrigin(ctx, uid, "https://shop.example"); !errors.Is(err, owner.ErrUnconfirmed) {
			t.Fatalf("return origin: %v", err)
		}
		if n := storetest.Rows(t, db, "webhook_endpoints", "webhook_return_origins"); n["webhook_endpoints"] != 2 || n["webhook_return_origins"] != 0 {
			t.Fatalf("written: %v", n)
		}
		if err := db.Gorm.Exec(`UPDATE users SET email_verified_at = created_at WHERE id = ?`, uid).Error; err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Create(ctx, uid, "https://partner.example/hooks", []string{webhook.TypeCredited}, nil); err != nil {
			t.Fatalf("endpoint once confirmed: %v", err)
		}
		if _, err := svc.AddOrigin(ctx, uid, "https://shop.example"); err != nil {
			t.Fatalf("return origin once confirmed: %v", err)
		}
		if err := svc.Enable(ctx, uid, old[0], nil); err != nil {
			t.Fatalf("enable once confirmed: %v", err)
		}
		if _, err := svc.AdminEnable(ctx, adminID, old[1]); err != nil {
			t.Fatalf("admin's enable once confirmed: %v", err)
		}
	})
}
