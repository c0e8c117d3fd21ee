// Package migrations embeds the SQL schema migrations of both dialects.
// goose runs them; each dialect has its own folder because PostgreSQL and
// SQLite spell types and constraints differently.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// FS returns the migrations of one dialect ("postgres" or "sqlite") with the
// files at its root, as goose's provider expects.
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case "postgres", "sqlite":
		return fs.Sub(files, dialect)
	}
	return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
}
