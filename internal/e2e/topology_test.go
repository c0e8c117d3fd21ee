package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testport"
	"github.com/kifpool/kifpool/internal/testwait"
)

// TestTopologyBehindNginx runs the deployment of docs/operations.md for
// real: Debian's nginx with deploy/nginx/kifpool.conf (ports, name and
// certificate paths replaced) and a certificate the test makes, in front
// of two serve instances on PostgreSQL and one standalone sandbox bank,
// everything through https. Checked: HTTP/2 and TLS; each instance's
// /readyz; __Host- cookies and HSTS; a full top-up; sign-in rate limits
// keyed on the payer's own address (X-Forwarded-For through
// TRUSTED_PROXIES, a forged header changes nothing); one instance stopped
// while users top up, with nothing lost (every payment the bank took is
// credited once, `kifpool check` passes); and a serve with the built-in
// sandbox bank refused on the database the others use.
func TestTopologyBehindNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and nginx")
	}
	nginx := needTool(t, "nginx", "nginx")
	dbURL := storetest.URL(t, store.Postgres)
	_, bankURL := startBank(t)
	bank := newBankClient(bankURL)

	dir := t.TempDir()
	certFile, keyFile, pool := makeCert(t, dir)
	proxyAddr := testport.Addr(t)
	_, proxyPort, _ := net.SplitHostPort(proxyAddr)
	base := "https://localhost:" + proxyPort

	extra := map[string]string{
		"BASE_URL":        base,
		"TRUSTED_PROXIES": "127.0.0.1",
		"WORKER_INTERVAL": "200ms", "WORKER_ABANDONED_AFTER": "2s", "PENDING_RECHECK_AFTER": "1s",
		"WORKER_BACKOFF_BASE": "500ms", "WORKER_BACKOFF_MAX": "1s",
		"RATE_LIMIT_SIGNIN": "3",
		"METRICS_TOKEN":     topologyMetricsToken,
	}
	a, aURL := newServe(t, "serve-a", dbURL, bankURL, extra)
	b, bURL := newServe(t, "serve-b", dbURL, bankURL, extra)
	for _, p := range []*proc{a, b} {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
	}
	startNginx(t, nginx, dir, proxyAddr, certFile, keyFile, []string{strings.TrimPrefix(aURL, "http://"), strings.TrimPrefix(bURL, "http://")})

	// /readyz of each instance (directly, as a health check does) and
	// through the proxy.
	for _, u := range []string{aURL, bURL} {
		res, err := http.Get(u + routes.Readyz)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s/readyz: %v %v", u, res, err)
		}
		res.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// A payer at 127.0.0.2, over HTTP/2 and TLS.
	payer := httpsBrowser(t, base, pool, "127.0.0.2")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+routes.Readyz, nil)
	res, err := payer.hc.Do(req)
	if err != nil {
		t.Fatalf("/readyz through nginx: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.ProtoMajor != 2 || res.TLS == nil {
		t.Fatalf("/readyz through nginx: %d over %s, TLS %v", res.StatusCode, res.Proto, res.TLS != nil)
	}
	// Sign-up: __Host- cookies (Secure, Path=/, no Domain) and HSTS.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+routes.SignUp, nil)
	res, err = payer.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if hsts := res.Header.Get("Strict-Transport-Security"); !strings.Contains(hsts, "max-age=") {
		t.Errorf("no HSTS through nginx: %q", hsts)
	}
	if len(res.Cookies()) == 0 {
		t.Fatal("GET /signup set no cookie")
	}
	// /metrics answers its token on each instance's own port, and nginx
	// refuses it in every spelling serve would route, token or not.
	if got := metricsStatus(ctx, t, http.DefaultClient, aURL+routes.Metrics); got != http.StatusOK {
		t.Fatalf("/metrics on the instance's own port: %d", got)
	}
	for _, p := range []string{routes.Metrics, routes.Metrics + "/", strings.ToUpper(routes.Metrics), "/Metrics"} {
		if got := metricsStatus(ctx, t, payer.hc, base+p); got != http.StatusNotFound {
			t.Errorf("%s through nginx with the token: %d, want 404", p, got)
		}
	}
	// A reset or confirmation link's token is kept out of nginx's access
	// log: its path in any case of its letters (serve routes it all the
	// same), a sign-in page whose next= names one, and the Referer of what
	// such a page loads. The rest is logged.
	const secretToken = "TopologyResetToken0123456789abcdefghijklmnopq"
	for _, p := range []string{routes.PasswordReset(secretToken), strings.ToUpper(routes.PasswordReset("")) + secretToken,
		routes.EmailVerify(secretToken), strings.ToUpper(routes.EmailVerify("")) + secretToken,
		routes.SignIn + "?next=" + url.QueryEscape(routes.EmailVerify(secretToken))} {
		metricsStatus(ctx, t, payer.hc, base+p)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+routes.Asset("app.css"), nil)
	req.Header.Set("Referer", base+routes.PasswordReset(secretToken))
	if res, err := payer.hc.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	// nginx writes a request's line once it has answered: the last one
	// may come a moment after its answer.
	var logged []byte
	testwait.Eventually(t, 10*time.Second, "nginx's access log line of the static file", func() bool {
		var err error
		if logged, err = os.ReadFile(filepath.Join(dir, "access.log")); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(logged), routes.Asset("app.css"))
	})
	if strings.Contains(string(logged), secretToken) || !strings.Contains(string(logged), routes.SignUp) {
		t.Errorf("nginx's access log holds a link's token, or misses the requests it should hold:\n%s", logged)
	}
	for _, c := range res.Cookies() {
		if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || c.Path != "/" || c.Domain != "" {
			t.Errorf("cookie %s: Secure %v Path %q Domain %q, want a __Host- cookie", c.Name, c.Secure, c.Path, c.Domain)
		}
	}
	if err := payer.signUp(ctx, "payer@example.com"); err != nil {
		t.Fatal(err)
	}
	// A full top-up: the form, the bank, the callback through nginx.
	if got := topUpThrough(ctx, t, payer, bank, bankURL, base, 50_000); got != "credited" {
		t.Fatalf("top-up through nginx ended %q", got)
	}
	db := openDB(t, dbURL)
	if bal := balanceOf(t, db, "payer@example.com"); bal != 500_000 {
		t.Fatalf("balance %d rials after a 50,000-toman top-up", bal)
	}

	// Rate limits on the payer's own address: a client at 127.0.0.3 that
	// forges a new X-Forwarded-For on every try (and tries a new account
	// each time) is limited all the same (each instance allows 3 a minute:
	// 8 tries pass at most 6), while a client at 127.0.0.4 is not.
	flood := httpsBrowser(t, base, pool, "127.0.0.3")
	limited := 0
	for i := 0; i < 8; i++ {
		if signInAttempt(ctx, t, flood, fmt.Sprintf("flood%d@example.com", i), fmt.Sprintf("10.0.0.%d", i+1)) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("8 sign-in attempts from one address through nginx were never limited")
	}
	if st := signInAttempt(ctx, t, httpsBrowser(t, base, pool, "127.0.0.4"), "other@example.com", ""); st == http.StatusTooManyRequests {
		t.Fatal("another address was limited too: the limit is not keyed on the payer's address")
	}
	// nginx's own zone for the credential forms holds across instances:
	// past its burst (20), one address's POSTs are refused by nginx
	// itself, before any instance counts them.
	burst := httpsBrowser(t, base, pool, "127.0.0.5")
	byProxy := 0
	for i := 0; i < 30; i++ {
		if signInAttemptFromProxy(ctx, t, burst, fmt.Sprintf("burst%d@example.com", i)) {
			byProxy++
		}
	}
	if byProxy == 0 {
		t.Fatal("30 sign-in posts at once from one address were never refused by nginx's credential zone")
	}

	// Users top up through nginx while instance b is stopped; the
	// payments it started or was checking are finished by a.
	const users, each = 4, 3
	var wg sync.WaitGroup
	var done, retried atomic.Int64
	errs := make(chan error, users*each)
	stopAfter := int64(users) // stop b once the first round is through
	stopped := make(chan struct{})
	go func() {
		_ = testwait.UntilContext(ctx, time.Hour, "the first round of top-ups", func() bool { return done.Load() >= stopAfter })
		b.stop()
		close(stopped)
	}()
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			br := httpsBrowser(t, base, pool, fmt.Sprintf("127.0.1.%d", u+1))
			if err := retry502(ctx, &retried, func() error { return br.signUp(ctx, fmt.Sprintf("user%d@example.com", u)) }); err != nil {
				errs <- err
				return
			}
			for i := 0; i < each; i++ {
				st, err := topUpResilient(ctx, br, bank, bankURL, base, int64(10_000+1000*u+i), &retried)
				if err != nil {
					errs <- err
					return
				}
				if st != "credited" && st != "pending" {
					errs <- fmt.Errorf("user %d top-up %d ended %q", u, i, st)
				}
				done.Add(1)
			}
		}(u)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	<-stopped
	t.Logf("%d top-ups through nginx, instance b stopped after %d; %d requests retried after a 502/503/504", done.Load(), stopAfter, retried.Load())
	// The workers (a alone now) finish whatever was open.
	drain(t, db, time.Minute)
	checkAgainstBank(t, allTopUps(t, db), bank.topUps(t))
	checkLedger(t, db)
	for u := 0; u < users; u++ {
		var want int64
		for i := 0; i < each; i++ {
			want += int64(10_000+1000*u+i) * 10
		}
		if got := balanceOf(t, db, fmt.Sprintf("user%d@example.com", u)); got != want {
			t.Errorf("user %d balance %d rials, paid %d", u, got, want)
		}
	}
	// kifpool check, the operator's command, on the live database.
	check := exec.Command(kifpoolBinary(t), "check") // #nosec G204 -- the test's own binary
	check.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "SESSION_SECRET="+testSecret, "GATEWAY=zarinpal",
		"ZARINPAL_MERCHANT_ID="+testMerchant, "ZARINPAL_BASE_URL="+bankURL, "DATA_DIR="+t.TempDir())
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "all rules hold") {
		t.Errorf("kifpool check after the run: %v\n%s", err, out)
	}
	rep, err := integrity.Check(ctx, db, integrity.Options{})
	if err != nil || !rep.OK() {
		t.Errorf("integrity: %v %v", err, rep.Violations())
	}

	// b comes back; a serve with the built-in sandbox bank on this
	// database is refused (its bank would live in its memory only).
	if err := b.start(); err != nil {
		t.Fatalf("restart b: %v", err)
	}
	sbAddr := testport.Addr(t)
	sb := exec.Command(kifpoolBinary(t), "serve") // #nosec G204 -- the test's own binary
	sb.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATABASE_URL=" + dbURL, "GATEWAY=sandbox",
		"LISTEN_ADDR=" + sbAddr, "DATA_DIR=" + t.TempDir()}
	out, err := runWithTimeout(sb, time.Minute)
	if err == nil || !strings.Contains(out, "another kifpool serve runs on this database") {
		t.Fatalf("a sandbox serve beside two instances: %v\n%s", err, out)
	}
}

