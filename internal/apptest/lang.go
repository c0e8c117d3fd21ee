package apptest

import "strings"

// GetIn switches this client to language lang ("fa" or "en") as the
// language link does (?lang=, a cookie, a redirect) and fetches path in it.
func (c *Client) GetIn(lang, path string) Response {
	c.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	if r := c.Get(path + sep + "lang=" + lang); r.Status != 303 {
		c.t.Fatalf("switch to %s on %s: status %d", lang, path, r.Status)
	}
	return c.Get(path)
}
