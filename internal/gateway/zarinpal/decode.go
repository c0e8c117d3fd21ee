package zarinpal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Limits on what is kept from an answer's free text.
const (
	maxMessageRunes = 300 // a gateway message, after validations are appended
	maxValidations  = 8   // validation texts appended to an error message
	maxWalkDepth    = 6   // nesting followed when collecting validation texts
	maxHashLen      = 128 // card_hash is a hex SHA-256 (64 chars)
	maxPANLen       = 32  // card_pan is 6 + 6 stars + 4 (16 chars)
)

var (
	// errNoCode: the body is JSON but carries no usable gateway code.
	errNoCode = errors.New("answer carries no gateway code")
	// errConflict: data.code and errors.code disagree, or a success code
	// comes with a non-empty errors: the answer contradicts itself.
	errConflict = errors.New("answer carries conflicting gateway codes")
	// errSuccessWithErrors: a success code (100, 101) alongside a
	// non-empty errors. It is an errConflict.
	errSuccessWithErrors = fmt.Errorf("%w: a success code with a non-empty errors", errConflict)
)

// envelope is the outer shape of every v4 answer. data and errors flip
// between object and array, so both are kept raw and decoded by hand.
type envelope struct {
	Data   json.RawMessage `json:"data"`
	Errors json.RawMessage `json:"errors"`
}

// dataFields is the union of the data object's fields over all endpoints.
// Every field tolerates numbers, strings and junk; unknown fields (wages,
// shaparak_fee, order_id, fee_type, referer ...) are ignored.
type dataFields struct {
	Code        flexInt       `json:"code"`
	Message     flexString    `json:"message"`
	Authority   flexString    `json:"authority"`
	Fee         flexInt       `json:"fee"`
	RefID       flexInt       `json:"ref_id"`
	CardPAN     flexString    `json:"card_pan"`
	CardHash    flexString    `json:"card_hash"`
	Status      flexString    `json:"status"`
	Authorities authorityList `json:"authorities"`
}

// errorFields is the errors object of a refused call.
type errorFields struct {
	Code        flexInt         `json:"code"`
	Message     flexString      `json:"message"`
	Validations json.RawMessage `json:"validations"`
}

// authorityFields is one entry of unVerified's data.authorities.
type authorityFields struct {
	Authority   flexString `json:"authority"`
	Amount      flexInt    `json:"amount"`
	CallbackURL flexString `json:"callback_url"`
	Date        flexString `json:"date"`
}

// answer is a decoded v4 answer.
type answer struct {
	data    dataFields
	errs    errorFields
	errText string // errors.message with validation texts appended
	// errsPresent: errors carries something (not absent, null, [], {} or
	// only empty values).
	errsPresent bool
}

// decodeAnswer decodes a body leniently. It fails only when the body is not
// a JSON object (or null); field-level junk just leaves fields unset.
func decodeAnswer(body []byte) (answer, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return answer{}, err
	}
	var a answer
	a.errsPresent = carriesSomething(env.Errors)
	if raw := firstObject(env.Data); raw != nil {
		_ = json.Unmarshal(raw, &a.data) // fields never fail; syntax was checked above
	}
	if raw := firstObject(env.Errors); raw != nil {
		_ = json.Unmarshal(raw, &a.errs)
		a.errText = joinMessage(a.errs.Message.s, collectTexts(a.errs.Validations))
	}
	return a, nil
}

// firstObject returns raw if it is an object, or the first object element
// of raw if it is an array ([] and [{...}] both occur); nil otherwise.
func firstObject(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '{':
		return raw
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for _, it := range items {
			if it = bytes.TrimSpace(it); len(it) > 0 && it[0] == '{' {
				return it
			}
		}
	}
	return nil
}

// decide picks the gateway code the answer is to be judged on, with its
// message. A code of 0 counts as absent. A success code (100, 101) next to
// a non-empty errors is a contradiction, never a success: a verify that
// says 100 and reports errors is an unknown outcome.
func (a answer) decide() (code int, msg string, err error) {
	dc, dok := a.data.Code.asCode()
	ec, eok := a.errs.Code.asCode()
	switch {
	case dok && eok && dc != ec:
		return 0, "", errConflict
	case eok:
		code, msg = ec, a.errText
	case dok:
		code, msg = dc, a.data.Message.s
	default:
		return 0, "", errNoCode
	}
	if (code == codeOK || code == codeAlreadyVerified) && a.errsPresent {
		return 0, "", errSuccessWithErrors
	}
	return code, msg, nil
}

// carriesSomething reports whether a raw JSON value holds any content: a
// non-blank string, a non-zero number, true, or an array or object holding
// one. Absent, null, [], {}, "" and the like are empty; so is invalid JSON
// (the envelope was already checked).
func carriesSomething(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return meaningful(v, 0)
}

