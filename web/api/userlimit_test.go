package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/i18n"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
	"github.com/kifpool/kifpool/internal/withdrawal/withdrawaltest"
)

// The top-up limit counts per user, through the form and every token
// together: more tokens give no more top-ups, and one user's limit does
// not touch another's.
func TestTopUpLimitIsPerUserAcrossFormAndTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_TOPUP": "3"}, Server: server.Options{RateLimits: true}})
		web := f.app.NewClient(t)
		web.SignUp("flood@example.com")
		uid := authtest.UserID(t, db, "flood@example.com")
		a, b := f.token(t, uid, apitoken.ScopeTopUp), f.token(t, uid, apitoken.ScopeTopUp)

		csrf, tok := web.TopUpForm()
		if r := web.PostTopUp(csrf, tok, "50000"); r.Status != http.StatusSeeOther {
			t.Fatalf("form top-up: %d", r.Status)
		}
		// A double click of the same form is not a new top-up.
		if r := web.PostTopUp(csrf, tok, "50000"); r.Status == http.StatusTooManyRequests {
			t.Fatal("the replay of a submitted form was counted")
		}
		if r := a.post(routes.APITopUps, "k1", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("token a: %d %s", r.Status, r.Body)
		}
		if r := b.post(routes.APITopUps, "k2", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("token b: %d %s", r.Status, r.Body)
		}
		r := b.post(routes.APITopUps, "k3", `{"amount_rials": 500000}`)
		if r.Status != http.StatusTooManyRequests || r.Code() != "rate_limited" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("fourth top-up by token: %d %s", r.Status, r.Body)
		}
		csrf, tok = web.TopUpForm()
		page := web.PostTopUp(csrf, tok, "50000")
		if page.Status != http.StatusTooManyRequests || page.Header.Get("Retry-After") == "" {
			t.Fatalf("fourth top-up by form: %d", page.Status)
		}
		// The form again, as typed, saying how long to wait: not an
		// error page that loses the amount.
		doc := apptest.Parse(page.Body)
		secs, _ := strconv.ParseInt(page.Header.Get("Retry-After"), 10, 64)
		if e := doc.TestID("amount-error"); e == nil || (e.Text() != i18n.T(i18n.FA, "topup.error_too_many", "seconds", secs) &&
			e.Text() != i18n.T(i18n.EN, "topup.error_too_many", "seconds", secs)) {
			t.Errorf("fourth top-up by form: no sentence saying to wait: %v", e)
		}
		if doc.Input("amount") != "50000" || doc.Input("token") != tok {
			t.Errorf("fourth top-up by form: the form lost what was typed (%q, token kept %v)", doc.Input("amount"), doc.Input("token") == tok)
		}
		if n := topuptest.Count(t, db); n != 3 {
			t.Fatalf("%d payments, want 3", n)
		}
		// Another user is not limited by the first one's flood.
		other, _ := f.user(t, "calm@example.com", apitoken.ScopeTopUp)
		if r := other.post(routes.APITopUps, "k1", `{"amount_rials": 500000}`); r.Status != http.StatusCreated {
			t.Fatalf("another user: %d %s", r.Status, r.Body)
		}
	})
}

