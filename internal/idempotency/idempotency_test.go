package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/testclock"
)

func TestCheckKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want error
	}{
		{"", idempotency.ErrKeyMissing},
		{"a", nil},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{strings.Repeat("k", 255), nil},
		{strings.Repeat("k", 256), idempotency.ErrKeyInvalid},
		{"has space", idempotency.ErrKeyInvalid},
		{"tab\tkey", idempotency.ErrKeyInvalid},
		{"کلید", idempotency.ErrKeyInvalid},
		{"del\x7f", idempotency.ErrKeyInvalid},
		{`"quoted"`, nil},
	} {
		if err := idempotency.CheckKey(tc.key); !errors.Is(err, tc.want) {
			t.Errorf("CheckKey(%q) = %v, want %v", tc.key, err, tc.want)
		}
	}
}

func TestFingerprint(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	fp := func(method, path string, amount *int64, desc *string) string {
		return idempotency.Fingerprint(method, path, idempotency.Int("amount_rials", amount), idempotency.String("description", desc))
	}
	a := fp("POST", routes.APITopUps, i(500000), str("x"))
	if again := fp("POST", routes.APITopUps, i(500000), str("x")); again != a {
		t.Fatalf("the same request has two fingerprints")
	}
	seen := map[string]string{a: "500000 x"}
	for name, other := range map[string]string{
		"another amount":             fp("POST", routes.APITopUps, i(500010), str("x")),
		"no description":             fp("POST", routes.APITopUps, i(500000), nil),
		"an empty description":       fp("POST", routes.APITopUps, i(500000), str("")),
		"no amount":                  fp("POST", routes.APITopUps, nil, str("x")),
		"another path":               fp("POST", routes.APIv1+"/other", i(500000), str("x")),
		"another method":             fp("PUT", routes.APITopUps, i(500000), str("x")),
		"amount digits in the text":  fp("POST", routes.APITopUps, i(50000), str("0x")),
		"a field name in the value":  idempotency.Fingerprint("POST", routes.APITopUps, idempotency.String("a", str("b")), idempotency.String("c", str(""))),
		"the name moved to the next": idempotency.Fingerprint("POST", routes.APITopUps, idempotency.String("a", str("")), idempotency.String("bc", str(""))),
	} {
		if prev, dup := seen[other]; dup {
			t.Errorf("%s has the fingerprint of %s", name, prev)
		}
		seen[other] = name
	}
}

// FuzzFingerprint: two requests have the same fingerprint exactly when
// they are the same request (method, path, each field present or not and
// its value), whatever bytes the values hold.
func FuzzFingerprint(f *testing.F) {
	f.Add("POST", routes.APITopUps, true, int64(500000), true, "x", "POST", routes.APITopUps, true, int64(500000), false, "")
	f.Add("POST", "/a", true, int64(1), true, "", "POST", "/a", true, int64(1), false, "")
	f.Add("POST", "/a", false, int64(0), true, "1", "POST", "/a1", false, int64(0), true, "")
	f.Fuzz(func(t *testing.T, m1, p1 string, hasA1 bool, a1 int64, hasD1 bool, d1 string,
		m2, p2 string, hasA2 bool, a2 int64, hasD2 bool, d2 string) {
		req := func(m, p string, hasA bool, a int64, hasD bool, d string) (string, string) {
			var amount *int64
			var desc *string
			key := m + "\x00" + p + "\x00"
			if hasA {
				amount = &a
				key += "a" + strconv.FormatInt(a, 10)
			}
			key += "\x00"
			if hasD {
				desc = &d
				key += "d" + d
			}
			return idempotency.Fingerprint(m, p, idempotency.Int("amount_rials", amount), idempotency.String("description", desc)), key
		}
		fp1, k1 := req(m1, p1, hasA1, a1, hasD1, d1)
		fp2, k2 := req(m2, p2, hasA2, a2, hasD2, d2)
		same := m1 == m2 && p1 == p2 && hasA1 == hasA2 && (!hasA1 || a1 == a2) && hasD1 == hasD2 && (!hasD1 || d1 == d2)
		if (fp1 == fp2) != same {
			t.Fatalf("requests %q and %q: fingerprints equal=%v, requests equal=%v", k1, k2, fp1 == fp2, same)
		}
	})
}

func TestKeyLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		users := auth.NewService(db, auth.Options{BcryptCost: 4})
		alice, _ := users.SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		bob, _ := users.SignUp(ctx, "bob@example.com", "correct horse battery", "", "en")
		s := idempotency.NewStore(db, idempotency.Options{TTL: 24 * time.Hour, Lease: 30 * time.Second, Secret: []byte("s3cret"), Now: clock})
		req := idempotency.Request{UserID: alice.ID, Key: "key-1", Method: "POST", Path: routes.APITopUps, Fingerprint: "fp-a"}

		out, rec, err := s.Begin(ctx, req)
		if err != nil || out != idempotency.Acquired {
			t.Fatalf("first: %v %v", out, err)
		}
		if tok := s.FormToken(rec); !formtoken.Valid(tok) || tok != s.FormToken(rec) {
			t.Fatalf("form token %q", tok)
		}
		// While it runs: in use; another body: mismatch; bob's same key: his own.
		if out, _, _ := s.Begin(ctx, req); out != idempotency.InUse {
			t.Fatalf("second while in flight: %v", out)
		}
		other := req
		other.Fingerprint = "fp-b"
		if out, _, _ := s.Begin(ctx, other); out != idempotency.Mismatch {
			t.Fatalf("other body: %v", out)
		}
		bobs := req
		bobs.UserID = bob.ID
		if out, brec, _ := s.Begin(ctx, bobs); out != idempotency.Acquired || s.FormToken(brec) == s.FormToken(rec) {
			t.Fatalf("bob's key: %v", out)
		}
		// Finished: replayed byte for byte.
		body := []byte(`{"id":"x","status":"awaiting_payment"}`)
		if _, err := s.Finish(ctx, rec, 201, "application/json", body, nil); err != nil {
			t.Fatal(err)
		}
		out, got, _ := s.Begin(ctx, req)
		if out != idempotency.Replay || *got.ResponseStatus != 201 || *got.ResponseBody != string(body) || got.ResponseType != "application/json" {
			t.Fatalf("replay: %v %+v", out, got)
		}
		if _, err := s.Finish(ctx, rec, 500, "application/json", []byte("{}"), nil); err == nil {
			t.Fatalf("a finished key was finished again")
		}
		if out, _, _ := s.Begin(ctx, other); out != idempotency.Mismatch {
			t.Fatalf("other body after finish: %v", out)
		}

		// A request that died: in use until its lease ends, then taken over
		// by one retry (the same record, so the same derived token).
		req2 := req
		req2.Key = "key-2"
		_, died, _ := s.Begin(ctx, req2)
		advance(29 * time.Second)
		if out, _, _ := s.Begin(ctx, req2); out != idempotency.InUse {
			t.Fatalf("inside the lease: %v", out)
		}
		advance(2 * time.Second)
		var wg sync.WaitGroup
		type begun struct {
			out idempotency.Outcome
			rec idempotency.Record
		}
		outs := make(chan begun, 10)
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, r, err := s.Begin(ctx, req2)
				if err != nil {
					t.Error(err)
				}
				if out == idempotency.Acquired && r.ID != died.ID {
					t.Errorf("takeover made a new record")
				}
				outs <- begun{out, r}
			}()
		}
		wg.Wait()
		close(outs)
		acquired := 0
		var taker idempotency.Record
		for b := range outs {
			if b.out == idempotency.Acquired {
				acquired++
				taker = b.rec
			} else if b.out != idempotency.InUse {
				t.Errorf("concurrent takeover: %v", b.out)
			}
		}
		if acquired != 1 {
			t.Fatalf("%d takeovers, want 1", acquired)
		}
		// The request that died comes back late: its lease is over, so
		// nothing it does touches the taker's hold (its Discard would
		// otherwise delete the record, and the next retry make the
		// effect again under a new token).
		for name, late := range map[string]func() error{
			"discard": func() error { return s.Discard(ctx, died) },
			"release": func() error { return s.Release(ctx, died) },
			"finish": func() error {
				_, err := s.Finish(ctx, died, 201, "application/json", []byte(`{"late":true}`), nil)
				return err
			},
		} {
			_ = late()
			if out, r, _ := s.Begin(ctx, req2); out != idempotency.InUse || r.ID != died.ID {
				t.Fatalf("after the late request's %s: %v (record %d, want %d held)", name, out, r.ID, died.ID)
			}
		}
		// Released by its holder: the next retry takes it at once.
		if err := s.Release(ctx, taker); err != nil {
			t.Fatal(err)
		}
		if out, r, _ := s.Begin(ctx, req2); out != idempotency.Acquired || r.ID != died.ID {
			t.Fatalf("after release: %v", out)
		}
		// Discarded: a new request (another body even) starts afresh.
		req3 := req
		req3.Key = "key-3"
		_, r3, _ := s.Begin(ctx, req3)
		if err := s.Discard(ctx, r3); err != nil {
			t.Fatal(err)
		}
		req3.Fingerprint = "fp-c"
		if out, r, _ := s.Begin(ctx, req3); out != idempotency.Acquired || r.ID == r3.ID {
			t.Fatalf("after discard: %v", out)
		}

		// TTL: nothing is deleted before it; after it, the answered key
		// goes and the key starts a new request. The unanswered ones
		// (key-2, bob's, key-3's second) stay UnfinishedTTL: their clients
		// had no answer and may retry.
		if n, err := s.Cleanup(ctx); err != nil || n != 0 {
			t.Fatalf("cleanup before the TTL: %d %v", n, err)
		}
		advance(24 * time.Hour)
		n, err := s.Cleanup(ctx)
		if err != nil || n != 1 {
			t.Fatalf("cleanup after the TTL: %d %v", n, err)
		}
		if out, r, _ := s.Begin(ctx, req2); out != idempotency.Acquired || r.ID != died.ID {
			t.Fatalf("an unanswered key a day on: %v, record %d", out, r.ID)
		}
		advance(idempotency.UnfinishedTTL)
		if n, err := s.Cleanup(ctx); err != nil || n != 3 {
			t.Fatalf("cleanup after UnfinishedTTL: %d %v", n, err)
		}
		out, again, _ := s.Begin(ctx, req)
		if out != idempotency.Acquired || again.ID == rec.ID || s.FormToken(again) == s.FormToken(rec) {
			t.Fatalf("key after cleanup: %v", out)
		}
	})
}

