package integrity

// QueryOf is a rule's query as Check runs it on PostgreSQL ($n
// placeholders), for the tests that EXPLAIN it.
func QueryOf(r Rule) string { return numbered(r.query) }

// ShebaAliases are the alias check digits the Sheba rule names, each
// with the ones it stands for.
func ShebaAliases() [][2]string { return append([][2]string(nil), shebaAliases...) }
