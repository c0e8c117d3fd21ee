package pay

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/views"
)

// neutralPages keeps the rendered neutral result page of a top-up that can
// no longer change (a terminal status) for a visitor without a session —
// a repeated callback, a reload of the bank's return link, a forwarded
// link — so that a storm of such replays costs a map lookup, not a render.
//
// What the page shows is a function of the key alone — the top-up's
// public id, status and failure cause (read afresh on every request: a new status is a new key), the
// language and the title; the operator's settings and the catalogue are
// fixed for the process — and of three values that differ per request:
// the CSP nonce, the CSRF token and the link to the other language (built
// from the request's query string). Those are rendered as random
// placeholders (unguessable, made at start) and put back on every answer,
// escaped as the template escapes them (TestNeutralPageSegmentsRebuildThePage
// holds the rebuilt page to the rendered one byte for byte). A page for a
// signed-in visitor (the header names them) or for a top-up still open
// (it refreshes) is never kept. The cache is bounded: when it is full, an
// entry is dropped for the new one.
type neutralPages struct {
	mu      sync.RWMutex
	pages   map[neutralKey][]segment
	max     int
	nonce   string // the nonce's placeholder
	csrf    string // the CSRF token's placeholder
	swtch   string // the other-language link's placeholder (a path)
	renders int    // pages rendered (tests)
}

// neutralKey is everything a neutral page's bytes depend on.
type neutralKey struct {
	lang, title, id, status, cause string
}

// segment is a run of the page's bytes, then the per-request value that
// follows it (none at the end).
type segment struct {
	text []byte
	then byte // 'n': the nonce, 'c': the CSRF token, 's': the other-language link, 0: nothing
}

// neutralPagesMax bounds the kept pages (about 2 kB each).
const neutralPagesMax = 4096

func newNeutralPages(max int) *neutralPages {
	var b [48]byte
	_, _ = rand.Read(b[:])
	return &neutralPages{pages: map[neutralKey][]segment{}, max: max,
		nonce: "n" + hex.EncodeToString(b[:16]), csrf: "c" + hex.EncodeToString(b[16:32]), swtch: "/s" + hex.EncodeToString(b[32:])}
}

// write answers c with the neutral page of v under pg, from the cache or
// rendered once into it.
func (n *neutralPages) write(c *fiber.Ctx, pg views.Page, v views.TopUpView) error {
	key := neutralKey{lang: string(pg.Lang), title: pg.TitleKey, id: v.PublicID, status: v.Status, cause: v.FailureCause}
	n.mu.RLock()
	segs, ok := n.pages[key]
	n.mu.RUnlock()
	if !ok {
		tmpl := pg
		tmpl.Nonce, tmpl.CSRF, tmpl.SwitchLangURL = n.nonce, n.csrf, n.swtch
		var buf bytes.Buffer
		if err := views.Result(tmpl, v).Render(c.UserContext(), &buf); err != nil {
			return err
		}
		segs = n.split(buf.Bytes())
		n.mu.Lock()
		if len(n.pages) >= n.max {
			for k := range n.pages {
				delete(n.pages, k)
				break
			}
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
			_, _ = w.Write([]byte(templ.EscapeString(pg.Nonce)))
		case 'c':
			_, _ = w.Write([]byte(templ.EscapeString(pg.CSRF)))
		case 's':
			_, _ = w.Write([]byte(templ.EscapeString(views.LocalHref(pg.SwitchLangURL))))
		}
	}
	return nil
}

// split cuts a rendered page at its placeholders.
func (n *neutralPages) split(page []byte) []segment {
	var out []segment
	marks := []struct {
		text []byte
		then byte
	}{{[]byte(n.nonce), 'n'}, {[]byte(n.csrf), 'c'}, {[]byte(n.swtch), 's'}}
	for {
		// The placeholder that comes first; the page is cut there.
		at, first, then := -1, []byte(nil), byte(0)
		for _, m := range marks {
			if i := bytes.Index(page, m.text); i >= 0 && (at < 0 || i < at) {
				at, first, then = i, m.text, m.then
			}
		}
		if first == nil {
			return append(out, segment{text: bytes.Clone(page)})
		}
		before, after, _ := bytes.Cut(page, first)
		out = append(out, segment{text: bytes.Clone(before), then: then})
		page = after
	}
}

// rendered is how many pages were rendered into the cache (tests).
func (n *neutralPages) rendered() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.renders
}
