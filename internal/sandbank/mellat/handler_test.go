package mellat

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/sandbank/book"
	"github.com/kifpool/kifpool/internal/sandbank/page"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
)

// handler is the package's HTTP handler on its own book: its routes, each
// operation served by Serve.
func handler(bk *book.Book) http.Handler {
	log := slog.New(slog.DiscardHandler)
	m := New(protocol.Env{Book: bk, Pages: page.New(bk, log, ""), Log: log}).(*Mellat)
	bk.Register(Gateway, m.Rules())
	mux := http.NewServeMux()
	m.Routes(mux, func(op string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.Serve(op, w, r) })
	})
	return mux
}

func soapCall(t testing.TB, h http.Handler, method string, fields ...string) string {
	var b strings.Builder
	b.WriteString(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:int="` + mellatNS + `"><soapenv:Body><int:` + method + `>`)
	for i := 0; i+1 < len(fields); i += 2 {
		b.WriteString("<" + fields[i] + ">" + fields[i+1] + "</" + fields[i] + ">")
	}
	b.WriteString(`</int:` + method + `></soapenv:Body></soapenv:Envelope>`)
	req := httptest.NewRequest(http.MethodPost, "/pgwchannel/services/pgw", strings.NewReader(b.String()))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	_, ret, err := readSOAPReturn(rec.Body.Bytes())
	if err != nil {
		t.Errorf("%s: %d %s: %v", method, rec.Code, rec.Body, err)
	}
	return ret
}

func payRequest(t testing.TB, h http.Handler, order string) string {
	return soapCall(t, h, "bpPayRequest", "terminalId", "5000", "userName", "u", "userPassword", "p", "orderId", order,
		"amount", "120000", "localDate", "20261201", "localTime", "153000", "additionalData", "",
		"callBackUrl", "https://merchant.example/pay/callback", "payerId", "0")
}

// TestMellatDuplicateOrderRace: many bpPayRequest calls of one terminal's
// order id at once, through the package's handler: exactly one gets
// "0,RefId", every other 41 (duplicate order id), as at the real bank.
//
// Each round lines the callers up on the book's lock so that they take
// it one after another, each handing it straight to the next: the test
// holds the lock until every caller waits on it for longer than
// sync.Mutex's starvation threshold (1 ms), then lets go and takes it
// back once, so that the first caller, woken, finds it taken and turns
// the mutex to starvation mode. In that mode every Unlock hands the lock
// to the longest waiter, so a check-then-open in two critical sections
// lets every caller check before the first one opens (all of them get
// "0,RefId"), where one critical section lets one only.
func TestMellatDuplicateOrderRace(t *testing.T) {
	const rounds, callers = 20, 32
	for round := range rounds {
		bk := book.New(book.Options{TTL: time.Hour})
		h := handler(bk)
		rets := make([]string, callers)
		var wg sync.WaitGroup
		var done atomic.Int32
		bk.Lock()
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rets[i] = payRequest(t, h, "77")
				done.Add(1)
			}()
		}
		waitParked(t, callers, &done)
		for since := time.Now(); time.Since(since) < 2*time.Millisecond; {
			runtime.Gosched() // past the starvation threshold: not a sleep, a wait on the runtime's clock
		}
		bk.Unlock()
		bk.Lock() // the first woken caller finds it taken: starvation mode
		waitParked(t, callers, &done)
		bk.Unlock()
		wg.Wait()
		ok := 0
		for _, r := range rets {
			switch {
			case strings.HasPrefix(r, mlOK+","):
				ok++
			case r != mlDuplicateOrder:
				t.Fatalf("round %d: bpPayRequest = %q, want 0,RefId or 41", round, r)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of %d bpPayRequest of one order answered 0,RefId, want 1: %q", round, ok, callers, rets)
		}
	}
}

// waitParked waits until each of n goroutines waits on a sync.Mutex or
// is done (the first woken may take the lock before the test takes it
// back, and finish).
func waitParked(t *testing.T, n int, done *atomic.Int32) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		k := runtime.Stack(buf, true)
		if k == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if strings.Count(string(buf[:k]), "[sync.Mutex.Lock")+int(done.Load()) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers never all waited on the book's lock:\n%s", n, buf[:k])
		}
		runtime.Gosched()
	}
}

// TestMellatTerminalCheckedFirst: verify, settle, inquiry and reversal
// check the terminal and its credentials before they look at the sale,
// as the bank does: a wrong or malformed terminal is 21 and a wrong user
// name or password 24, whatever the sale ids say (never 42, which
// Kifpool's driver takes for "no paid sale"); the sale is left as it was.
func TestMellatTerminalCheckedFirst(t *testing.T) {
	bk := book.New(book.Options{TTL: time.Hour})
	h := handler(bk)
	ret := payRequest(t, h, "77")
	ref, ok := strings.CutPrefix(ret, mlOK+",")
	if !ok {
		t.Fatalf("bpPayRequest = %q", ret)
	}
	if _, err := bk.End(ref, book.StatePaid, ""); err != nil {
		t.Fatal(err)
	}
	p, _ := bk.Payment(ref)
	sale := p.Receipt
	for _, method := range []string{"bpVerifyRequest", "bpSettleRequest", "bpInquiryRequest", "bpReversalRequest"} {
		for _, tt := range []struct {
			terminal, user, pass, order, saleRef, want string
		}{
			{"5001", "u", "p", "77", sale, mlBadMerchant},  // another terminal, the sale's ids
			{"5001", "u", "p", "78", "999", mlBadMerchant}, // another terminal, no such sale
			{"50x0", "u", "p", "77", sale, mlBadMerchant},  // malformed
			{"0", "u", "p", "77", sale, mlBadMerchant},     //
			{"5000", "u", "wrong", "77", sale, mlBadCredentials},
			{"5000", "", "p", "77", sale, mlBadCredentials},
			{"5000", "u", "wrong", "78", "999", mlBadCredentials}, // wrong password, no such sale
			{"5000", "u", "p", "78", sale, mlSaleNotFound},        // good terminal: the sale is looked at
			{"5000", "u", "p", "77", "999", mlSaleNotFound},
		} {
			got := soapCall(t, h, method, "terminalId", tt.terminal, "userName", tt.user, "userPassword", tt.pass,
				"orderId", "90", "saleOrderId", tt.order, "saleReferenceId", tt.saleRef)
			if got != tt.want {
				t.Errorf("%s terminal %q user %q password %q sale %s/%s = %q, want %q",
					method, tt.terminal, tt.user, tt.pass, tt.order, tt.saleRef, got, tt.want)
			}
		}
	}
	if p, _ := bk.Payment(ref); p.State != book.StatePaid || p.VerifyCount != 0 || p.SettleCount != 0 {
		t.Fatalf("refused calls changed the sale: %+v", p)
	}
	if got := soapCall(t, h, "bpVerifyRequest", "terminalId", "5000", "userName", "u", "userPassword", "p",
		"orderId", "90", "saleOrderId", "77", "saleReferenceId", sale); got != mlOK {
		t.Fatalf("verify with the terminal's credentials = %q", got)
	}
}
