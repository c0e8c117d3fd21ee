package scenario_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

// BenchmarkTopUpRoundTrip measures one whole top-up over real HTTP: the
// form submit (payment row + gateway request to the in-process sandbox
// bank), the payment at the bank, and the callback (verify + credit
// transaction), run in parallel by many users. Reported per top-up.
func BenchmarkTopUpRoundTrip(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			db := storetest.New(b, d)
			app := apptest.Start(b, db, apptest.Options{})
			var users atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := app.NewClient(b)
				c.SignUp("bench" + itoa(users.Add(1)) + "@example.com")
				for pb.Next() {
					csrf, token := c.TopUpForm()
					r := c.PostTopUp(csrf, token, "10000")
					if r.Status != http.StatusSeeOther {
						b.Errorf("top-up: %d", r.Status)
						return
					}
					back, err := app.Server.Bank.Pay(apptest.Authority(r.Location))
					if err != nil {
						b.Error(err)
						return
					}
					res := c.Get(back)
					if !strings.Contains(res.Body, `data-status="credited"`) {
						b.Errorf("not credited: %q", apptest.TopUpStatus(res.Body))
						return
					}
				}
			})
			b.StopTimer()
			apptest.CheckInvariants(b, db)
		})
	}
}

// BenchmarkRepeatCallback measures the cheap path every repeat callback
// takes: a terminal payment read and the result page rendered.
func BenchmarkRepeatCallback(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			db := storetest.New(b, d)
			app := apptest.Start(b, db, apptest.Options{})
			c := app.NewClient(b)
			c.SignUp("repeat@example.com")
			csrf, token := c.TopUpForm()
			r := c.PostTopUp(csrf, token, "10000")
			back, _ := app.Server.Bank.Pay(apptest.Authority(r.Location))
			c.Get(back)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				cl := app.NewClient(b)
				for pb.Next() {
					if res := cl.Get(back); res.Status != http.StatusOK {
						b.Errorf("status %d", res.Status)
						return
					}
				}
			})
		})
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