// RATE_LIMIT_UNKNOWN_RECIPIENTS: transfers refused for an address with no
// account count per user and hour, through the API and the page together.
// Past the allowance every transfer of the user is answered 429 with
// Retry-After before any address is looked up (a known one too, so the
// answer tells nothing), and writes nothing; an hour later the user sends
// again. Another user is not touched.
func TestUnknownRecipientsAreLimitedPerUser(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_UNKNOWN_RECIPIENTS": "2"},
			Server: server.Options{RateLimits: true, Now: clock.Now}})
		prober, proberID := f.user(t, "prober@example.com", apitoken.ScopeTransfer)
		wallet := f.fund(t, proberID, 1_000_000)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		bw := f.fund(t, bobID, 0)
		send := func(key, to string) answer {
			t.Helper()
			return prober.post(routes.APITransfers, key, `{"to_email": "`+to+`", "amount_rials": 20000}`)
		}
		// One transfer made first, through the API and through the page.
		made := send("made", "bob@example.com")
		if made.Status != http.StatusCreated {
			t.Fatalf("a transfer to bob: %d %s", made.Status, made.Body)
		}
		page := f.app.NewClient(t)
		page.SignIn("prober@example.com", "correct horse battery")
		sendForm := apptest.Parse(page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {"bob@example.com"}, "amount": {"2000"}}).Body).Form(routes.Transfer).Hidden()
		first := page.Post(routes.Transfer, sendForm)
		if first.Status != http.StatusSeeOther {
			t.Fatalf("a transfer to bob by the page: %d", first.Status)
		}
		if a := send("u-1", "nobody1@example.com"); a.Code() != "recipient_not_found" {
			t.Fatalf("first unknown: %d %s", a.Status, a.Body)
		}
		// The second unknown address through the page.
		form := page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {"nobody2@example.com"}, "amount": {"2000"}})
		if form.Status != http.StatusUnprocessableEntity {
			t.Fatalf("second unknown, by the page: %d", form.Status)
		}
		for _, to := range []string{"nobody3@example.com", "bob@example.com"} {
			a := send("after-"+to, to)
			if a.Status != http.StatusTooManyRequests || a.Code() != "rate_limited" || a.Header.Get("Retry-After") == "" {
				t.Fatalf("%s past the allowance: %d %s", to, a.Status, a.Body)
			}
		}
		r := page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {"bob@example.com"}, "amount": {"2000"}})
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || apptest.Parse(r.Body).TestID("transfer-confirm") != nil {
			t.Fatalf("the page past the allowance: %d", r.Status)
		}
		if ledgertest.Balance(t, db, wallet) != 960_000 || ledgertest.Balance(t, db, bw) != 40_000 {
			t.Fatal("money moved past the allowance")
		}
		// What was made is still answered: the API's retry replays, the
		// page's Send again shows its receipt.
		if again := send("made", "bob@example.com"); again.Status != http.StatusCreated || again.Body != made.Body {
			t.Fatalf("the retry of a transfer made, past the allowance: %d %s", again.Status, again.Body)
		}
		if r := page.Post(routes.Transfer, sendForm); r.Status != http.StatusSeeOther || r.Location != first.Location {
			t.Fatalf("the page's Send again, past the allowance: %d %s", r.Status, r.Location)
		}
		// Another user is not limited by the prober.
		other, otherID := f.user(t, "other@example.com", apitoken.ScopeTransfer)
		f.fund(t, otherID, 100_000)
		if a := other.post(routes.APITransfers, "o-1", `{"to_email": "bob@example.com", "amount_rials": 20000}`); a.Status != http.StatusCreated {
			t.Fatalf("another user: %d %s", a.Status, a.Body)
		}
		// An hour on, the prober sends again.
		clock.Advance(time.Hour)
		if a := send("later", "bob@example.com"); a.Status != http.StatusCreated {
			t.Fatalf("an hour later: %d %s", a.Status, a.Body)
		}
		if ledgertest.Balance(t, db, bw) != 80_000 {
			t.Fatalf("bob's balance %d", ledgertest.Balance(t, db, bw))
		}
	})
}

// TestTransfersArePacedPerUser: past RATE_LIMIT_TRANSFERS a minute, a
// sender's new transfer is refused, 429 rate_limited with Retry-After
// through the API and a sentence through the page, nothing moved; a
// retry of one made is answered with it; a minute later it goes through.
func TestTransfersArePacedPerUser(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_TRANSFERS": "2"},
			Server: server.Options{RateLimits: true, Now: clock.Now}})
		sender, senderID := f.user(t, "busy@example.com", apitoken.ScopeTransfer)
		f.fund(t, senderID, 1_000_000)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		bw := f.fund(t, bobID, 0)
		send := func(key string) answer {
			t.Helper()
			return sender.post(routes.APITransfers, key, `{"to_email": "bob@example.com", "amount_rials": 20000}`)
		}
		first := send("p-1")
		if first.Status != http.StatusCreated || send("p-2").Status != http.StatusCreated {
			t.Fatalf("the two allowed: %d %s", first.Status, first.Body)
		}
		if a := send("p-3"); a.Status != http.StatusTooManyRequests || a.Code() != "rate_limited" || a.Header.Get("Retry-After") == "" {
			t.Fatalf("the third in a minute: %d %s", a.Status, a.Body)
		}
		page := f.app.NewClient(t)
		page.SignIn("busy@example.com", "correct horse battery")
		form := apptest.Parse(page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {"bob@example.com"}, "amount": {"2000"}}).Body).Form(routes.Transfer).Hidden()
		if r := page.Post(routes.Transfer, form); r.Status != http.StatusTooManyRequests || apptest.Parse(r.Body).TestID("transfer-error") == nil {
			t.Fatalf("the page's transfer past the pace: %d", r.Status)
		}
		if got := ledgertest.Balance(t, db, bw); got != 40_000 {
			t.Fatalf("bob has %d past the pace, want 40000", got)
		}
		if again := send("p-1"); again.Status != http.StatusCreated || again.Body != first.Body {
			t.Fatalf("the retry of one made: %d %s", again.Status, again.Body)
		}
		clock.Advance(time.Minute)
		if a := send("p-3"); a.Status != http.StatusCreated {
			t.Fatalf("a minute later: %d %s", a.Status, a.Body)
		}
		if got := ledgertest.Balance(t, db, bw); got != 60_000 {
			t.Errorf("bob has %d, want 60000", got)
		}
	})
}

