package apptest

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/kifpool/kifpool/internal/routes"
)

// The page helpers read what a browser would, whatever the markup's
// attribute order, quoting or entities; the regular expressions they
// replace did not.
func TestDocReadsAPageAsABrowserDoes(t *testing.T) {
	const page = `<!doctype html><html><body>
<p data-testid=balance data-rials='-1200' class="balance">۱۲۰ &amp; تومان</p>
<form method="post" action="/signout"><input type="hidden" name="_csrf" value="A"></form>
<form action="/wallet/topup?x=1&amp;y=2" method="post">
  <input value="tok&quot;1" name="token" type="HIDDEN">
  <input name="_csrf" type="hidden" value="B">
  <input type="hidden" name="off" value="1" disabled>
  <input name="amount" value="500" id=amount>
  <span data-testid="payment-status" data-status="credited">paid</span>
</form>
<ul><li data-testid="recovery-code"> AB12-CD34 </li><li data-testid="recovery-code">EF56-GH78</li></ul>
</body></html>`
	d := Parse(page)
	if got := d.TestID("balance").Attr("data-rials"); got != "-1200" {
		t.Errorf("balance data-rials %q", got)
	}
	if got := d.TestID("balance").Text(); got != "۱۲۰ & تومان" {
		t.Errorf("balance text %q", got)
	}
	if d.TestID("nothing") != nil || d.TestID("nothing").Attr("x") != "" || d.TestID("nothing").Text() != "" {
		t.Error("a missing element is not nil-safe")
	}
	f := d.Form(routes.TopUp + "?x=1&y=2")
	if f == nil {
		t.Fatalf("no form by its (entity-decoded) action; forms: %q", d.Actions())
	}
	if want := (url.Values{"token": {`tok"1`}, "_csrf": {"B"}}); !reflect.DeepEqual(f.Hidden(), want) {
		t.Errorf("hidden fields %v, want %v", f.Hidden(), want)
	}
	if f.Input("amount") != "500" || Input(page, "_csrf") != "A" {
		t.Errorf("inputs: amount %q, first _csrf %q", f.Input("amount"), Input(page, "_csrf"))
	}
	if d.Form(routes.TopUp) != nil || d.Form("/nowhere").Hidden().Encode() != "" {
		t.Error("a form matched by a prefix of its action, or a missing form is not nil-safe")
	}
	if h := d.Elements("html"); len(h) != 1 || h[0].Has("lang") || len(d.Elements("form")) != 2 {
		t.Errorf("elements: %d html, %d forms", len(h), len(d.Elements("form")))
	}
	if in := d.Inputs("_csrf"); len(in) != 2 || in[1].Attr("value") != "B" {
		t.Errorf("inputs named _csrf: %d", len(in))
	}
	if got := d.ByID("amount").Attr("value"); got != "500" || d.ByID("nothing") != nil {
		t.Errorf("by id: amount %q", got)
	}
	if got := d.Attrs("action"); !reflect.DeepEqual(got, []string{routes.SignOut, routes.TopUp + "?x=1&y=2"}) {
		t.Errorf("actions %q", got)
	}
	if got := TopUpStatus(page); got != "credited" {
		t.Errorf("payment status %q", got)
	}
	if got := recoveryCodes(page); !reflect.DeepEqual(got, []string{"AB12-CD34", "EF56-GH78"}) {
		t.Errorf("recovery codes %q", got)
	}
}
