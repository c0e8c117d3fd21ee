package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/gateway/resilient"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// downGateway fails every call as a bank that does not answer.
type downGateway struct {
	gateway.Gateway
	name  string
	calls int
}

func (g *downGateway) Name() string     { return g.name }
func (g *downGateway) Ops() gateway.Ops { return gateway.Ops{} }
func (g *downGateway) Request(context.Context, gateway.RequestInput) (gateway.RequestResult, error) {
	g.calls++
	return gateway.RequestResult{}, errors.New("connection refused")
}

// zarinpalZibal is a configuration of two real gateways.
var zarinpalZibal = map[string]string{
	"GATEWAYS": "zarinpal,zibal", "ZARINPAL_MERCHANT_ID": "0f0e0d0c-0b0a-4908-8706-050403020100",
	"ZIBAL_MERCHANT": "zibal",
}

func gatewayNames(g gateways) (drivers, set []string) {
	for _, d := range g.Drivers {
		drivers = append(drivers, d.Name)
	}
	return drivers, g.Set.Names()
}

// The configuration's gateways, in its order, each behind its own
// resilient caller; the sandbox bank only when it is the gateway.
func TestNewGatewaysOffersTheConfiguredOnes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Run("real gateways", func(t *testing.T) {
			g, err := newGateways(testBase(testConfig(t, zarinpalZibal), db, Options{}), ledger.New(db), nil)
			if err != nil {
				t.Fatal(err)
			}
			drivers, set := gatewayNames(g)
			if want := []string{"zarinpal", "zibal"}; !slices.Equal(drivers, want) || !slices.Equal(set, want) || len(g.Resilients) != 2 {
				t.Errorf("drivers %v, set %v, %d callers; want %v twice", drivers, set, len(g.Resilients), want)
			}
			if g.Bank != nil || g.BankHandler != nil {
				t.Error("a sandbox bank with real gateways")
			}
		})
		t.Run("sandbox", func(t *testing.T) {
			g, err := newGateways(testBase(testConfig(t, nil), db, Options{}), ledger.New(db), nil)
			if err != nil {
				t.Fatal(err)
			}
			drivers, set := gatewayNames(g)
			if len(drivers) == 0 || !slices.Equal(drivers, set) || drivers[0] != "zarinpal" {
				t.Errorf("drivers %v, set %v; want the imitated ones, Zarinpal first, behind callers", drivers, set)
			}
			if g.Bank == nil || g.BankHandler == nil {
				t.Error("no built-in sandbox bank")
			}
		})
	})
}

// Every offered gateway's clearing accounts exist once the gateways are
// built: a credit never makes one on its path.
func TestNewGatewaysMakesTheClearingAccounts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		if _, err := newGateways(testBase(testConfig(t, zarinpalZibal), db, Options{}), ledger.New(db), nil); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			gateway string
			exists  bool
		}{{"zarinpal", true}, {"zibal", true}, {"a gateway never offered", false}} {
			for slot := range int64(ledger.ClearingSlots) {
				if got := clearingExisted(t, db, tc.gateway, slot); got != tc.exists {
					t.Errorf("%s slot %d: exists %v, want %v", tc.gateway, slot, got, tc.exists)
				}
			}
		}
	})
}

var errRollback = errors.New("roll back")

// clearingExisted reports whether a gateway's clearing slot existed: a
// fresh ledger looks it up in a transaction rolled back, which undoes a
// slot it had to make.
func clearingExisted(t *testing.T, db *store.DB, gw string, slot int64) bool {
	t.Helper()
	led := ledger.New(db)
	var id int64
	err := db.Tx(context.Background(), func(tx *gorm.DB) error {
		var err error
		if id, err = led.ClearingAccount(tx, gw, slot); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	_, err = led.Account(context.Background(), id)
	return err == nil
}

// The options' gateways replace the drivers, and each caller's breaker
// opens after BREAKER_MIN_REQUESTS failed calls of its own gateway only.
func TestNewGatewaysBreakersFromTheConfiguration(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		env := map[string]string{"BREAKER_MIN_REQUESTS": "3", "BREAKER_FAILURE_PERCENT": "100"}
		maps.Copy(env, zarinpalZibal)
		first, second := &downGateway{name: "zarinpal"}, &downGateway{name: "zibal"}
		g, err := newGateways(testBase(testConfig(t, env), db, Options{Gateway: first, Gateways: map[string]gateway.Gateway{"zibal": second}}),
			ledger.New(db), resilient.NopRecorder{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if st := g.breakers()[1].State; st != "closed" {
				t.Fatalf("after %d failed calls: %s, want closed", i, st)
			}
			_, _ = g.Set[1].Request(context.Background(), gateway.RequestInput{AmountRials: 10000})
		}
		states := g.breakers()
		if states[0].State != "closed" || states[1].State != "open" || states[1].Name != "zibal" {
			t.Errorf("breakers %+v, want zarinpal closed and zibal open", states)
		}
		if first.calls != 0 || second.calls != 3 {
			t.Errorf("calls: %d to the first, %d to the second; want 0 and 3", first.calls, second.calls)
		}
	})
}
