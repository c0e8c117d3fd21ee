package web

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// strictFraming refuses (400, connection closed) a request whose head a
// reverse proxy in front of us could read differently from fasthttp, the
// stuff of request smuggling. fasthttp itself refuses a bare LF in a chunk
// and malformed lengths; what it tolerates is checked here on the head
// exactly as it came over the wire (RawHeaders, before any unfolding):
//   - a line ended by a bare LF (RFC 9112 §2.2 lets a recipient accept
//     it; a proxy that does not sees one header where we see two);
//   - obs-fold, a header line continued on the next (§5.2: a server
//     must refuse it or unfold it; proxies disagree on which);
//   - white space between a field name and its colon (§5.1: must be 400);
//   - no Host or more than one (§3.2: must be 400);
//   - Content-Length together with Transfer-Encoding (§6.1: ought to be
//     handled as an error; the classic CL.TE / TE.CL desync).
//
// The connection is closed after the answer, so that whatever followed
// the refused head on it (a hidden second request) is never read.
func strictFraming(c *fiber.Ctx) error {
	raw := c.Request().Header.RawHeaders()
	reason := badFraming(raw)
	if reason == "" && c.Request().Header.IsHTTP11() && len(c.Request().Header.Peek(fiber.HeaderHost)) == 0 {
		reason = "no Host"
	}
	if reason != "" {
		c.Context().SetConnectionClose()
		return fiber.NewError(fiber.StatusBadRequest, "malformed request framing: "+reason)
	}
	if encodedBody(c) {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "compressed request bodies are not accepted")
	}
	return c.Next()
}

// encodedBody reports whether a request says its body is encoded
// (Content-Encoding other than identity, in any of its header lines).
// Such a body is refused, not read: Fiber's Body unpacks gzip, deflate and
// brotli, chained, without a bound, while the body limit counts the bytes
// on the wire, so 60 KiB could unpack to gigabytes in memory. No form,
// bank callback or API client of ours sends one.
func encodedBody(c *fiber.Ctx) bool {
	for k, v := range c.Request().Header.All() {
		if bytes.EqualFold(k, []byte(fiber.HeaderContentEncoding)) && !bytes.EqualFold(bytes.TrimSpace(v), []byte("identity")) {
			return true
		}
	}
	return false
}

// badFraming names what is wrong with a request's raw header block (its
// lines after the request line, up to the blank line), or "".
func badFraming(raw []byte) string {
	var hosts, lengths, encodings int
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			return "a header line without its end"
		}
		if i == 0 || raw[i-1] != '\r' {
			return "a line ended by a bare LF"
		}
		line := raw[:i-1]
		raw = raw[i+1:]
		if len(line) == 0 {
			break // the blank line ending the head
		}
		if line[0] == ' ' || line[0] == '\t' {
			return "obs-fold (a header continued on the next line)"
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return "a header line without a name"
		}
		name := line[:colon]
		if bytes.ContainsAny(name, " \t") {
			return "white space in a header name"
		}
		switch {
		case bytes.EqualFold(name, []byte("Host")):
			hosts++
		case bytes.EqualFold(name, []byte("Content-Length")):
			lengths++
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			encodings++
		}
	}
	switch {
	case hosts > 1:
		return "more than one Host"
	case lengths > 0 && encodings > 0:
		return "both Content-Length and Transfer-Encoding"
	case lengths > 1:
		return "more than one Content-Length"
	case encodings > 1:
		return "more than one Transfer-Encoding"
	}
	return ""
}
