package apptest

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// MetricsToken is a METRICS_TOKEN for tests that scrape /metrics.
const MetricsToken = "metrics-token-0123456789-abcdefghij" // #nosec G101 -- a token of the tests' apps only

// MetricValue returns the value of the series named exactly by series
// (name and labels as Prometheus prints them), or -1.
func MetricValue(t testing.TB, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", series, err)
	}
	return v
}

// DeliverMail delivers every mail due now and returns how many went.
func (a *App) DeliverMail(t testing.TB) int {
	t.Helper()
	n, err := a.Server.Outbox.DeliverDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var resetLinkRE = regexp.MustCompile(`http://[^\s"<]+` + regexp.QuoteMeta(routes.PasswordReset("")) + `([A-Za-z0-9_-]+)`)

// ResetLink finds a password reset link (routes.PasswordReset) in a mail's
// text: the whole link and its token, or nil.
func ResetLink(text string) []string { return resetLinkRE.FindStringSubmatch(text) }

// LogBuffer is a log sink safe for concurrent writers.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
