package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kifpool/kifpool/internal/routes"
)

// Row is one line of the report.
type Row struct {
	Scenario    string  `json:"scenario"`
	Concurrency int     `json:"concurrency"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	Seconds     float64 `json:"seconds"`
	Throughput  float64 `json:"throughput_per_s"`
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	P99MS       float64 `json:"p99_ms"`
	MaxMS       float64 `json:"max_ms"`
	CPUSeconds  float64 `json:"server_cpu_s"`
	// The database's CPU (every PostgreSQL process on this machine), the
	// sandbox bank's and the load generator's (pgbench's for a pgbench
	// row) over the step.
	DBCPUSeconds   float64 `json:"db_cpu_s"`
	BankCPUSeconds float64 `json:"bank_cpu_s"` // the sandbox bank's, beside serve
	LoadCPUSeconds float64 `json:"load_cpu_s"`
	PeakRSSMB      float64 `json:"server_peak_rss_mb"`
	Goroutines     int     `json:"server_goroutines_after"`
	PeakGor        int     `json:"server_goroutines_peak,omitempty"`
	Note           string  `json:"note,omitempty"`
	FirstError     string  `json:"first_error,omitempty"`
}

// work is one virtual user's operation number i; it returns an error for
// a failed or wrong answer.
type work func(ctx context.Context, vu int, i int64) error

// runLoad runs fn with conc virtual users until n operations are done
// (n > 0) or dur has passed, and measures each operation's latency.
func runLoad(ctx context.Context, name string, conc int, n int64, dur time.Duration, fn work) Row {
	var next, errs atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, conc)
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for vu := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if n > 0 && i >= n || n <= 0 && time.Now().After(deadline) {
					return
				}
				t0 := time.Now()
				err := fn(ctx, vu, i)
				lats[vu] = append(lats[vu], time.Since(t0))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	r := Row{Scenario: name, Concurrency: conc, Requests: int64(len(all)), Errors: errs.Load(), Seconds: elapsed.Seconds()}
	if len(all) > 0 {
		r.Throughput = float64(len(all)) / elapsed.Seconds()
		q := func(p float64) float64 { return ms(all[min(len(all)-1, int(p*float64(len(all))))]) }
		r.P50MS, r.P95MS, r.P99MS, r.MaxMS = q(0.50), q(0.95), q(0.99), ms(all[len(all)-1])
	}
	if e, ok := firstErr.Load().(string); ok {
		r.FirstError = e
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sharedTransport keeps connections alive across requests; each virtual
// user has its own cookie jar on top of it.
func newTransport(conns int) *http.Transport {
	return &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: 0,
		IdleConnTimeout: 60 * time.Second, DisableCompression: true}
}

// user is a virtual user's browser: its session cookie in its own jar.
type user struct {
	id        int64
	walletID  int64
	accountID int64 // the wallet's ledger account
	hc        *http.Client
}

func newUser(tr *http.Transport, id, walletID int64, sessionToken string, bases ...string) *user {
	jar, _ := cookiejar.New(nil)
	for _, b := range bases {
		u, _ := url.Parse(b)
		// Cookies put into the virtual user's own jar (client side): the
		// Secure/HttpOnly/SameSite attributes are for a server's
		// Set-Cookie and mean nothing here (Secure would even stop the jar
		// sending them to the bench's plain-http loopback servers).
		jar.SetCookies(u, []*http.Cookie{{Name: "kp_session", Value: sessionToken, Path: "/"}, {Name: "lang", Value: "en", Path: "/"}}) // #nosec G124 -- client-side jar, see above
	}
	return &user{id: id, walletID: walletID, hc: &http.Client{Jar: jar, Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status   int
	body     string
	location string
}

func (u *user) do(ctx context.Context, method, target string, form url.Values) (answer, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return answer{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := u.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, body: string(b), location: res.Header.Get("Location")}, err
}

var (
	csrfRE  = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	tokenRE = regexp.MustCompile(`name="token" value="([^"]+)"`)
)

func field(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// submitTopUp opens the form on base and submits it: the bank's page URL.
func (u *user) submitTopUp(ctx context.Context, base string, tomans int64) (answer, error) {
	f, err := u.do(ctx, http.MethodGet, base+routes.TopUp, nil)
	if err != nil {
		return f, err
	}
	csrf, tok := field(csrfRE, f.body), field(tokenRE, f.body)
	if f.status != http.StatusOK || csrf == "" || tok == "" {
		return f, fmt.Errorf("GET /wallet/topup: status %d", f.status)
	}
	return u.do(ctx, http.MethodPost, base+routes.TopUp, url.Values{"_csrf": {csrf}, "token": {tok}, "amount": {strconv.FormatInt(tomans, 10)}})
}

// bank drives the standalone sandbox bank's control API.
type bank struct {
	base string
	hc   *http.Client
}

// pay pays authority as the payer would: the callback URL.
func (b *bank) pay(ctx context.Context, authority string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/_sandbank/payments/"+authority+"/pay", nil)
	res, err := b.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var a struct {
		Redirect string `json:"redirect"`
		Error    string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("bank pay %s: status %d %s %v", authority, res.StatusCode, a.Error, err)
	}
	return a.Redirect, nil
}

// faults sets the bank's fault injection (body: sandbank.Faults as JSON;
// "" clears it).
func (b *bank) faults(ctx context.Context, body string) error {
	method := http.MethodPost
	if body == "" {
		method = http.MethodDelete
	}
	req, _ := http.NewRequestWithContext(ctx, method, b.base+"/_sandbank/faults", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	_ = res.Body.Close() // only the status matters
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("bank faults: status %d", res.StatusCode)
	}
	return nil
}

// paid is the bank's set of paid authorities (PAID or VERIFIED).
func (b *bank) paid(ctx context.Context) (map[string]bool, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/_sandbank/payments", nil)
	res, err := b.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var list []struct {
		Authority string `json:"authority"`
		State     string `json:"state"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range list {
		if p.State == "PAID" || p.State == "VERIFIED" {
			out[p.Authority] = true
		}
	}
	return out, nil
}

// metric reads one gauge from serve's /metrics.
func metric(base, token, name string) (float64, bool) {
	req, _ := http.NewRequest(http.MethodGet, base+routes.Metrics, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}