// Fifty requests with one Idempotency-Key at once, when the sender has
// one transfer left in the minute (RATE_LIMIT_TRANSFERS): one transfer,
// every answer its 201 byte for byte; none is 429 (whose "this request
// made no transfer" would be false for a request whose key made one, and
// a client believing it would pay again under a new key). The place is
// taken after the key is claimed, so the losers wait on the key and
// replay it. A new key is still refused, and its 429 asks for the same
// key, never claiming that nothing was sent.
func TestTransferPaceNeverRefusesAKeysRetry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_TRANSFERS": "2"},
			Server: server.Options{RateLimits: true, Now: clock.Now}})
		sender, senderID := f.user(t, "busy@example.com", apitoken.ScopeTransfer)
		sender.fail = t.Errorf
		sw := f.fund(t, senderID, 1_000_000)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		bw := f.fund(t, bobID, 0)
		if a := sender.post(routes.APITransfers, "before", `{"to_email": "bob@example.com", "amount_rials": 20000}`); a.Status != http.StatusCreated {
			t.Fatalf("the first of the minute: %d %s", a.Status, a.Body)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		bodies := map[string]int{}
		for range 50 {
			wg.Go(func() {
				a := sender.post(routes.APITransfers, "last-place", `{"to_email": "bob@example.com", "amount_rials": 70000}`)
				mu.Lock()
				defer mu.Unlock()
				if a.Status != http.StatusCreated {
					t.Errorf("a request with the key of the last place: %d %s", a.Status, a.Body)
					return
				}
				bodies[a.Body]++
			})
		}
		wg.Wait()
		if len(bodies) != 1 {
			t.Fatalf("the answers name %d transfers: %v", len(bodies), bodies)
		}
		a := sender.post(routes.APITransfers, "new-key", `{"to_email": "bob@example.com", "amount_rials": 20000}`)
		if a.Status != http.StatusTooManyRequests || a.Code() != "rate_limited" || a.Header.Get("Retry-After") == "" {
			t.Fatalf("a new key past the pace: %d %s", a.Status, a.Body)
		}
		if strings.Contains(a.Body, "nothing was sent") || !strings.Contains(a.Body, "this request made no transfer") || !strings.Contains(a.Body, "same Idempotency-Key") {
			t.Fatalf("the 429's text: %s", a.Body)
		}
		if ledgertest.Balance(t, db, sw) != 910_000 || ledgertest.Balance(t, db, bw) != 90_000 {
			t.Fatalf("balances %d %d, want 910000 90000", ledgertest.Balance(t, db, sw), ledgertest.Balance(t, db, bw))
		}
	})
}

