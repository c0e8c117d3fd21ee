package apptest

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Doc is a page parsed as a browser parses it (golang.org/x/net/html):
// tests find a form by its action, an input by its name, an element by its
// data-testid, whatever the order of attributes, the quoting or the
// entities in the markup.
type Doc struct {
	root *html.Node
}

// Parse parses a page. HTML parsing does not fail: broken markup is
// repaired as a browser would, so a missing element shows as not found.
func Parse(body string) *Doc {
	root, err := html.Parse(strings.NewReader(body))
	if err != nil { // only a reader's error, never the markup's
		root = &html.Node{Type: html.DocumentNode}
	}
	return &Doc{root: root}
}

// Element is one element of a parsed page (nil-safe: the methods of a
// missing element answer "").
type Element struct {
	n *html.Node
}

// Attr returns the element's attribute name, or "".
func (e *Element) Attr(name string) string {
	if e == nil {
		return ""
	}
	for _, a := range e.n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val
		}
	}
	return ""
}

// Has reports whether the element has attribute name.
func (e *Element) Has(name string) bool {
	if e == nil {
		return false
	}
	for _, a := range e.n.Attr {
		if a.Namespace == "" && a.Key == name {
			return true
		}
	}
	return false
}

// Text is the element's text, its runs of white space made one space.
func (e *Element) Text() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(e.n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// find returns the elements under n (n included) that match, in document
// order.
func find(n *html.Node, match func(*html.Node) bool) []*Element {
	var out []*Element
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, &Element{n: n})
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attrIs(name, val string) func(*html.Node) bool {
	return func(n *html.Node) bool { return (&Element{n: n}).Has(name) && (&Element{n: n}).Attr(name) == val }
}

// TestID returns the first element with data-testid id, or nil.
func (d *Doc) TestID(id string) *Element {
	if all := d.TestIDs(id); len(all) > 0 {
		return all[0]
	}
	return nil
}

// TestIDs returns every element with data-testid id, in document order.
func (d *Doc) TestIDs(id string) []*Element { return find(d.root, attrIs("data-testid", id)) }

// ByID returns the element whose id is id, or nil.
func (d *Doc) ByID(id string) *Element {
	if all := find(d.root, attrIs("id", id)); len(all) > 0 {
		return all[0]
	}
	return nil
}

// Attrs lists the values of attribute name on every element of the page
// that has it, in document order: Attrs("href") is every link.
func (d *Doc) Attrs(name string) []string { return (&Element{n: d.root}).Attrs(name) }

// Attrs lists the values of attribute name on the element and every
// element inside it that has it, in document order.
func (e *Element) Attrs(name string) []string {
	if e == nil {
		return nil
	}
	var out []string
	for _, el := range find(e.n, func(n *html.Node) bool { return (&Element{n: n}).Has(name) }) {
		out = append(out, el.Attr(name))
	}
	return out
}

// Elements returns every element of kind tag ("html", "a"), in document
// order.
func (d *Doc) Elements(tag string) []*Element {
	return find(d.root, func(n *html.Node) bool { return n.Data == tag })
}

// Inputs returns every input named name (a group of radio buttons, say),
// in document order.
func (d *Doc) Inputs(name string) []*Element {
	return find(d.root, func(n *html.Node) bool {
		return n.DataAtom == atom.Input && (&Element{n: n}).Attr("name") == name
	})
}

// Input returns the value of the first input named name, or "".
func (d *Doc) Input(name string) string {
	for _, e := range find(d.root, func(n *html.Node) bool { return n.DataAtom == atom.Input }) {
		if e.Attr("name") == name {
			return e.Attr("value")
		}
	}
	return ""
}

// Form is one form of a page.
type Form struct {
	*Element
}

// Form returns the first form whose action is action (its query string
// included), or nil.
func (d *Doc) Form(action string) *Form {
	forms := find(d.root, func(n *html.Node) bool { return n.DataAtom == atom.Form })
	for _, f := range forms {
		if f.Attr("action") == action {
			return &Form{f}
		}
	}
	return nil
}

// Actions lists the actions of the page's forms (for failure messages).
func (d *Doc) Actions() []string {
	var out []string
	for _, f := range find(d.root, func(n *html.Node) bool { return n.DataAtom == atom.Form }) {
		out = append(out, f.Attr("action"))
	}
	return out
}

// Hidden returns the form's hidden fields as a browser would send them.
func (f *Form) Hidden() url.Values {
	v := url.Values{}
	if f == nil {
		return v
	}
	for _, e := range find(f.n, func(n *html.Node) bool { return n.DataAtom == atom.Input }) {
		if strings.EqualFold(e.Attr("type"), "hidden") && e.Attr("name") != "" && !e.Has("disabled") {
			v.Add(e.Attr("name"), e.Attr("value"))
		}
	}
	return v
}

// Input returns the value of the form's first input named name, or "".
func (f *Form) Input(name string) string {
	if f == nil {
		return ""
	}
	return (&Doc{root: f.n}).Input(name)
}

// Input returns the value of the first input named name on a page, or ""
// (the page parsed as a browser would: attributes in any order, entities
// decoded).
func Input(body, name string) string { return Parse(body).Input(name) }

// TopUpStatus returns the data-status of the page's payment-status
// element, or "".
func TopUpStatus(body string) string {
	return Parse(body).TestID("payment-status").Attr("data-status")
}