// Claim stores a key already finished in the caller's transaction: it
// commits with it (then Lookup and Begin replay it), rolls back with it
// (no key), and a second claim of the key finds it taken.
func TestClaimInTransaction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		alice, _ := auth.NewService(db, auth.Options{BcryptCost: 4}).SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		s := idempotency.NewStore(db, idempotency.Options{Secret: []byte("s3cret"), Now: func() time.Time { return now }})
		req := idempotency.Request{UserID: alice.ID, Key: "claim-1", Method: "POST", Path: routes.APITransfers, Fingerprint: "fp-a"}
		ans := idempotency.Answer{Status: 201, ContentType: "application/json", Body: []byte(`{"id":"tr_x"}`)}
		rolledBack := errors.New("rolled back")

		if _, _, found, err := s.Lookup(ctx, req); found || err != nil {
			t.Fatalf("lookup of a new key: %v %v", found, err)
		}
		err := db.Tx(ctx, func(tx *gorm.DB) error {
			if _, ok, err := s.Claim(tx, req, now, ans); !ok || err != nil {
				t.Fatalf("claim: %v %v", ok, err)
			}
			return rolledBack
		})
		if !errors.Is(err, rolledBack) {
			t.Fatal(err)
		}
		if _, _, found, err := s.Lookup(ctx, req); found || err != nil {
			t.Fatalf("a rolled back claim left its key: %v %v", found, err)
		}
		var rec idempotency.Record
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			var ok bool
			var err error
			rec, ok, err = s.Claim(tx, req, now, ans)
			if !ok || err != nil {
				t.Fatalf("claim: %v %v", ok, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !formtoken.Valid(s.FormToken(rec)) {
			t.Fatalf("form token of a claimed key %q", s.FormToken(rec))
		}
		if err := db.Tx(ctx, func(tx *gorm.DB) error {
			if _, ok, err := s.Claim(tx, req, now, ans); ok || err != nil {
				t.Fatalf("a second claim: %v %v", ok, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		out, got, found, err := s.Lookup(ctx, req)
		if err != nil || !found || out != idempotency.Replay || *got.ResponseBody != string(ans.Body) || *got.ResponseStatus != 201 || got.ID != rec.ID {
			t.Fatalf("lookup: %v %+v %v %v", out, got, found, err)
		}
		if out, got, err := s.Begin(ctx, req); err != nil || out != idempotency.Replay || *got.ResponseBody != string(ans.Body) {
			t.Fatalf("begin on a claimed key: %v %v", out, err)
		}
		other := req
		other.Fingerprint = "fp-b"
		if out, _, _, _ := s.Lookup(ctx, other); out != idempotency.Mismatch {
			t.Fatalf("lookup with another body: %v", out)
		}
	})
}

// A key seen before is answered by a read: a finished request's replays,
// a mismatch and a key in use write nothing (no insert the unique index
// refuses), and a new key still takes one insert (and the update that
// keeps its token, derived from the id the insert gave).
func TestBeginReadsBeforeWriting(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		users := auth.NewService(db, auth.Options{BcryptCost: 4})
		alice, err := users.SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		if err != nil {
			t.Fatal(err)
		}
		var writes atomic.Int64
		count := func(*gorm.DB) { writes.Add(1) }
		for _, reg := range []func() error{
			func() error { return db.Gorm.Callback().Create().Before("gorm:create").Register("test:writes", count) },
			func() error { return db.Gorm.Callback().Update().Before("gorm:update").Register("test:writes", count) },
		} {
			if err := reg(); err != nil {
				t.Fatal(err)
			}
		}
		s := idempotency.NewStore(db, idempotency.Options{TTL: time.Hour, Lease: time.Minute, Secret: []byte("s3cret")})
		req := idempotency.Request{UserID: alice.ID, Key: "key-r", Method: "POST", Path: routes.APITopUps, Fingerprint: "fp-a"}
		out, rec, err := s.Begin(ctx, req)
		if err != nil || out != idempotency.Acquired || writes.Load() != 2 {
			t.Fatalf("new key: %v %v, %d writes (want 2)", out, err, writes.Load())
		}
		if out, _, _ := s.Begin(ctx, req); out != idempotency.InUse {
			t.Fatalf("in flight: %v", out)
		}
		if _, err := s.Finish(ctx, rec, 201, "application/json", []byte(`{"id":"x"}`), nil); err != nil {
			t.Fatal(err)
		}
		writes.Store(0)
		other := req
		other.Fingerprint = "fp-b"
		for range 20 {
			if out, got, err := s.Begin(ctx, req); err != nil || out != idempotency.Replay || *got.ResponseBody != `{"id":"x"}` {
				t.Fatalf("replay: %v %v", out, err)
			}
			if out, _, _ := s.Begin(ctx, other); out != idempotency.Mismatch {
				t.Fatalf("other body: %v", out)
			}
		}
		if n := writes.Load(); n != 0 {
			t.Fatalf("20 replays and 20 mismatches wrote %d times, want 0", n)
		}
		var rows int64
		if err := db.Gorm.Raw(`SELECT COUNT(*) FROM idempotency_keys WHERE user_id = ?`, alice.ID).Row().Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("%d key rows (%v), want 1", rows, err)
		}
	})
}

