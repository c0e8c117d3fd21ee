package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

const (
	// MaxBody bounds the size of an API request body.
	MaxBody = 1 << 20
	// MinAmountRials is the smallest payment Zarinpal, SEP and Mellat accept.
	MinAmountRials = 10_000
	// MaxAmountRials is 100,000,000 tomans, the largest payment.
	MaxAmountRials = 1_000_000_000
)

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// DecodeBody reads a JSON object body (at most MaxBody) into v.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err != nil {
		return fmt.Errorf("decode request body: %w", err)
	}
	return nil
}

// Amount reads an integer amount given as a JSON number or a string of
// digits: present is false when it is missing or empty, ok when it is an
// integer.
func Amount(raw json.RawMessage) (amount int64, present, ok bool) {
	text := strings.TrimSpace(string(raw))
	if text == "" || text == "null" || text == `""` {
		return 0, false, false
	}
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(raw, &text); err != nil {
			text = ""
		}
	}
	a, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, true, false
	}
	return a, true, true
}

// RawString reads a JSON string or number as a string ("" otherwise).
func RawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// Digits reports whether s is 1 to 18 ASCII digits.
func Digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CheckCallback checks a merchant's callback URL: absolute http(s), and
// on origin when it is not "" (a real terminal is bound to its merchant's
// registered site; the bank inside the app accepts only the app's own
// origin, or anyone could make its pay button an open redirect). It
// returns what is wrong, or "".
func CheckCallback(origin, callback string) string {
	callback = strings.TrimSpace(callback)
	u, err := url.Parse(callback)
	switch {
	case callback == "":
		return "required"
	case !strings.HasPrefix(callback, "http://") && !strings.HasPrefix(callback, "https://"):
		return "must start with http:// or https://"
	case err != nil || u.Host == "":
		return "invalid URL"
	}
	if !OnOrigin(origin, u, callback) {
		return "must be on the merchant's registered site"
	}
	return ""
}

// OnOrigin reports whether a callback (parsed as u) is on origin ("" for
// any), both as parsed and as written: the redirect uses the text as
// written, and a browser must read the same host in it.
func OnOrigin(origin string, u *url.URL, callback string) bool {
	return origin == "" || strings.ToLower(u.Scheme+"://"+u.Host) == origin &&
		strings.HasPrefix(strings.ToLower(callback), origin+"/")
}

// FaultPage answers status with an error page like a reverse proxy's.
func FaultPage(w http.ResponseWriter, status int) {
	title := fmt.Sprintf("%d %s", status, http.StatusText(status))
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n"+
		"<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
}

// AllowPOST answers 405 through refuse, with Allow: POST, when r is not a
// POST, and reports whether it did.
func AllowPOST(w http.ResponseWriter, r *http.Request, refuse func(w http.ResponseWriter)) bool {
	if r.Method == http.MethodPost {
		return false
	}
	w.Header().Set("Allow", http.MethodPost)
	refuse(w)
	return true
}
