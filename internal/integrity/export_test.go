package integrity

// QueryOf is a rule's query as Check runs it on PostgreSQL ($n
// placeholders), for the tests that EXPLAIN it.
func QueryOf(r Rule) string { return numbered(r.query) }