func meaningful(v any, depth int) bool {
	if depth > maxWalkDepth {
		return true // deeply nested content is content
	}
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case float64:
		return t != 0
	case string:
		return strings.TrimSpace(t) != ""
	case []any:
		for _, e := range t {
			if meaningful(e, depth+1) {
				return true
			}
		}
		return false
	case map[string]any:
		for _, e := range t {
			if meaningful(e, depth+1) {
				return true
			}
		}
		return false
	}
	return true
}

// flexInt is an integer sent as a JSON number or as a string ("100").
// Anything else leaves it unset; it never fails a decode.
type flexInt struct {
	v  int64
	ok bool
}

// UnmarshalJSON implements json.Unmarshaler leniently.
func (f *flexInt) UnmarshalJSON(b []byte) error {
	*f = parseFlexInt(b)
	return nil
}

// asCode returns the value as a gateway code; 0 and out-of-range are absent.
func (f flexInt) asCode() (int, bool) {
	if !f.ok || f.v == 0 || f.v < math.MinInt32 || f.v > math.MaxInt32 {
		return 0, false
	}
	return int(f.v), true
}

// nonNegative returns the value, or 0 when unset or negative.
func (f flexInt) nonNegative() int64 {
	if !f.ok || f.v < 0 {
		return 0
	}
	return f.v
}

func parseFlexInt(b []byte) flexInt {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return flexInt{}
	}
	s := string(b)
	if b[0] == '"' {
		if json.Unmarshal(b, &s) != nil {
			return flexInt{}
		}
		s = strings.TrimSpace(s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return flexInt{v: n, ok: true}
	}
	// 5.9421827101e10 or 100.0: accept integral values that fit.
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) ||
		x < math.MinInt64 || x >= -math.MinInt64 {
		return flexInt{}
	}
	return flexInt{v: int64(x), ok: true}
}

// flexString is a string that may also arrive as a number; other JSON
// values leave it empty. It never fails a decode.
type flexString struct {
	s string
}

// UnmarshalJSON implements json.Unmarshaler leniently.
func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	f.s = ""
	if len(b) == 0 {
		return nil
	}
	switch {
	case b[0] == '"':
		var s string
		if json.Unmarshal(b, &s) == nil {
			f.s = strings.TrimSpace(s)
		}
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		f.s = string(b)
	}
	return nil
}

// authorityList is unVerified's authorities array; entries that are not
// objects are skipped and a non-array leaves it empty.
type authorityList struct {
	items []authorityFields
}

// UnmarshalJSON implements json.Unmarshaler leniently.
func (l *authorityList) UnmarshalJSON(b []byte) error {
	l.items = nil
	var raws []json.RawMessage
	if json.Unmarshal(b, &raws) != nil {
		return nil
	}
	for _, r := range raws {
		if r = bytes.TrimSpace(r); len(r) == 0 || r[0] != '{' {
			continue
		}
		var it authorityFields
		if json.Unmarshal(r, &it) == nil {
			l.items = append(l.items, it)
		}
	}
	return nil
}

// collectTexts gathers the strings of a validations value, whatever its
// shape ([{"description":"..."}], {"amount":["..."]}, ...), in a stable order.
func collectTexts(raw json.RawMessage) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	walkTexts(v, 0, &out)
	return out
}

func walkTexts(v any, depth int, out *[]string) {
	if depth > maxWalkDepth || len(*out) >= maxValidations {
		return
	}
	switch t := v.(type) {
	case string:
		if t = strings.TrimSpace(t); t != "" {
			*out = append(*out, t)
		}
	case []any:
		for _, e := range t {
			walkTexts(e, depth+1, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkTexts(t[k], depth+1, out)
		}
	}
}

func joinMessage(msg string, details []string) string {
	if len(details) == 0 {
		return msg
	}
	d := strings.Join(details, "; ")
	if msg == "" {
		return d
	}
	return msg + " (" + d + ")"
}

// sanitize makes gateway text safe for errors and logs: UUIDs (a merchant
// id) are redacted, digit runs long enough to be a card number are masked,
// control characters dropped and the length capped.
func sanitize(s string) string {
	s = maskDigitRuns(redactUUIDs(s))
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxMessageRunes {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// redactUUIDs replaces every UUID-shaped substring with "[uuid]".
func redactUUIDs(s string) string {
	if len(s) < uuidLen {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if i+uuidLen <= len(s) && isUUID(s[i:i+uuidLen]) {
			b.WriteString("[uuid]")
			i += uuidLen
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

const uuidLen = 36

// isUUID reports whether s is 8-4-4-4-12 hex digits (either case).
func isUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i := 0; i < uuidLen; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// ValidAuthority reports whether s has the v4 authority format: "A"
// (production) or "S" (sandbox) followed by 35 ASCII letters or digits.
// Authorities are case-sensitive.
func ValidAuthority(s string) bool {
	if len(s) != 36 || (s[0] != 'A' && s[0] != 'S') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}
