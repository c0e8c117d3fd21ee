package i18n

import "strings"

// UserText is text someone typed (a merchant's display name, a person's
// name or e-mail address, a transfer's note, the operator's name) given
// to T as a placeholder's value. T writes it bidi-isolated: between U+2068
// FIRST STRONG ISOLATE and U+2069 POP DIRECTIONAL ISOLATE, so that a Latin
// "Shop (IR)" or "ali@x.com" in a Persian sentence (or a Persian name in
// an English one) keeps its own direction and cannot reorder the words,
// brackets and amounts around it. Bidi control characters inside it are
// dropped first (Clean): a value cannot close the isolate early or
// override the sentence's direction.
type UserText string

// Isolate is s cleaned of bidi controls and wrapped in U+2068 … U+2069;
// "" when nothing is left. It is what T writes for a UserText, for text
// put beside other text outside T (an attribute, a mail line).
func Isolate(s string) string {
	s = Clean(s)
	if s == "" {
		return ""
	}
	return "\u2068" + s + "\u2069"
}

// Clean drops the bidi control characters of s: the embeddings and
// overrides U+202A–U+202E, the isolates U+2066–U+2069, the marks U+200E,
// U+200F and U+061C. The zero-width non-joiner U+200C, which Persian is
// spelled with, stays. internal/usertext refuses all of these on input;
// Clean is the output side, for rows stored before it did.
func Clean(s string) string {
	if strings.IndexFunc(s, isBidiControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isBidiControl(r) {
			return -1
		}
		return r
	}, s)
}

func isBidiControl(r rune) bool {
	switch {
	case r >= '\u202A' && r <= '\u202E', r >= '\u2066' && r <= '\u2069':
		return true
	case r == '\u200E', r == '\u200F', r == '\u061C':
		return true
	}
	return false
}
