// Package mailtest runs a real SMTP server in the test's process (go-smtp)
// for tests that send mail end to end: plain, STARTTLS or implicit TLS,
// with or without AUTH PLAIN, and failures on demand. It decodes what it
// receives (subject, text and HTML parts) for assertions.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// TLS modes.
const (
	Plain     = "plain"    // no TLS at all
	StartTLS  = "starttls" // STARTTLS offered
	ImplicitT = "implicit" // TLS from the first byte (smtps://)
)

// Options shape the server.
type Options struct {
	TLS        string // Plain (default), StartTLS or ImplicitT
	User, Pass string // when set, AUTH PLAIN is required
}

// Received is one delivered message, decoded.
type Received struct {
	From, To string
	Raw      []byte
	Header   mail.Header
	Subject  string
	Text     string
	HTML     string
	// TLS reports whether the message came over an encrypted connection.
	TLS bool
}

// Server is a running SMTP server.
type Server struct {
	// URL is the SMTP_URL that reaches it.
	URL string
	// RootCAs trusts its certificate.
	RootCAs *x509.CertPool

	mu       sync.Mutex
	msgs     []Received
	failNext []int // SMTP codes to answer the next DATA commands with
	notify   chan struct{}
	opts     Options
}

// Start runs a server on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.TLS == "" {
		o.TLS = Plain
	}
	cert, pool := selfSigned(t)
	s := &Server{RootCAs: pool, notify: make(chan struct{}, 1), opts: o}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.AllowInsecureAuth = o.TLS == Plain
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	scheme := "smtp"
	switch o.TLS {
	case StartTLS:
		srv.TLSConfig = conf
	case ImplicitT:
		ln = tls.NewListener(ln, conf)
		scheme = "smtps"
	}
	u := url.URL{Scheme: scheme, Host: ln.Addr().String()}
	if o.User != "" {
		u.User = url.UserPassword(o.User, o.Pass)
	}
	s.URL = u.String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// FailNext makes the next len(codes) messages be refused at DATA with
// these SMTP codes (4xx: try again later; 5xx: permanent).
func (s *Server) FailNext(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, codes...)
}

// Messages returns what was delivered so far.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// Wait returns the first message for which match is true, waiting up to
// timeout for it to arrive (woken by each delivery, no polling).
func (s *Server) Wait(t testing.TB, timeout time.Duration, match func(Received) bool) Received {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		for _, m := range s.Messages() {
			if match(m) {
				return m
			}
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("no matching mail within %s (%d received)", timeout, len(s.Messages()))
			return Received{}
		}
	}
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s        *Server
	conn     *smtp.Conn
	from, to string
	authed   bool
}

func (se *session) AuthMechanisms() []string {
	if se.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != se.s.opts.User || pass != se.s.opts.Pass {
			return errors.New("invalid credentials")
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.opts.User != "" && !se.authed {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.to = to
	return nil
}

func (se *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	se.s.mu.Lock()
	if len(se.s.failNext) > 0 {
		code := se.s.failNext[0]
		se.s.failNext = se.s.failNext[1:]
		se.s.mu.Unlock()
		return &smtp.SMTPError{Code: code, Message: "refused by the test"}
	}
	se.s.mu.Unlock()
	_, isTLS := se.conn.TLSConnectionState()
	m := decode(raw)
	m.From, m.To, m.TLS = se.from, se.to, isTLS
	se.s.mu.Lock()
	se.s.msgs = append(se.s.msgs, m)
	se.s.mu.Unlock()
	select {
	case se.s.notify <- struct{}{}:
	default:
	}
	return nil
}

func (se *session) Reset()        { se.from, se.to = "", "" }
func (se *session) Logout() error { return nil }

// decode reads the subject and the text and HTML parts of a message.
func decode(raw []byte) Received {
	m := Received{Raw: raw}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return m
	}
	m.Header = msg.Header
	dec := new(mime.WordDecoder)
	m.Subject, _ = dec.DecodeHeader(msg.Header.Get("Subject"))
	mt, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if !strings.HasPrefix(mt, "multipart/") {
		b, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
		m.Text = string(b)
		return m
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(p) // multipart decodes quoted-printable itself
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		switch pt {
		case "text/plain":
			m.Text = strings.ReplaceAll(string(b), "\r\n", "\n")
		case "text/html":
			m.HTML = strings.ReplaceAll(string(b), "\r\n", "\n")
		}
	}
	return m
}

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
