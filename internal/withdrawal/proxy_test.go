package withdrawal_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/payout/jibit"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/withdrawal"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// A proxy in front of Jibit answers the first submit, which reached Jibit
// and was taken, with its own 403 page (no Jibit error body); the next
// submit of the same transferID is refused by Jibit with a duplicate code
// other than transfer.already_exists. The 403 is not Jibit's word: the
// outcome stays unknown, the worker asks Jibit, and the withdrawal is
// paid once with its money held until then. Taken as "refused for now"
// (nothing taken), the second submit went out as a first one, its
// refusal failed the withdrawal and released the hold while Jibit paid.
func TestBodilessRefusalOfASubmitIsUnknown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, "jibit")
		bankH := e.bank.Handler()
		var submits atomic.Int32
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			bankH.ServeHTTP(rec, r)
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v2/transfers") {
				switch n := submits.Add(1); {
				case n == 1:
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(http.StatusForbidden)
					_, _ = w.Write([]byte(`<html><body><h1>403 Forbidden</h1>nginx</body></html>`))
					return
				case strings.Contains(rec.Body.String(), jibit.CodeAlreadyExists):
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = w.Write([]byte(`{"fingerprint":"f","errors":[{"code":"transfer.duplicate_transfer_id","message":"duplicate"}]}`))
					return
				}
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		}))
		t.Cleanup(proxy.Close)
		p, err := jibit.New(jibit.Config{APIKey: jibit.SandboxAPIKey, SecretKey: jibit.SandboxSecretKey, BaseURL: proxy.URL + "/trf", Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		e.svc = withdrawal.New(e.st, e.accts, wallet.NewService(db, ledger.New(db)),
			[]withdrawal.Offer{{Name: "jibit", Provider: p, Caps: e.offers[0].Caps}}, testConfig(), e.clock.Now, nil)
		w := e.request(1_500_000)
		e.round(time.Second)
		if w = e.get(w); w.Status != withdrawal.StatusSubmitted || w.ProviderState != withdrawal.ProviderUnknown || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("after the proxy's 403: %+v", w)
		}
		e.wantWallet(50_000_000, 1_500_000)
		for range 3 {
			e.round(time.Minute)
			if w = e.get(w); w.Status != withdrawal.StatusSubmitted {
				t.Fatalf("while Jibit holds the payout: %+v", w)
			}
			e.wantWallet(50_000_000, 1_500_000)
		}
		if _, err := e.bank.Payouts().Settle("jibit", w.PublicID); err != nil {
			t.Fatal(err)
		}
		e.round(time.Minute)
		if w = e.get(w); w.Status != withdrawal.StatusPaid || e.bankPayouts("jibit", w.PublicID) != 1 {
			t.Fatalf("paid: %+v", w)
		}
		e.wantWallet(48_500_000, 0)
		withdrawaltest.CheckInvariants(t, db)
	})
}
