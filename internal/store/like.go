package store

import "strings"

// Containing is the LIKE pattern of the text s anywhere, its own
// wildcards (%, _) and the escape (\) escaped: the statement says
// ESCAPE '\' (PostgreSQL's default, SQLite's only when said), so that
// "first_last" finds first_last, not firstXlast, and never everyone.
func Containing(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}
