package config

import (
	"bytes"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Operator is who runs this instance and how payers reach them: the
// company named in the footer and in mails, the support contacts, the
// terms and privacy pages and the trust seal (eNamad). Every field is
// optional.
type Operator struct {
	// Name is the operating company (OPERATOR_NAME).
	Name string
	// SupportEmail, SupportPhone and SupportURL are the ways to reach
	// support; the first one set, in this order, is the primary one.
	SupportEmail, SupportPhone, SupportURL string
	// TermsURL and PrivacyURL are the operator's own pages.
	TermsURL, PrivacyURL string
	// SealHTML is ENAMAD_HTML as rendered: the operator's snippet cut
	// down to links and images over https, without inline style or
	// script; SealOrigins are its images' origins (the CSP allows them).
	SealHTML    string
	SealOrigins []string
}

// Contact is one way to reach support.
type Contact struct {
	Kind  string // "email", "phone" or "url"
	Value string // as configured
	Href  string // mailto:, tel: or the URL
}

// Contacts are the support contacts that are set, the primary first.
func (o Operator) Contacts() []Contact {
	var out []Contact
	if o.SupportEmail != "" {
		out = append(out, Contact{Kind: "email", Value: o.SupportEmail, Href: "mailto:" + o.SupportEmail})
	}
	if o.SupportPhone != "" {
		out = append(out, Contact{Kind: "phone", Value: o.SupportPhone, Href: "tel:" + strings.NewReplacer(" ", "", "-", "").Replace(o.SupportPhone)})
	}
	if o.SupportURL != "" {
		out = append(out, Contact{Kind: "url", Value: o.SupportURL, Href: o.SupportURL})
	}
	return out
}

// HasSupport reports whether any support contact is set.
func (o Operator) HasSupport() bool { return len(o.Contacts()) > 0 }

func operatorField(accepts string, check func(string) (string, error), field func(*Config) *string) parser {
	return parser{accepts: accepts,
		set: func(c *Config, v string) error {
			*field(c) = ""
			if v == "" {
				return nil
			}
			norm, err := check(v)
			if err != nil {
				return err
			}
			*field(c) = norm
			return nil
		},
		show: func(c Config) string { return *field(&c) }}
}

func checkSupportEmail(v string) (string, error) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || !strings.Contains(a.Address, "@") {
		return "", fmt.Errorf("want an e-mail address such as support@example.com, got %q", v)
	}
	return a.Address, nil
}

func checkPhone(v string) (string, error) {
	digits := 0
	for i, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0, r == ' ', r == '-':
		default:
			return "", fmt.Errorf("want a phone number of Latin digits, spaces and dashes, optionally starting with + (+98 21 1234 5678), got %q", v)
		}
	}
	if digits < 3 || digits > 15 {
		return "", fmt.Errorf("want a phone number of 3 to 15 digits, got %q", v)
	}
	return v, nil
}

func checkPublicURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("want an absolute http(s):// URL, got %q", v)
	}
	return v, nil
}

func checkText(max int) func(string) (string, error) {
	return func(v string) (string, error) {
		if len([]rune(v)) > max || strings.ContainsAny(v, "<>\r\n") {
			return "", fmt.Errorf("want one line of at most %d characters without < or >", max)
		}
		return v, nil
	}
}

// sealParser reads ENAMAD_HTML: the operator's snippet of the eNamad
// seal (a link around an image). It is parsed and written again with
// only <a> and <img>, their https links and a few plain attributes: no
// script, no event handler, no inline style (the CSP would refuse it).
var sealParser = parser{accepts: "an HTML snippet of links and images over `https://`",
	set: func(c *Config, v string) error {
		c.Operator.SealHTML, c.Operator.SealOrigins = "", nil
		if v == "" {
			return nil
		}
		out, origins, err := sanitizeSeal(v)
		if err != nil {
			return err
		}
		c.Operator.SealHTML, c.Operator.SealOrigins = out, origins
		return nil
	},
	show: func(c Config) string { return c.Operator.SealHTML }}

// sealAttrs are the attributes kept, per element.
var sealAttrs = map[atom.Atom][]string{
	atom.A:   {"href", "target", "id", "title"},
	atom.Img: {"src", "alt", "width", "height", "id", "code"},
}

func sanitizeSeal(v string) (string, []string, error) {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(v), ctx)
	if err != nil {
		return "", nil, fmt.Errorf("not HTML: %v", err)
	}
	var origins []string
	var clean func(n *html.Node) error
	clean = func(n *html.Node) error {
		switch n.Type {
		case html.TextNode:
			return nil
		case html.ElementNode:
			keep, ok := sealAttrs[n.DataAtom]
			if !ok {
				return fmt.Errorf("only <a> and <img> are allowed, found <%s>", n.Data)
			}
			var attrs []html.Attribute
			for _, a := range n.Attr {
				name := strings.ToLower(a.Key)
				if !slices.Contains(keep, name) {
					continue // style, on…, anything else
				}
				if name == "href" || name == "src" {
					u, err := url.Parse(a.Val)
					if err != nil || u.Scheme != "https" || u.Host == "" {
						return fmt.Errorf("<%s %s> must be an https:// URL, got %q", n.Data, name, a.Val)
					}
					if name == "src" && !slices.Contains(origins, "https://"+u.Host) {
						origins = append(origins, "https://"+u.Host)
					}
				}
				if name == "target" && a.Val != "_blank" {
					continue
				}
				attrs = append(attrs, html.Attribute{Key: name, Val: a.Val})
			}
			if n.DataAtom == atom.A && slices.ContainsFunc(attrs, func(a html.Attribute) bool { return a.Key == "target" }) {
				attrs = append(attrs, html.Attribute{Key: "rel", Val: "noopener"})
			}
			// The seal is on every page, a reset link's too: eNamad is told
			// the site (it checks the referring origin), never a page's
			// address, whatever the snippet asked (its own is "origin").
			attrs = append(attrs, html.Attribute{Key: "referrerpolicy", Val: "origin"})
			n.Attr = attrs
			for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
				if err := clean(ch); err != nil {
					return err
				}
			}
			return nil
		default:
			return fmt.Errorf("only <a> and <img> are allowed")
		}
	}
	var b bytes.Buffer
	for _, n := range nodes {
		if err := clean(n); err != nil {
			return "", nil, err
		}
		if err := html.Render(&b, n); err != nil {
			return "", nil, err
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", nil, fmt.Errorf("no element in the snippet")
	}
	return b.String(), origins, nil
}
