package cardrefund

// CheckNote reports whether note is one an admin's refund or close may
// carry (ErrNoteRequired: empty, too long or with characters a note may
// not hold). Pages check it before a second factor's code is spent; the
// use case checks it again.
func CheckNote(note string) error {
	_, err := checkNote(note)
	return err
}
