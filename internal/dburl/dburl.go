// Package dburl reads DATABASE_URL: which engine, and the DSN its driver
// takes. It imports no Kifpool package, so that the configuration can check the
// setting without linking the database code (package store opens it).
package dburl

import (
	"errors"
	neturl "net/url"
	"strings"
)

// Dialect names the database engine.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DefaultSQLitePath is the zero-setup database file.
const DefaultSQLitePath = "./data/kifpool.db"

// Parse splits DATABASE_URL into a dialect and a driver DSN:
// "" → the default SQLite file; "sqlite:PATH" → that file;
// "postgres://…" or "postgresql://…" → PostgreSQL.
func Parse(url string) (Dialect, string, error) {
	switch {
	case url == "":
		return SQLite, DefaultSQLitePath, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return "", "", errors.New("sqlite: URL needs a file path, e.g. sqlite:./data/kifpool.db")
		}
		return SQLite, path, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Postgres, url, nil
	}
	return "", "", errors.New("unsupported DATABASE_URL scheme (want postgres://… or sqlite:PATH)")
}

// Redacted is the URL raw for people (a banner, logs, kifpool config):
// its password hidden, in the user part or in the query (libpq's
// password= and sslpassword=). raw itself when it is not a URL.
func Redacted(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	if q := u.Query(); len(q) > 0 {
		hidden := false
		for k := range q {
			if lk := strings.ToLower(k); lk == "password" || lk == "sslpassword" {
				q.Set(k, "xxxxx")
				hidden = true
			}
		}
		if hidden {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}
