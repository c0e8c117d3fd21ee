package web_test

// Request smuggling, tried over a real socket against the app as serve runs
// it: requests whose framing a reverse proxy and the app could read
// differently are refused with 400 and the connection is closed, so that
// nothing after them on the connection is taken as a request of its own.

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
)

func TestSmugglingRequestsAreRefused(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	host := strings.TrimPrefix(app.URL, "http://")
	// What a smuggler hides behind the framing: a request of its own. If
	// the app answered it, the framing was read as the smuggler meant.
	const hidden = "GET " + routes.Healthz + " HTTP/1.1\r\nHost: %HOST%\r\n\r\n"
	smuggled := strings.ReplaceAll(hidden, "%HOST%", host)
	cases := []struct {
		name string
		raw  string
	}{
		{"bare LF in a chunk extension",
			"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n" +
				"2;a\nx\r\nab\r\n0\r\n\r\n" + smuggled},
		{"bare LF ending a header line",
			"GET " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\nX-Other: 1\r\n\r\n" + smuggled},
		{"duplicate Host",
			"GET " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nHost: evil.example\r\n\r\n" + smuggled},
		{"no Host in HTTP/1.1",
			"GET " + routes.SignIn + " HTTP/1.1\r\nX-Other: 1\r\n\r\n" + smuggled},
		{"white space before a header's colon",
			"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n" +
				"0\r\n\r\n" + smuggled},
		{"Content-Length with Transfer-Encoding",
			"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"0\r\n\r\n" + smuggled},
		{"Transfer-Encoding with Content-Length (the other order)",
			"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n" +
				"0\r\n\r\n" + smuggled},
		{"obs-fold (a header continued on the next line)",
			"GET " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nX-Folded: a\r\n b\r\n\r\n" + smuggled},
		{"obs-fold of Transfer-Encoding",
			"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" +
				"0\r\n\r\n" + smuggled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := dialApp(app)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := io.WriteString(rc, tc.raw); err != nil {
				t.Fatal(err)
			}
			status, err := rc.answer(30 * time.Second)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d (%v), want 400", status, err)
			}
			// Nothing more is answered on this connection: the hidden
			// request was never read as one.
			if status, err := rc.answer(5 * time.Second); status != 0 {
				t.Errorf("a second answer (%d) on the connection: the hidden request was served", status)
			} else if isTimeout(err) {
				t.Errorf("the connection stays open after the 400")
			}
		})
	}
	// The same requests framed correctly are served (the refusals are the
	// framing's, not something else's).
	for _, raw := range []string{
		"GET " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nX-Other: 1\r\n\r\n",
		"POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n2;a=b\r\nab\r\n0\r\n\r\n",
	} {
		rc, err := dialApp(app)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(rc, raw); err != nil {
			t.Fatal(err)
		}
		status, err := rc.answer(30 * time.Second)
		_ = rc.Close()
		if status == 0 || status == http.StatusBadRequest {
			t.Errorf("well-framed %q: status %d (%v)", strings.SplitN(raw, "\r\n", 2)[0], status, err)
		}
	}
}

// TestEncodedBodiesAreRefused: a request body said to be compressed is
// refused (415) before anything reads it, in any of its Content-Encoding
// lines; "identity" is a plain body.
func TestEncodedBodiesAreRefused(t *testing.T) {
	t.Parallel()
	db := storetest.New(t, store.SQLite)
	app := apptest.Start(t, db, apptest.Options{})
	host := strings.TrimPrefix(app.URL, "http://")
	post := func(encodings ...string) string {
		raw := "POST " + routes.SignIn + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n"
		for _, e := range encodings {
			raw += "Content-Encoding: " + e + "\r\n"
		}
		return raw + "\r\na=b"
	}
	for _, tc := range []struct {
		name    string
		raw     string
		refused bool
	}{
		{"gzip", post("gzip"), true},
		{"brotli", post("br"), true},
		{"deflate in capitals", post("DEFLATE"), true},
		{"identity, then gzip", post("identity", "gzip"), true},
		{"gzip twice in one line", post("gzip, gzip"), true},
		{"identity", post("identity"), false},
		{"none", post(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := dialApp(app)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, err := io.WriteString(rc, tc.raw); err != nil {
				t.Fatal(err)
			}
			status, err := rc.answer(30 * time.Second)
			if got := status == http.StatusUnsupportedMediaType; got != tc.refused || status == 0 {
				t.Errorf("status %d (%v), refused %v", status, err, tc.refused)
			}
		})
	}
}
