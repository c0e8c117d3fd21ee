package store

import "gorm.io/gorm"

// Scan runs q (a Raw statement, or a query built on a table) and scans
// its result into dest exactly as GORM's Scan does — a slice gets every
// row, anything else the first row, left as it was when there is none;
// errors translated as the configuration says (a duplicate key is
// gorm.ErrDuplicatedKey, also when SQLite reports it at the first row of
// a write's RETURNING) — and returns the error. GORM's own Scan also
// writes the statement out with its values inlined, for a recorder that
// nothing here reads, at every call (logger.ExplainSQL: regular
// expressions over the whole text, 7 % of a credit's CPU on PostgreSQL);
// this one does not. The statement is traced once, through q's logger, as
// before.
func Scan(q *gorm.DB, dest any) error {
	// The statement's own instance (GORM's getInstance: q itself when q
	// is a statement being built), which collects the errors below.
	tx := q.Scopes()
	rows, err := tx.Rows()
	if err != nil {
		return err
	}
	if rows.Next() {
		_ = tx.ScanRows(rows, dest)
	} else {
		tx.RowsAffected = 0
		_ = tx.AddError(rows.Err())
	}
	if err := rows.Close(); err != nil {
		_ = tx.AddError(err)
	}
	return tx.Error
}