// makeCert writes a self-signed certificate for localhost and 127.0.0.1
// and returns the files and a pool that trusts it.
func makeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// startNginx runs Debian's nginx on deploy/nginx/kifpool.conf, with the
// test's address, name, certificate and upstream instances put in, until
// the test ends.
func startNginx(t *testing.T, nginx, dir, addr, certFile, keyFile string, upstreams []string) {
	t.Helper()
	site, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "nginx", "kifpool.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(site)
	httpAddr := testport.Addr(t)
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=1 fail_timeout=5s;\n", u)
	}
	for _, r := range []struct{ old, new string }{
		{"    server 127.0.0.1:8081 max_fails=1 fail_timeout=5s;\n    server 127.0.0.1:8082 max_fails=1 fail_timeout=5s;\n", servers.String()},
		{"listen 443 ssl http2;", "listen " + addr + " ssl http2;"},
		{"    listen [::]:443 ssl http2;\n", ""},
		{"listen 80;", "listen " + httpAddr + ";"},
		{"    listen [::]:80;\n", ""},
		{"server_name pay.example.com;", "server_name localhost;"},
		{"/etc/ssl/kifpool/fullchain.pem", certFile},
		{"/etc/ssl/kifpool/privkey.pem", keyFile},
		{"/var/log/nginx/kifpool-access.log", filepath.Join(dir, "access.log")},
	} {
		if !strings.Contains(conf, r.old) {
			t.Fatalf("deploy/nginx/kifpool.conf no longer has %q (update the test with the site)", r.old)
		}
		conf = strings.ReplaceAll(conf, r.old, r.new)
	}
	sitePath := filepath.Join(dir, "kifpool.conf")
	if err := os.WriteFile(sitePath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // the test's folders are the test's own
	}
	main := fmt.Sprintf(`%sworker_processes 1;
daemon off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 256; }
http {
    access_log %[2]s/access.log;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[3]s;
}
`, user, dir, sitePath)
	mainPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(mainPath, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nginx, "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", mainPath).CombinedOutput(); err != nil { // #nosec G204 -- the test's own files
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	cmd := exec.Command(nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", mainPath) // #nosec G204 -- the test's own files
	setChildAttrs(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt) // SIGINT: nginx's fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "error.log")); err == nil {
				t.Logf("---- nginx error.log ----\n%s", tail(string(b), 60))
			}
		}
	})
	testwait.Eventually(t, 20*time.Second, "nginx to listen", func() bool {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited:\n%s", b)
		default:
		}
		return false
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// httpsBrowser is a browser whose requests reach the proxy from the given
// loopback address (as a payer's own address), over TLS and HTTP/2,
// trusting only the test's certificate.
func httpsBrowser(t *testing.T, base string, pool *x509.CertPool, from string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	proxy, _ := url.Parse(base)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			// Every name of the app is the proxy (localhost → 127.0.0.1).
			return dialer.DialContext(ctx, network, "127.0.0.1:"+proxy.Port())
		},
		TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{base: base, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signInAttempt posts a wrong password for email (each attempt its own
// address, so that only the per-client rate limit can answer 429, not the
// per-account throttle), with a forged X-Forwarded-For when xff is set,
// and returns the status.
func signInAttempt(ctx context.Context, t *testing.T, b *browser, email, xff string) int {
	t.Helper()
	status, _ := postWrongPassword(ctx, t, b, email, xff)
	return status
}

// signInAttemptFromProxy posts a wrong password for email and reports
// whether nginx itself refused it (its own 429 page, not serve's).
func signInAttemptFromProxy(ctx context.Context, t *testing.T, b *browser, email string) bool {
	t.Helper()
	status, body := postWrongPassword(ctx, t, b, email, "")
	return status == http.StatusTooManyRequests && strings.Contains(body, "<center>nginx</center>")
}

// postWrongPassword signs in as email with a wrong password through the
// sign-in form (X-Forwarded-For xff when set) and returns the answer's
// status and body.
func postWrongPassword(ctx context.Context, t *testing.T, b *browser, email, xff string) (int, string) {
	t.Helper()
	r, err := b.do(ctx, http.MethodGet, routes.SignIn, nil)
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"_csrf": {apptest.Parse(r.body).Form(routes.SignIn).Hidden().Get("_csrf")}, "email": {email}, "password": {"wrong password here"}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+routes.SignIn, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	res, err := b.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// topUpThrough makes one top-up as a payer: the form, paying at the bank,
// the callback; it returns the payment page's data-status.
func topUpThrough(ctx context.Context, t *testing.T, br *browser, bank *bankClient, bankURL, base string, tomans int64) string {
	t.Helper()
	var retried atomic.Int64
	st, err := topUpResilient(ctx, br, bank, bankURL, base, tomans, &retried)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// topUpResilient makes one top-up, repeating a request that a stopping
// instance answered 502/503/504 (the same form token, the same callback:
// both are replays the app answers as the first), as a browser's user
// would reload.
func topUpResilient(ctx context.Context, br *browser, bank *bankClient, bankURL, base string, tomans int64, retried *atomic.Int64) (string, error) {
	var csrf, token string
	if err := retry502(ctx, retried, func() (err error) { csrf, token, err = br.topUpForm(ctx); return err }); err != nil {
		return "", err
	}
	var r response
	if err := retry502(ctx, retried, func() (err error) {
		r, err = br.submitTopUp(ctx, csrf, token, tomans)
		if err == nil && r.status >= 502 && r.status <= 504 {
			return errGateway
		}
		return err
	}); err != nil {
		return "", err
	}
	authority := authorityOf(bankURL, r.location)
	if r.status != http.StatusSeeOther || authority == "" {
		return "", fmt.Errorf("top-up submit: %d to %q", r.status, r.location)
	}
	back, st, err := bank.finish(ctx, authority, "pay")
	if err != nil || st != http.StatusOK {
		return "", fmt.Errorf("pay %s: %d %v", authority, st, err)
	}
	if !strings.HasPrefix(back, base+"/") {
		return "", fmt.Errorf("callback %q is not on %s", back, base)
	}
	var page response
	if err := retry502(ctx, retried, func() (err error) {
		page, err = br.do(ctx, http.MethodGet, back, nil)
		if err == nil && page.status >= 502 && page.status <= 504 {
			return errGateway
		}
		return err
	}); err != nil {
		return "", err
	}
	if page.status != http.StatusOK {
		return "", fmt.Errorf("callback page: %d", page.status)
	}
	return apptest.TopUpStatus(page.body), nil
}

var errGateway = fmt.Errorf("502/503/504 from the proxy")

// retry502 repeats fn while the proxy answers 502/503/504 or the page is
// not ready, up to 20 times.
func retry502(ctx context.Context, retried *atomic.Int64, fn func() error) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = fn(); err == nil {
			return nil
		}
		if err != errGateway && !strings.Contains(err.Error(), "status 502") && !strings.Contains(err.Error(), "status 503") &&
			!strings.Contains(err.Error(), "status 504") {
			return err
		}
		retried.Add(1)
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return err
}

func balanceOf(t *testing.T, db *store.DB, email string) int64 {
	t.Helper()
	var n int64
	if err := db.Gorm.Raw(`SELECT a.posted_rials FROM wallets w JOIN users u ON u.id = w.user_id JOIN ledger_accounts a ON a.wallet_id = w.id WHERE u.email = ?`, email).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// runWithTimeout runs a command to its end (killed after limit) and
// returns its combined output.
func runWithTimeout(cmd *exec.Cmd, limit time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("still running after %s", limit)
	}
}

// topologyMetricsToken is the instances' METRICS_TOKEN in the topology test.
const topologyMetricsToken = "topology-metrics-token-0123456789abcdef"

// metricsStatus is the status of a GET of u with the metrics token.
func metricsStatus(ctx context.Context, t *testing.T, hc *http.Client, u string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+topologyMetricsToken)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	res.Body.Close()
	return res.StatusCode
}
