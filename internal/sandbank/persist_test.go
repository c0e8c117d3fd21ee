package sandbank

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// Issue 31, item 12: a bank opened on a state file keeps its payments
// across a restart: a payment requested before is known after, is paid and
// verified there, and a verified one stays verified (101, no second
// credit). The file is private (0600); a broken file is an error, not an
// empty bank.
func TestStateFileKeepsPaymentsAcrossARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bank", "sandbank.json")
	open := func() (*Bank, *httptest.Server) {
		t.Helper()
		b, err := Open(Options{Seed: 7, StateFile: file})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(b.Handler())
		t.Cleanup(srv.Close)
		return b, srv
	}
	_, srv := open()
	waiting := newPayment(t, srv, 50_000)
	paid := newPayment(t, srv, 60_000)
	b2, srv2 := open()
	if _, err := b2.Pay(paid); err != nil {
		t.Fatal(err)
	}
	if res := verify(t, srv2, merchant, paid, 60_000); res.Code(t) != 100 {
		t.Fatalf("verify after one restart: %s", res.Raw)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}

	b3, srv3 := open()
	if p, ok := b3.Payment(waiting); !ok || p.State != StateInBank || p.Amount != 50_000 {
		t.Fatalf("the open payment after a restart: %+v %v", p, ok)
	}
	if res := verify(t, srv3, merchant, paid, 60_000); res.Code(t) != 101 {
		t.Fatalf("a verified payment after a restart: %s", res.Raw)
	}
	if _, err := b3.Pay(waiting); err != nil {
		t.Fatalf("pay the open payment after a restart: %v", err)
	}
	if res := verify(t, srv3, merchant, waiting, 50_000); res.Code(t) != 100 {
		t.Fatalf("verify after two restarts: %s", res.Raw)
	}
	// A new payment after the restart gets an authority of its own.
	if a := newPayment(t, srv3, 70_000); a == waiting || a == paid {
		t.Fatalf("authority %s given twice", a)
	}

	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{StateFile: file}); err == nil {
		t.Fatal("a broken state file opened as an empty bank")
	}
	// Without a state file nothing is written.
	b := New(Options{})
	resp := httptest.NewRecorder()
	b.Handler().ServeHTTP(resp, httptest.NewRequest(http.MethodGet, "/pg/assets/bank.css", nil))
	if b.stateFile != "" {
		t.Fatal("New keeps a state file")
	}
}