// A retry that takes a key over after a crash finds the first request's
// effect by its token on an instance with another SESSION_SECRET (rotated,
// or not shared): the token is the record's own. A refusal of that retry
// only releases the key: the first request may have made its effect.
func TestTakeoverKeepsTheTokenWhateverTheSecret(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testclock.New(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
		alice, _ := auth.NewService(db, auth.Options{BcryptCost: 4}).SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		first := idempotency.NewStore(db, idempotency.Options{Lease: 30 * time.Second, Secret: []byte("old-secret"), Now: clock.Now})
		second := idempotency.NewStore(db, idempotency.Options{Lease: 30 * time.Second, Secret: []byte("new-secret"), Now: clock.Now})
		req := idempotency.Request{UserID: alice.ID, Key: "crash-1", Method: "POST", Path: routes.APIWithdrawals, Fingerprint: "fp"}
		out, died, err := first.Begin(ctx, req)
		if err != nil || out != idempotency.Acquired {
			t.Fatalf("first: %v %v", out, err)
		}
		tok := first.FormToken(died)
		if !formtoken.Valid(tok) {
			t.Fatalf("token %q", tok)
		}
		// During a rolling upgrade an instance without the column derives
		// it from the record with its secret: the same token.
		if old := first.FormToken(idempotency.Record{ID: died.ID, UserID: died.UserID}); old != tok {
			t.Fatalf("the token an instance without the column derives: %q, kept %q", old, tok)
		}
		clock.Add(31 * time.Second) // its process died: the lease lapses
		out, taken, err := second.Begin(ctx, req)
		if err != nil || out != idempotency.Acquired || taken.ID != died.ID || second.FormToken(taken) != tok {
			t.Fatalf("the takeover under another secret: %v %v, token %q, want %q", out, err, second.FormToken(taken), tok)
		}
		// The retry is refused before any effect of its own (withdrawals
		// switched off meanwhile): the key stays, with its token.
		if err := second.Discard(ctx, taken); err != nil {
			t.Fatal(err)
		}
		out, again, err := second.Begin(ctx, req)
		if err != nil || out != idempotency.Acquired || again.ID != died.ID || second.FormToken(again) != tok {
			t.Fatalf("after a refused takeover: %v %v, record %d token %q", out, err, again.ID, second.FormToken(again))
		}
	})
}

