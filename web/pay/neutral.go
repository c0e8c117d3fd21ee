package pay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/views"
)

// neutralPages keeps the rendered neutral result page of a payment that can
// no longer change (a terminal status) for a visitor without a session —
// a repeated callback, a reload of the bank's return link, a forwarded
// link — so that a storm of such replays costs a map lookup, not a render.
//
// What the page shows is a function of the key alone: the payment's
// public id, status and failure cause (immutable once terminal), the
// language, the title, and the link to the other language (built from the
// request's query); the operator's settings and the catalogue are fixed for
// the process. The two values that differ per request, the CSP nonce and
// the CSRF token, are rendered as random placeholders (unguessable, made at
// start) and put back on every answer. A page for a signed-in visitor (the
// header names them) or for a payment still open (it refreshes) is never
// kept. The cache is bounded: when it is full it is emptied (an attacker
// varying the query string cannot grow it).
type neutralPages struct {
	mu      sync.RWMutex
	pages   map[neutralKey][]segment
	max     int
	nonce   string // the nonce's placeholder
	csrf    string // the CSRF token's placeholder
	renders int    // pages rendered (tests)
}

// neutralKey is everything a neutral page's bytes depend on.
type neutralKey struct {
	lang, title, switchLang string
	id, status, cause       string
}

// segment is a run of the page's bytes, then the per-request value that
// follows it (none at the end).
type segment struct {
	text []byte
	then byte // 'n': the nonce, 'c': the CSRF token, 0: nothing
}

const neutralPagesMax = 1024

func newNeutralPages(max int) *neutralPages {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return &neutralPages{pages: map[neutralKey][]segment{}, max: max,
		nonce: "n" + hex.EncodeToString(b[:16]), csrf: "c" + hex.EncodeToString(b[16:])}
}

// write answers c with the neutral page of v under pg, from the cache or
// rendered once into it.
func (n *neutralPages) write(c *fiber.Ctx, pg views.Page, v views.TopUpView) error {
	key := neutralKey{lang: string(pg.Lang), title: pg.TitleKey, switchLang: pg.SwitchLangURL, id: v.PublicID, status: v.Status, cause: v.FailureCause}
	n.mu.RLock()
	segs, ok := n.pages[key]
	n.mu.RUnlock()
	if !ok {
		nonce, csrf := pg.Nonce, pg.CSRF
		pg.Nonce, pg.CSRF = n.nonce, n.csrf
		var buf bytes.Buffer
		if err := views.Result(pg, v).Render(context.Background(), &buf); err != nil {
			return err
		}
		pg.Nonce, pg.CSRF = nonce, csrf
		segs = n.split(buf.Bytes())
		n.mu.Lock()
		if len(n.pages) >= n.max {
			clear(n.pages)
		}
		n.pages[key] = segs
		n.renders++
		n.mu.Unlock()
	}
	c.Status(fiber.StatusOK)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	w := c.Response().BodyWriter()
	for _, s := range segs {
		_, _ = w.Write(s.text) // fasthttp's body buffer: a write does not fail
		switch s.then {
		case 'n':
			_, _ = w.Write([]byte(pg.Nonce))
		case 'c':
			_, _ = w.Write([]byte(pg.CSRF))
		}
	}
	return nil
}

// split cuts a rendered page at its placeholders.
func (n *neutralPages) split(page []byte) []segment {
	var out []segment
	nonce, csrf := []byte(n.nonce), []byte(n.csrf)
	for {
		i, j := bytes.Index(page, nonce), bytes.Index(page, csrf)
		switch {
		case i < 0 && j < 0:
			return append(out, segment{text: bytes.Clone(page)})
		case j < 0 || i >= 0 && i < j:
			out = append(out, segment{text: bytes.Clone(page[:i]), then: 'n'})
			page = page[i+len(nonce):]
		default:
			out = append(out, segment{text: bytes.Clone(page[:j]), then: 'c'})
			page = page[j+len(csrf):]
		}
	}
}

// rendered is how many pages were rendered into the cache (tests).
func (n *neutralPages) rendered() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.renders
}
