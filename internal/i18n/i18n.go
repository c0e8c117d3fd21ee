// Package i18n holds the user-facing text of Kifpool in Persian (the
// default, right-to-left) and English, and the locale-aware formatting of
// numbers, money and dates.
package i18n

import (
	"fmt"
	"strings"
)

// Lang is a supported interface language.
type Lang string

const (
	FA Lang = "fa" // Persian, the default
	EN Lang = "en"
)

// Default is the product's language: every page is in it until the person
// chooses another (the browser's Accept-Language does not choose).
const Default = FA

// Langs lists the supported languages, default first.
var Langs = []Lang{FA, EN}

// Parse returns the language for a code such as "fa", "en-US"; ok is false
// for anything unsupported.
func Parse(code string) (Lang, bool) {
	code = strings.ToLower(strings.TrimSpace(code))
	if i := strings.IndexAny(code, "-_"); i >= 0 {
		code = code[:i]
	}
	switch Lang(code) {
	case FA:
		return FA, true
	case EN:
		return EN, true
	}
	return "", false
}

// Dir is the text direction of the language: "rtl" or "ltr".
func (l Lang) Dir() string {
	if l == FA {
		return "rtl"
	}
	return "ltr"
}

// Other is the language a switch on the page offers.
func (l Lang) Other() Lang {
	if l == FA {
		return EN
	}
	return FA
}

func table(l Lang) []map[string]string {
	if l == EN {
		return []map[string]string{messagesEN, adminEN, tokensEN, accountEN, webhooksEN, transferEN, withdrawEN, cardRefundEN, merchantAdminEN, checkoutEN, verifyEN}
	}
	return []map[string]string{messagesFA, adminFA, tokensFA, accountFA, webhooksFA, transferFA, withdrawFA, cardRefundFA, merchantAdminFA, checkoutFA, verifyFA}
}

// T returns the message for key in language l. args are name/value pairs
// substituted for {name} placeholders; numbers given as int/int64 are
// written with the language's digits, a UserText bidi-isolated (Isolate).
// A missing key returns the key itself in brackets so that it is visible
// (and a test fails on it).
func T(l Lang, key string, args ...any) string {
	var msg string
	found := false
	for _, m := range table(l) {
		if s, ok := m[key]; ok {
			msg, found = s, true
			break
		}
	}
	if !found {
		return "[" + key + "]"
	}
	if len(args) == 0 {
		return msg
	}
	msg = plural(msg, args)
	pairs := make([]string, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		name := fmt.Sprint(args[i])
		var val string
		switch v := args[i+1].(type) {
		case Money:
			val = Tomans(l, int64(v))
		case UserText:
			val = Isolate(string(v))
		case int:
			val = Digits(l, fmt.Sprint(v))
		case int64:
			val = Digits(l, fmt.Sprint(v))
		default:
			val = fmt.Sprint(v)
		}
		pairs = append(pairs, "{"+name+"}", val)
	}
	return substitute(msg, pairs)
}

// plural picks each {name|one|other} of msg by the argument name: one
// when it is the number 1, other otherwise (English's two forms: "1 day",
// "2 days"; Persian says a number with the singular, and needs none).
func plural(msg string, args []any) string {
	if strings.IndexByte(msg, '|') < 0 {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '{')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		j := strings.IndexByte(msg[i:], '}')
		if j < 0 {
			b.WriteString(msg)
			return b.String()
		}
		parts := strings.Split(msg[i+1:i+j], "|")
		if len(parts) != 3 {
			b.WriteString(msg[:i+j+1])
			msg = msg[i+j+1:]
			continue
		}
		form := parts[2]
		if isOne(args, parts[0]) {
			form = parts[1]
		}
		b.WriteString(msg[:i])
		b.WriteString(form)
		msg = msg[i+j+1:]
	}
}

// isOne reports whether the argument name of args is the number 1.
func isOne(args []any, name string) bool {
	for i := 0; i+1 < len(args); i += 2 {
		if fmt.Sprint(args[i]) != name {
			continue
		}
		switch v := args[i+1].(type) {
		case int:
			return v == 1
		case int64:
			return v == 1
		case string:
			return v == "1"
		}
		return false
	}
	return false
}

// substitute is strings.NewReplacer(pairs...).Replace(msg) for pairs whose
// old strings all begin with '{' (placeholders): one pass, the first pair
// in argument order that matches at a position wins, replaced text is not
// scanned again. It skips building a replacer, which cost more than the
// replacing on pages with a relative time per row.
func substitute(msg string, pairs []string) string {
	if strings.IndexByte(msg, '{') < 0 {
		return msg
	}
	var b strings.Builder
	b.Grow(len(msg) + 16)
	for {
		i := strings.IndexByte(msg, '{')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		msg = msg[i:]
		matched := false
		for j := 0; j+1 < len(pairs); j += 2 {
			if strings.HasPrefix(msg, pairs[j]) {
				b.WriteString(pairs[j+1])
				msg = msg[len(pairs[j]):]
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte('{')
			msg = msg[1:]
		}
	}
}

// Money is an amount of rials given to T: it is written as tomans with the
// language's digits and separators.
type Money int64

// Has reports whether key exists in language l.
func Has(l Lang, key string) bool {
	for _, m := range table(l) {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return false
}

// Keys returns every key of language l (for completeness tests).
func Keys(l Lang) []string {
	var out []string
	for _, m := range table(l) {
		for k := range m {
			out = append(out, k)
		}
	}
	return out
}

// Digits rewrites the ASCII digits of s in the language's digits.
func Digits(l Lang, s string) string {
	if l != FA {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune('۰' + (r - '0'))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
