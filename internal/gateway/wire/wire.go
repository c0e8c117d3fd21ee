// Package wire holds what the bank drivers share on the wire: the checks
// of the settings every call carries (base URL, terminal number), one
// bounded HTTP exchange, the statuses that say nothing about a
// call, and the cleaning of text a bank sends before it reaches a log or an
// error. It knows no gateway's protocol.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kifpool/kifpool/internal/usertext"
)

// MaxBody is how much of an answer is read (1 MiB).
const MaxBody = 1 << 20

// BaseURL checks an API base: an absolute http(s) URL without query,
// fragment or credentials, https unless the host is this machine (a
// standalone sandbox bank); trailing slashes are dropped. secretWhat
// names what travels in every call, for the message.
func BaseURL(raw, secretWhat string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an absolute http(s) URL, got %q", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q must not carry a query, fragment or credentials", u.Redacted())
	}
	if u.Scheme != "https" && !Loopback(u.Hostname()) {
		return "", fmt.Errorf("must be https:// (%s travels in every call) unless it is a loopback address, got %q", secretWhat, s)
	}
	return s, nil
}

// TerminalID checks a terminal's number (SEP's TerminalId, Mellat's
// terminalId): 1 to 18 digits, surrounding space dropped.
func TerminalID(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 18 || strings.ContainsFunc(v, func(r rune) bool { return r < '0' || r > '9' }) {
		return "", errors.New("want the terminal's number, 1 to 18 digits")
	}
	return v, nil
}

// Loopback reports whether a host name or address is this machine only.
func Loopback(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Do sends req and reads at most MaxBody of the answer. status is 0 when
// no answer arrived. A nil client is a client without a Timeout: the
// request's context carries the deadline.
func Do(hc *http.Client, req *http.Request) (status int, h http.Header, body []byte, err error) {
	if hc == nil {
		hc = &http.Client{}
	}
	resp, err := hc.Do(req) // #nosec G704 -- drivers build req from the operator-configured gateway base and a fixed path
	if err != nil {
		return 0, nil, nil, WithContextErr(req.Context(), err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return resp.StatusCode, resp.Header, nil, WithContextErr(req.Context(), fmt.Errorf("read body: %w", err))
	}
	if len(body) > MaxBody {
		return resp.StatusCode, resp.Header, nil, errors.New("answer body larger than 1 MiB")
	}
	return resp.StatusCode, resp.Header, body, nil
}

// WithContextErr makes sure errors.Is(err, ctx.Err()) holds when the
// context ended, whatever the transport reported.
func WithContextErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// Retryable reports HTTP statuses that say nothing about the call itself
// (408, 429, 5xx).
func Retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// maxRetryAfter bounds a believable Retry-After.
const maxRetryAfter = 24 * time.Hour

// RetryAfter parses a Retry-After header (seconds or HTTP-date); 0 if
// none or unbelievable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s > int64(maxRetryAfter/time.Second) {
			return 0
		}
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d <= 0 || d > maxRetryAfter {
		return 0
	}
	return d
}

// Clean makes text from a bank fit for a log or an error: valid UTF-8,
// no control characters, runs of space collapsed, at most n runes.
func Clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "�")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return usertext.Cut(panRun.ReplaceAllStringFunc(strings.TrimSpace(b.String()), maskRun), n)
}

// panRun is a run of digits that may be a card number (13 to 19 digits,
// perhaps grouped by spaces or dashes).
var panRun = regexp.MustCompile(`[0-9][0-9 \-]{11,30}[0-9]`)

// maskRun masks a digit run of 13 or more digits to its first six and
// last four; shorter runs (amounts, references) are kept.
func maskRun(run string) string {
	var d []byte
	for i := 0; i < len(run); i++ {
		if run[i] >= '0' && run[i] <= '9' {
			d = append(d, run[i])
		}
	}
	if len(d) < 13 {
		return run
	}
	return string(d[:6]) + strings.Repeat("*", len(d)-10) + string(d[len(d)-4:])
}

// MaskPAN keeps a card number's first six and last four digits and masks
// the rest; anything that is not 12 to 19 digits (with masks and
// separators) becomes "". Never a full card number.
func MaskPAN(s string) string {
	var d []rune
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r >= '0' && r <= '9', r == '*', r == 'X', r == 'x', r == '#':
			if r == 'X' || r == 'x' || r == '#' {
				r = '*'
			}
			d = append(d, r)
		case r == '-' || r == ' ':
		default:
			return ""
		}
	}
	if len(d) < 12 || len(d) > 19 {
		return ""
	}
	for i := 6; i < len(d)-4; i++ {
		d[i] = '*'
	}
	return string(d)
}

// FlexInt reads a JSON number or a string of digits (banks send both).
// ok is false for anything else.
func FlexInt(raw []byte) (int64, bool) {
	s := strings.TrimSpace(string(raw))
	s = strings.Trim(s, `"`)
	s = strings.TrimSpace(s)
	if s == "" || s == "null" {
		return 0, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	// 1000.0 from a float-minded encoder: a whole number with a zero
	// fraction, read as the digits it is (never through a float, which
	// would round a large amount).
	if whole, frac, ok := strings.Cut(s, "."); ok && frac != "" && strings.Trim(frac, "0") == "" {
		if i, err := strconv.ParseInt(whole, 10, 64); err == nil {
			return i, true
		}
	}
	return 0, false
}

// FlexString reads a JSON string or number as text ("" otherwise).
func FlexString(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		// JSON's own escapes (\/, surrogate pairs), not Go's: a RefNum
		// in base64 written by an encoder that escapes "/" must read as
		// the bank wrote it.
		var u string
		if err := json.Unmarshal([]byte(s), &u); err == nil {
			return u
		}
		return ""
	}
	if s[0] == '-' || (s[0] >= '0' && s[0] <= '9') {
		return s
	}
	return ""
}
