package transfer_test

import (
	"errors"
	"testing"

	"github.com/kifpool/kifpool/internal/transfer"
)

// A transfer's note is one line: it is shown inside the receipts (the
// recipient's plain-text mail among them), where a line break could
// forge a receipt's lines. Line feeds, carriage returns, tabs, any other
// control character and the line and paragraph separators are refused
// as the invisible formatting characters are; a note in Persian with its
// ZWNJ (the half-space between letters), or in English, passes.
func TestCheckNoteIsOneLine(t *testing.T) {
	for _, tc := range []struct {
		name, note string
		want       error
	}{
		{"empty", "", nil},
		{"english", "rent for March, thanks!", nil},
		{"persian with a zwnj", "می\u200cخواهم اجاره را بدهم", nil},
		{"persian and english", "اجاره\u200cی March", nil},
		{"line feed", "thanks\n\nReceipt:\nhttps://evil.example", transfer.ErrNoteInvalid},
		{"one line feed", "a\nb", transfer.ErrNoteInvalid},
		{"trailing line feed", "thanks\n", transfer.ErrNoteInvalid},
		{"carriage return", "a\rb", transfer.ErrNoteInvalid},
		{"crlf", "a\r\nb", transfer.ErrNoteInvalid},
		{"tab", "a\tb", transfer.ErrNoteInvalid},
		{"vertical tab", "a\vb", transfer.ErrNoteInvalid},
		{"form feed", "a\fb", transfer.ErrNoteInvalid},
		{"next line (U+0085)", "a\u0085b", transfer.ErrNoteInvalid},
		{"nul", "a\x00b", transfer.ErrNoteInvalid},
		{"line separator (U+2028)", "thanks\u2028Receipt: https://evil.example", transfer.ErrNoteInvalid},
		{"paragraph separator (U+2029)", "thanks\u2029Receipt", transfer.ErrNoteInvalid},
		{"bidi override", "hi\u202e", transfer.ErrNoteInvalid},
		{"leading zwnj", "\u200cmoney", transfer.ErrNoteInvalid},
		{"invalid utf-8", "a\xffb", transfer.ErrNoteInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := transfer.CheckNote(tc.note); !errors.Is(err, tc.want) {
				t.Fatalf("CheckNote(%q) = %v, want %v", tc.note, err, tc.want)
			}
		})
	}
}
