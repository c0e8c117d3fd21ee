package pay

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/views"
)

// keptPages keeps the rendered pages of top-ups that can no longer change
// (a terminal status): the neutral result page a visitor without a session
// gets, and the payer's own result page and receipt, so that a storm of
// replays — a repeated callback, a reload of the bank's return link or of
// the receipt — costs a map lookup, not a render.
//
// What a page shows is a function of its key alone (keptKey): the
// template, the language and title, the signed-in user as the header
// shows them (their address, admin, merchant), and every field of the
// top-up's view (TestKeptKeyCoversTheView holds the key to the view's and
// the page's fields, so that a field added later cannot be left out); the
// operator's settings and the catalogue are fixed for the process. Three
// values differ per request: the CSP nonce, the CSRF token and the link
// to the other language (built from the request's query string). Those are
// rendered as random placeholders (unguessable, made at start) and put
// back on every answer, escaped as the template escapes them
// (TestKeptPageSegmentsRebuildThePage holds the rebuilt page to the
// rendered one byte for byte). A page that refreshes (a top-up still
// open) or carries a bank's form is never kept. The cache is bounded:
// when it is full, an entry is dropped for the new one.
type keptPages struct {
	mu      sync.RWMutex
	pages   map[keptKey][]segment
	max     int
	nonce   string // the nonce's placeholder
	csrf    string // the CSRF token's placeholder
	swtch   string // the other-language link's placeholder (a path)
	renders int    // pages rendered (tests)
}

// The templates a kept page is rendered from.
const (
	keptResult  = 'r' // views.Result: the bank's return
	keptReceipt = 'c' // views.Receipt: the payer's /topups/{id}
)

// keptKey is everything a kept page's bytes depend on.
type keptKey struct {
	tmpl        byte
	lang, title string
	signedIn    bool
	user        views.UserInfo
	v           keptView
}

// keptView is views.TopUpView as a comparable value (no pointers): every
// field but BankForm (a page with one is not kept).
type keptView struct {
	PublicID           string
	AmountRials        int64
	Status             string
	RefID              int64
	CardPANMasked      string
	CreatedAt          time.Time
	HasResolved        bool
	ResolvedAt         time.Time
	FailureCause       string
	TryAgainURL        string
	OtherGatewayURL    string
	CheckoutURL        string
	ReturnURL          string
	RefreshSeconds     int
	Neutral            bool
	BankURL            string
	Dismissed          bool
	ToCardRials        int64
	ToCardPendingRials int64
	Reversing          bool
	ReversingUnsettled bool
}

// keyOf is the key of the page tmpl renders from pg and v; ok is false
// when such a page is not kept (it refreshes, or holds a bank's form).
func keyOf(tmpl byte, pg views.Page, v views.TopUpView) (k keptKey, ok bool) {
	if pg.RefreshURL != "" || pg.RefreshSeconds != 0 || v.RefreshSeconds != 0 || v.BankForm != nil {
		return keptKey{}, false
	}
	k = keptKey{tmpl: tmpl, lang: string(pg.Lang), title: pg.TitleKey, v: keptView{
		PublicID: v.PublicID, AmountRials: v.AmountRials, Status: v.Status, RefID: v.RefID, CardPANMasked: v.CardPANMasked,
		CreatedAt: v.CreatedAt.UTC(), FailureCause: v.FailureCause, TryAgainURL: v.TryAgainURL,
		OtherGatewayURL: v.OtherGatewayURL, CheckoutURL: v.CheckoutURL, ReturnURL: v.ReturnURL,
		Neutral: v.Neutral, BankURL: v.BankURL, Dismissed: v.Dismissed,
		ToCardRials: v.ToCardRials, ToCardPendingRials: v.ToCardPendingRials, Reversing: v.Reversing,
		ReversingUnsettled: v.ReversingUnsettled,
	}}
	if v.ResolvedAt != nil {
		k.v.HasResolved, k.v.ResolvedAt = true, v.ResolvedAt.UTC()
	}
	if pg.User != nil {
		k.signedIn, k.user = true, *pg.User
	}
	return k, true
}

// segment is a run of the page's bytes, then the per-request value that
// follows it (none at the end).
type segment struct {
	text []byte
	then byte // 'n': the nonce, 'c': the CSRF token, 's': the other-language link, 0: nothing
}

// keptPagesMax bounds the kept pages (2–6 kB each).
const keptPagesMax = 4096

func newKeptPages(max int) *keptPages {
	var b [48]byte
	_, _ = rand.Read(b[:])
	return &keptPages{pages: map[keptKey][]segment{}, max: max,
		nonce: "n" + hex.EncodeToString(b[:16]), csrf: "c" + hex.EncodeToString(b[16:32]), swtch: "/s" + hex.EncodeToString(b[32:])}
}

// topUpPage answers c with a top-up's page (tmpl: keptResult or
// keptReceipt): kept when it can be, else rendered for this request.
func (h *handlers) topUpPage(c *fiber.Ctx, tmpl byte, pg views.Page, v views.TopUpView) error {
	if key, ok := keyOf(tmpl, pg, v); ok {
		return h.kept.write(c, key, pg, v)
	}
	return h.Render(c, fiber.StatusOK, render(tmpl, pg, v))
}

// render is the template of a kept page.
func render(tmpl byte, pg views.Page, v views.TopUpView) templ.Component {
	if tmpl == keptReceipt {
		return views.Receipt(pg, v)
	}
	return views.Result(pg, v)
}

// write answers c with the page of key (keyOf's, of pg and v), from the
// cache or rendered once into it.
func (n *keptPages) write(c *fiber.Ctx, key keptKey, pg views.Page, v views.TopUpView) error {
	n.mu.RLock()
	segs, ok := n.pages[key]
	n.mu.RUnlock()
	if !ok {
		tmpl := pg
		tmpl.Nonce, tmpl.CSRF, tmpl.SwitchLangURL = n.nonce, n.csrf, n.swtch
		var buf bytes.Buffer
		if err := render(key.tmpl, tmpl, v).Render(c.UserContext(), &buf); err != nil {
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
func (n *keptPages) split(page []byte) []segment {
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
func (n *keptPages) rendered() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.renders
}
