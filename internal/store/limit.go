package store

import (
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// literalLimits makes GORM write LIMIT and OFFSET numbers into the SQL
// text on PostgreSQL (the SQLite driver already does), not as parameters.
// They are ints of our code, never text of a request.
//
// Why: the app's statements are prepared and cached per connection, and
// PostgreSQL's cached generic plan cannot know a LIMIT parameter, so it
// costs the plan as if a tenth of the rows were read. That plan looks dearer
// than a custom one, so PostgreSQL planned the wallet page's and the admin
// list's statements again on every execution: about half of its CPU on
// those pages (payments has many indexes to cost). With the number in the
// text, a statement whose only parameters were the LIMIT (the admin list's
// default view and counts) is planned once per connection, and the generic
// plans of the others are costed right and used.
func literalLimits(gdb *gorm.DB) {
	if gdb.ClauseBuilders == nil {
		gdb.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	gdb.ClauseBuilders["LIMIT"] = func(c clause.Clause, builder clause.Builder) {
		limit, ok := c.Expression.(clause.Limit)
		if !ok {
			c.Build(builder)
			return
		}
		// clause.Limit.Build, with the numbers written instead of bound.
		var sql string
		hasLimit := limit.Limit != nil && *limit.Limit >= 0
		if hasLimit {
			sql = "LIMIT " + strconv.Itoa(*limit.Limit)
		}
		if limit.Offset > 0 {
			if hasLimit {
				sql += " "
			}
			sql += "OFFSET " + strconv.Itoa(limit.Offset)
		}
		// The statement's builder is a strings.Builder: writing never fails.
		_, _ = builder.WriteString(sql)
	}
}
