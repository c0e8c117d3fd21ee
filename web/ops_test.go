package web_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/logging"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

func TestReadyzChecksDatabaseAndMigrations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		app := apptest.Start(t, db, apptest.Options{Unchecked: "it closes the database"})
		c := app.NewClient(t)
		if r := c.Get(routes.Readyz); r.Status != http.StatusOK || r.Body != "ready" {
			t.Fatalf("ready: %d %q", r.Status, r.Body)
		}
		// A migration of this build is not applied: not ready, still alive.
		reapply := storetest.UnapplyLatest(t, db)
		if r := c.Get(routes.Readyz); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("pending migration: %d, want 503", r.Status)
		}
		if r := c.Get(routes.Healthz); r.Status != http.StatusOK {
			t.Fatalf("liveness with a pending migration: %d", r.Status)
		}
		// Its row back: ready again.
		reapply()
		if r := c.Get(routes.Readyz); r.Status != http.StatusOK {
			t.Fatalf("ready again: %d", r.Status)
		}
		// The database is gone.
		db.Close()
		if r := c.Get(routes.Readyz); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("database closed: %d, want 503", r.Status)
		}
	})
}

func TestRequestIDOnResponsesAndLogLines(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	var buf apptest.LogBuffer
	log := logging.New(&buf, slog.LevelInfo, logging.FormatJSON)
	app := apptest.Start(t, db, apptest.Options{Server: server.Options{Log: log}})
	c := app.NewClient(t)

	r := c.Get(routes.SignIn)
	id := r.Header.Get("X-Request-Id")
	if len(id) < 8 {
		t.Fatalf("no request id header: %q", id)
	}
	// A proxy's id is kept; a malformed one is replaced.
	req, _ := http.NewRequest(http.MethodGet, app.URL+routes.SignIn, nil)
	req.Header.Set("X-Request-Id", "proxy-abc-123")
	if got := c.Do(req).Header.Get("X-Request-Id"); got != "proxy-abc-123" {
		t.Fatalf("proxy id not kept: %q", got)
	}
	req, _ = http.NewRequest(http.MethodGet, app.URL+routes.SignIn, nil)
	req.Header.Set("X-Request-Id", "bad id <script>")
	if got := c.Do(req).Header.Get("X-Request-Id"); strings.ContainsAny(got, " <") || got == "" {
		t.Fatalf("malformed id kept: %q", got)
	}
	// A payment page's lines name the request and the payment.
	user, payURL := app.StartTopUp(t, "log@example.com", "20000")
	_ = user
	pub := topuptest.First(t, db).PublicID
	if _, err := app.Server.Bank.Pay(apptest.Authority(payURL)); err != nil {
		t.Fatal(err)
	}
	user.Get(routes.TopUpReturn(pub) + "?Authority=" + apptest.Authority(payURL) + "&Status=OK")

	var sawID, sawTopUp bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m["msg"] == "http" {
			if m["request_id"] == nil || m["request_id"] == "" {
				t.Fatalf("access log line without request id: %s", line)
			}
			if m["request_id"] == id {
				sawID = true
			}
			if strings.HasPrefix(m["path"].(string), routes.TopUps+"/") && m["payment"] == pub {
				sawTopUp = true
			}
		}
	}
	if !sawID || !sawTopUp {
		t.Fatalf("request id %v, payment %v in the log:\n%s", sawID, sawTopUp, buf.String())
	}
}