// Cleanup deletes a backlog bigger than one of its batches, all of it,
// and nothing that is still within its time.
func TestCleanupInBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
		alice, _ := auth.NewService(db, auth.Options{BcryptCost: 4}).SignUp(ctx, "alice@example.com", "correct horse battery", "", "en")
		status, body := 201, "{}"
		var recs []idempotency.Record
		for i := range 2100 {
			recs = append(recs, idempotency.Record{UserID: alice.ID, IdempotencyKey: "old-" + strconv.Itoa(i), RequestMethod: "POST",
				RequestPath: routes.APITopUps, Fingerprint: "fp", ResponseStatus: &status, ResponseBody: &body, CreatedAt: now.Add(-48 * time.Hour)})
		}
		recs = append(recs, idempotency.Record{UserID: alice.ID, IdempotencyKey: "fresh", RequestMethod: "POST",
			RequestPath: routes.APITopUps, Fingerprint: "fp", ResponseStatus: &status, ResponseBody: &body, CreatedAt: now})
		if err := db.Gorm.CreateInBatches(&recs, 300).Error; err != nil {
			t.Fatal(err)
		}
		counted, counter := storetest.Counting(t, db)
		s := idempotency.NewStore(counted, idempotency.Options{Now: func() time.Time { return now }})
		idempotency.SetCleanupBatch(s, 500)
		counter.Reset()
		if n, err := s.Cleanup(ctx); err != nil || n != 2100 {
			t.Fatalf("cleanup: %d, %v; want 2100", n, err)
		}
		if stmts, _ := counter.Take(); len(stmts) != 5 { // 500 × 4 and the last 100
			t.Fatalf("cleanup ran %d statements, want 5 deletes of at most 500: %v", len(stmts), stmts)
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM idempotency_keys`); n != 1 {
			t.Fatalf("%d keys left, want the fresh one", n)
		}
	})
}