// Requests at once to addresses with no account cannot all pass the
// allowance: each reserves a place before any address is looked up, at
// most 64 open per user, so a burst of a hundred learns at most 64 beyond
// the allowance (not a hundred), and the allowance is spent after it.
// Transfers at once to someone who has an account are never held up by
// it.
func TestUnknownRecipientsAtOnceCannotAllPass(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		// The pace of transfers made is off: a burst to bob is this test's
		// point (TestTransfersArePacedPerUser has the pace).
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_UNKNOWN_RECIPIENTS": "2", "RATE_LIMIT_TRANSFERS": "0"}, Server: server.Options{RateLimits: true}})
		prober, proberID := f.user(t, "burst@example.com", apitoken.ScopeTransfer)
		prober.fail = t.Errorf
		f.fund(t, proberID, 10_000_000)
		_, bobID := f.user(t, "bob@example.com", apitoken.ScopeRead)
		bw := f.fund(t, bobID, 0)
		burst := func(n int, to func(i int) string) (created, notFound, limited int32) {
			var wg sync.WaitGroup
			var c, nf, l atomic.Int32
			for i := range n {
				wg.Go(func() {
					a := prober.post(routes.APITransfers, to(i)+"-"+strconv.Itoa(i), `{"to_email": "`+to(i)+`", "amount_rials": 20000}`)
					switch {
					case a.Status == http.StatusCreated:
						c.Add(1)
					case a.Code() == "recipient_not_found":
						nf.Add(1)
					case a.Code() == "rate_limited":
						l.Add(1)
					default:
						t.Errorf("request %d: %d %s", i, a.Status, a.Body)
					}
				})
			}
			wg.Wait()
			return c.Load(), nf.Load(), l.Load()
		}
		// Thirty at once to bob: none held up.
		if c, nf, l := burst(30, func(int) string { return "bob@example.com" }); c != 30 || nf != 0 || l != 0 {
			t.Fatalf("thirty to bob at once: %d sent, %d not found, %d limited", c, nf, l)
		}
		if ledgertest.Balance(t, db, bw) != 600_000 {
			t.Fatalf("bob's balance %d", ledgertest.Balance(t, db, bw))
		}
		// A hundred at once to addresses with no account.
		_, nf, l := burst(100, func(i int) string { return "nobody" + strconv.Itoa(i) + "@example.com" })
		if nf < 2 || nf > 2+64 || nf+l != 100 {
			t.Fatalf("a burst of 100 unknown: %d not found, %d limited; want at most 66 told", nf, l)
		}
		if a := prober.post(routes.APITransfers, "after", `{"to_email": "bob@example.com", "amount_rials": 20000}`); a.Code() != "rate_limited" {
			t.Fatalf("after the burst: %d %s, want the allowance spent", a.Status, a.Body)
		}
	})
}

// RATE_LIMIT_RECIPIENT_PREVIEWS: the transfer page's confirmations that
// name a recipient count per user and hour. Past the allowance the form
// answers 429 with Retry-After, naming no one; a preview that named no
// one (an unknown address) did not count; a form whose transfer was made
// still answers with its receipt; an hour later the user looks again.
func TestRecipientPreviewsAreLimitedPerUser(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := withdrawaltest.ClockAt(time.Now())
		f := start(t, db, apptest.Options{Env: map[string]string{"RATE_LIMIT_RECIPIENT_PREVIEWS": "2"},
			Server: server.Options{RateLimits: true, Now: clock.Now}})
		_, proberID := f.user(t, "looker@example.com", apitoken.ScopeRead)
		f.fund(t, proberID, 1_000_000)
		for _, e := range []string{"ann@example.com", "ben@example.com", "cy@example.com"} {
			_, id := f.user(t, e, apitoken.ScopeRead)
			f.fund(t, id, 0)
		}
		page := f.app.NewClient(t)
		page.SignIn("looker@example.com", "correct horse battery")
		preview := func(to string) apptest.Response {
			t.Helper()
			return page.Submit(routes.Transfer, routes.Transfer, url.Values{"to": {to}, "amount": {"2000"}})
		}
		first := preview("ann@example.com")
		if first.Status != http.StatusOK || apptest.Parse(first.Body).TestID("transfer-confirm") == nil {
			t.Fatalf("first preview: %d", first.Status)
		}
		sendForm := apptest.Parse(first.Body).Form(routes.Transfer).Hidden()
		made := page.Post(routes.Transfer, sendForm)
		if made.Status != http.StatusSeeOther {
			t.Fatalf("send to ann: %d", made.Status)
		}
		if r := preview("nobody@example.com"); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("an unknown address: %d", r.Status)
		}
		if r := preview("ben@example.com"); r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("transfer-confirm") == nil {
			t.Fatalf("second preview: %d", r.Status)
		}
		r := preview("cy@example.com")
		if doc := apptest.Parse(r.Body); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" ||
			doc.TestID("transfer-confirm") != nil || doc.TestID("confirm-recipient-name") != nil {
			t.Fatalf("past the allowance: %d", r.Status)
		}
		if again := page.Post(routes.Transfer, sendForm); again.Status != http.StatusSeeOther || again.Location != made.Location {
			t.Fatalf("the made transfer's Send again, past the allowance: %d %s", again.Status, again.Location)
		}
		clock.Advance(time.Hour)
		if r := preview("cy@example.com"); r.Status != http.StatusOK || apptest.Parse(r.Body).TestID("transfer-confirm") == nil {
			t.Fatalf("an hour later: %d", r.Status)
		}
	})
}
