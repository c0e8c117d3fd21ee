package web

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// cleanInput refuses (400) a request whose path, query string or form
// body (URL-encoded or multipart) holds a NUL byte or invalid UTF-8 in any
// name or value (the path as sent: fasthttp takes raw bytes above 0x7F in
// the request line, and route parameters are the path's own bytes):
// PostgreSQL refuses such text in a parameter, and nothing
// a person types or a bank sends contains it. It runs before every
// handler, so a search filter, a token name or a note with NUL is a clear
// 400 that changes nothing, not a 500 from the database. (Other control and invisible characters are refused
// per field by internal/usertext; JSON bodies are the API's to check.)
func cleanInput(c *fiber.Ctx) error {
	bad := false
	check := func(k, v []byte) {
		if !bad && (bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0 || !utf8.Valid(k) || !utf8.Valid(v)) {
			bad = true
		}
	}
	check(nil, c.Request().URI().PathOriginal())
	for k, v := range c.Request().URI().QueryArgs().All() {
		check(k, v)
	}
	switch ct := strings.ToLower(c.Get(fiber.HeaderContentType)); {
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm):
		for k, v := range c.Request().PostArgs().All() {
			check(k, v)
		}
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		// No page uploads a file, but Fiber's FormValue (and formValue)
		// read a multipart body too: its fields are checked alike. A body
		// that does not parse gives every field as empty, refused by the
		// handler (the CSRF check first).
		if f, err := c.MultipartForm(); err == nil {
			for k, vs := range f.Value {
				for _, v := range vs {
					check([]byte(k), []byte(v))
				}
			}
			for k, fs := range f.File {
				for _, fh := range fs {
					check([]byte(k), []byte(fh.Filename))
				}
			}
		}
	}
	if bad {
		return fiber.NewError(fiber.StatusBadRequest, "NUL or invalid UTF-8 in the request's parameters")
	}
	return c.Next()
}

// formValue is a field of the request's form body only: never the query
// string (which Fiber's FormValue also reads), so that a link cannot carry
// what only a form we rendered may send (the CSRF token).
func formValue(c *fiber.Ctx, name string) string {
	ct := strings.ToLower(c.Get(fiber.HeaderContentType))
	switch {
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm):
		return string(c.Request().PostArgs().Peek(name))
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		if f, err := c.MultipartForm(); err == nil && len(f.Value[name]) > 0 {
			return f.Value[name][0]
		}
	}
	return ""
}
