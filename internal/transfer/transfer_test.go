package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/formtoken"
	"github.com/kifpool/kifpool/internal/idempotency"
	"github.com/kifpool/kifpool/internal/integrity"
	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/ledger/ledgertest"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
	"github.com/kifpool/kifpool/internal/wallet"
	"github.com/kifpool/kifpool/internal/webhook"
)

type fixture struct {
	t   *testing.T
	db  *store.DB
	l   *ledger.Ledger
	ws  *wallet.Service
	svc *transfer.Service
	gw  int64 // a gateway clearing account, to fund wallets from
	now time.Time
}

func newFixture(t *testing.T, db *store.DB, cfg transfer.Config) *fixture {
	t.Helper()
	l := ledger.New(db)
	gw, err := l.EnsureAccount(context.Background(), ledger.AccountGateway, ledger.GatewayCode("test"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, l: l, ws: wallet.NewService(db, l), gw: gw, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	f.svc = transfer.New(transfer.NewStore(db, l), cfg, func() time.Time { return f.now }, nil)
	return f
}

type person struct {
	ID    int64
	Email string
	W     wallet.Wallet
}

// user signs up a user with balance rials in their wallet.
func (f *fixture) user(addr string, balance int64) person {
	f.t.Helper()
	ctx := context.Background()
	u, err := auth.NewService(f.db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, addr, "correct horse", "", "fa")
	if err != nil {
		f.t.Fatalf("sign up %s: %v", addr, err)
	}
	w, err := f.ws.ForUser(ctx, u.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	if balance > 0 {
		if _, err := f.l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "fund:" + addr,
			Postings: ledger.Transfer(f.gw, w.AccountID, balance), At: f.now}); err != nil {
			f.t.Fatal(err)
		}
	}
	return person{ID: u.ID, Email: u.Email, W: w}
}

func (f *fixture) balance(p person) int64 {
	f.t.Helper()
	return ledgertest.Balance(f.t, f.db, p.W.ID)
}

// checkInvariants runs the ledger's integrity rules.
func (f *fixture) checkInvariants() {
	f.t.Helper()
	rep, err := integrity.Check(context.Background(), f.db, integrity.Options{NoCallLog: true})
	if err != nil {
		f.t.Fatal(err)
	}
	if !rep.OK() {
		f.t.Fatalf("invariants broken: %v", rep.Violations())
	}
}

func req(from person, to string, rials int64) transfer.Request {
	return transfer.Request{SenderUserID: from.ID, FormToken: formtoken.New(), ToEmail: to, AmountRials: rials}
}

var cfg = transfer.Config{MinRials: 10_000}

func TestSendMovesMoneyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		a, b := f.user("alice@example.com", 500_000), f.user("bob@example.com", 0)
		r := req(a, " Bob@Example.com ", 120_000)
		r.Note = "ناهار"
		res, err := f.svc.Send(ctx, r)
		if err != nil || res.Replayed {
			t.Fatalf("send: %+v %v", res, err)
		}
		tr := res.Transfer
		if tr.RecipientUserID != b.ID || tr.AmountRials != 120_000 || tr.Note != "ناهار" || tr.LedgerTransactionID == 0 {
			t.Fatalf("transfer %+v", tr)
		}
		if f.balance(a) != 380_000 || f.balance(b) != 120_000 {
			t.Fatalf("balances %d %d", f.balance(a), f.balance(b))
		}
		// The same form again (a double click, Back then submit): the
		// first transfer, nothing new.
		again, err := f.svc.Send(ctx, r)
		if err != nil || !again.Replayed || again.Transfer.PublicID != tr.PublicID {
			t.Fatalf("replay: %+v %v", again, err)
		}
		// The same token with another amount is not a replay.
		other := r
		other.AmountRials = 130_000
		if _, err := f.svc.Send(ctx, other); !errors.Is(err, transfer.ErrTokenReused) {
			t.Fatalf("token reused: %v", err)
		}
		if f.balance(a) != 380_000 || f.balance(b) != 120_000 {
			t.Fatalf("balances after replays %d %d", f.balance(a), f.balance(b))
		}
		// The ledger transaction is the transfer's: kind transfer,
		// reference its public id, note its note.
		lt, err := f.l.ByReference(ctx, ledger.KindTransfer, tr.PublicID)
		if err != nil || lt.ID != tr.LedgerTransactionID || lt.Note != "ناهار" {
			t.Fatalf("ledger transaction %+v %v", lt, err)
		}
		// Both people read it; a third does not.
		for _, p := range []person{a, b} {
			got, err := f.svc.Get(ctx, p.ID, tr.PublicID)
			if err != nil || got.SenderEmail != "alice@example.com" || got.RecipientEmail != "bob@example.com" || got.LedgerTransactionID != lt.ID {
				t.Fatalf("get as %s: %+v %v", p.Email, got, err)
			}
		}
		c := f.user("carol@example.com", 0)
		if _, err := f.svc.Get(ctx, c.ID, tr.PublicID); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("a third person reads it: %v", err)
		}
		for _, p := range []person{a, b} {
			list, next, err := f.svc.List(ctx, p.ID, 0, 10)
			if err != nil || len(list) != 1 || next != 0 || list[0].PublicID != tr.PublicID {
				t.Fatalf("list of %s: %+v %v", p.Email, list, err)
			}
			// The wallet's history names both people by its references;
			// an unknown reference is left out.
			byRef, err := f.svc.ByReferences(ctx, p.ID, []string{tr.PublicID, "tr_unknown"})
			if got := byRef[tr.PublicID]; err != nil || len(byRef) != 1 || got.SenderEmail != "alice@example.com" ||
				got.RecipientEmail != "bob@example.com" || got.AmountRials != 120_000 || got.Note != "ناهار" {
				t.Fatalf("by references as %s: %+v %v", p.Email, byRef, err)
			}
		}
		if byRef, err := f.svc.ByReferences(ctx, c.ID, []string{tr.PublicID}); err != nil || len(byRef) != 0 {
			t.Fatalf("a third person reads it by reference: %+v %v", byRef, err)
		}
		f.checkInvariants()
	})
}

func TestRefusalsWriteNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, transfer.Config{MinRials: 10_000, DailyMaxRials: 300_000})
		ctx := context.Background()
		a, _ := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		poor := f.user("poor@example.com", 50_000)
		// An account whose address its owner has not confirmed: maybe a
		// stranger's who signed up with it.
		squatter := authtest.Register(t, db, "carol@example.com")
		squatterP := person{ID: squatter.ID, Email: squatter.Email}
		long := make([]rune, 141)
		for i := range long {
			long[i] = 'x'
		}
		for _, tc := range []struct {
			name string
			r    transfer.Request
			want error
		}{
			{"short balance", req(poor, "bob@example.com", 60_000), transfer.ErrInsufficientFunds},
			{"unknown recipient", req(a, "nobody@example.com", 20_000), transfer.ErrRecipientNotFound},
			{"not an address", req(a, "bob", 20_000), transfer.ErrRecipientNotFound},
			{"self", req(a, "ALICE@example.com", 20_000), transfer.ErrToSelf},
			{"unconfirmed recipient", req(a, "carol@example.com", 20_000), transfer.ErrRecipientNotFound},
			{"unconfirmed sender to self", req(squatterP, "Carol@example.com", 20_000), transfer.ErrSenderUnconfirmed},
			{"below the minimum", req(a, "bob@example.com", 9_990), money.ErrTooSmall},
			{"not whole tomans", req(a, "bob@example.com", 20_005), money.ErrNotWholeTomans},
			{"zero", req(a, "bob@example.com", 0), money.ErrNotPositive},
			{"negative", req(a, "bob@example.com", -20_000), money.ErrNotPositive},
			{"above the maximum", req(a, "bob@example.com", transfer.MaxRials+10), money.ErrTooLarge},
			{"above the daily limit at once", req(a, "bob@example.com", 300_010), transfer.ErrDailyLimit},
			{"note too long", transfer.Request{SenderUserID: a.ID, FormToken: formtoken.New(), ToEmail: "bob@example.com", AmountRials: 20_000, Note: string(long)}, transfer.ErrNoteTooLong},
			{"note with a bidi override", transfer.Request{SenderUserID: a.ID, FormToken: formtoken.New(), ToEmail: "bob@example.com", AmountRials: 20_000, Note: "hi\u202e"}, transfer.ErrNoteInvalid},
			{"note of two lines", transfer.Request{SenderUserID: a.ID, FormToken: formtoken.New(), ToEmail: "bob@example.com", AmountRials: 20_000, Note: "thanks\n\nReceipt:\nhttps://evil.example"}, transfer.ErrNoteInvalid},
			{"note with a line separator", transfer.Request{SenderUserID: a.ID, FormToken: formtoken.New(), ToEmail: "bob@example.com", AmountRials: 20_000, Note: "thanks\u2028Receipt"}, transfer.ErrNoteInvalid},
			{"bad form token", transfer.Request{SenderUserID: a.ID, FormToken: "x", ToEmail: "bob@example.com", AmountRials: 20_000}, transfer.ErrBadFormToken},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := storetest.Rows(t, db, "transfers", "ledger_transactions", "ledger_postings", "transfer_daily_totals")
				if _, err := f.svc.Send(ctx, tc.r); !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				if after := storetest.Rows(t, db, "transfers", "ledger_transactions", "ledger_postings", "transfer_daily_totals"); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("a refusal wrote: %v → %v", before, after)
				}
			})
		}
		if _, err := f.svc.Quote(ctx, req(a, "carol@example.com", 20_000)); !errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatalf("quote to an unconfirmed address: %v", err)
		}
		if _, err := f.svc.Quote(ctx, req(squatterP, "carol@example.com", 20_000)); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("quote from an unconfirmed address to itself: %v", err)
		}
		// Once its owner confirms it, the address receives, and sending to
		// it is refused as to oneself (with the money to send: a short
		// wallet is refused as short first, whatever the address).
		authtest.ConfirmEmail(t, db, "carol@example.com")
		if _, err := f.svc.Quote(ctx, req(squatterP, "carol@example.com", 20_000)); !errors.Is(err, transfer.ErrInsufficientFunds) {
			t.Fatalf("quote to one's own address, no money: %v", err)
		}
		if w, err := f.ws.ForUser(ctx, squatter.ID); err != nil {
			t.Fatal(err)
		} else if _, err := f.l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "fund:carol", Postings: ledger.Transfer(f.gw, w.AccountID, 20_000), At: f.now}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Quote(ctx, req(a, "carol@example.com", 20_000)); err != nil {
			t.Fatalf("quote to a confirmed address: %v", err)
		}
		if _, err := f.svc.Quote(ctx, req(squatterP, "carol@example.com", 20_000)); !errors.Is(err, transfer.ErrToSelf) {
			t.Fatalf("quote to one's own address: %v", err)
		}
		// The daily limit counts the day's transfers: 200,000 then 100,000
		// pass, 10 more rials do not; the next Tehran day they do.
		for _, rials := range []int64{200_000, 100_000} {
			if _, err := f.svc.Send(ctx, req(a, "bob@example.com", rials)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.svc.Quote(ctx, req(a, "bob@example.com", 10)); !errors.Is(err, money.ErrTooSmall) {
			t.Fatalf("quote below the minimum: %v", err)
		}
		if _, err := f.svc.Quote(ctx, req(a, "bob@example.com", 10_000)); !errors.Is(err, transfer.ErrDailyLimit) {
			t.Fatalf("quote past the daily limit: %v", err)
		}
		if _, err := f.svc.Send(ctx, req(a, "bob@example.com", 10_000)); !errors.Is(err, transfer.ErrDailyLimit) {
			t.Fatalf("past the daily limit: %v", err)
		}
		f.now = f.now.Add(24 * time.Hour)
		if _, err := f.svc.Send(ctx, req(a, "bob@example.com", 10_000)); err != nil {
			t.Fatalf("the next day: %v", err)
		}
		if f.balance(a) != 1_000_000-310_000 {
			t.Fatalf("balance %d", f.balance(a))
		}
		f.checkInvariants()
	})
}

// 100 transfers A→B and 100 B→A at once: no deadlock, exact balances.
func TestOppositeTransfersAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		a, b := f.user("alice@example.com", 10_000_000), f.user("bob@example.com", 10_000_000)
		var wg sync.WaitGroup
		var failed atomic.Int64
		start := make(chan struct{})
		for i := range 200 {
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			rials := int64(10_000 + 10*(i/2))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := f.svc.Send(ctx, req(from, to.Email, rials)); err != nil {
					failed.Add(1)
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if failed.Load() != 0 {
			t.Fatalf("%d transfers failed", failed.Load())
		}
		// Each direction moved the same amounts: the balances are back.
		if f.balance(a) != 10_000_000 || f.balance(b) != 10_000_000 {
			t.Fatalf("balances %d %d", f.balance(a), f.balance(b))
		}
		if n := storetest.Count(t, db, `SELECT COUNT(*) FROM transfers`); n != 200 {
			t.Fatalf("%d transfers", n)
		}
		f.checkInvariants()
	})
}

// Fifty submits of one form at once make one transfer; each answers it.
func TestOneTokenAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		a, b := f.user("alice@example.com", 1_000_000), f.user("bob@example.com", 0)
		r := req(a, b.Email, 50_000)
		var wg sync.WaitGroup
		ids := make(chan string, 50)
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f.svc.Send(ctx, r)
				if err != nil {
					t.Error(err)
					return
				}
				ids <- res.Transfer.PublicID
			}()
		}
		wg.Wait()
		close(ids)
		seen := map[string]int{}
		for id := range ids {
			seen[id]++
		}
		if len(seen) != 1 {
			t.Fatalf("answers name %d transfers: %v", len(seen), seen)
		}
		if f.balance(a) != 950_000 || f.balance(b) != 50_000 {
			t.Fatalf("balances %d %d", f.balance(a), f.balance(b))
		}
		f.checkInvariants()
	})
}

// Two sessions draining one balance at once never take it below zero,
// and the daily limit holds under the race too.
func TestDrainingAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, transfer.Config{MinRials: 10_000, DailyMaxRials: 700_000})
		ctx := context.Background()
		a := f.user("alice@example.com", 1_000_000)
		b, c := f.user("bob@example.com", 0), f.user("carol@example.com", 0)
		var wg sync.WaitGroup
		var made, short, limit atomic.Int64
		for i := range 40 {
			to := b
			if i%2 == 1 {
				to = c
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.svc.Send(ctx, req(a, to.Email, 100_000))
				switch {
				case err == nil:
					made.Add(1)
				case errors.Is(err, transfer.ErrInsufficientFunds):
					short.Add(1)
				case errors.Is(err, transfer.ErrDailyLimit):
					limit.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if made.Load() != 7 || f.balance(a) != 300_000 || f.balance(b)+f.balance(c) != 700_000 {
			t.Fatalf("made %d (short %d, limit %d), balances %d %d %d", made.Load(), short.Load(), limit.Load(), f.balance(a), f.balance(b), f.balance(c))
		}
		f.checkInvariants()
		// Without the daily limit, the balance is the guard.
		f2 := newFixture(t, storetest.New(t, db.Dialect), cfg)
		a2 := f2.user("alice@example.com", 1_000_000)
		b2 := f2.user("bob@example.com", 0)
		made.Store(0)
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f2.svc.Send(ctx, req(a2, b2.Email, 100_000))
				if err == nil {
					made.Add(1)
				} else if !errors.Is(err, transfer.ErrInsufficientFunds) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if made.Load() != 10 || f2.balance(a2) != 0 || f2.balance(b2) != 1_000_000 {
			t.Fatalf("made %d, balances %d %d", made.Load(), f2.balance(a2), f2.balance(b2))
		}
		f2.checkInvariants()
	})
}

func TestMaskEmail(t *testing.T) {
	for in, want := range map[string]string{"alice@example.com": "a***@example.com", "b@x.ir": "b***@x.ir", "nope": "***"} {
		if got := transfer.MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
}

// The transfer's webhook events are written with it, in the same outbox
// as top-ups': transfer.sent to the sender's endpoints, transfer.received
// to the recipient's, each body carrying the transfer as that person
// sees it; a refused transfer queues nothing.
func TestSendQueuesWebhooks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		ctx := context.Background()
		a, b := f.user("alice@example.com", 500_000), f.user("bob@example.com", 0)
		hooks, err := webhook.New(db, nil, webhook.Options{SessionSecret: []byte("0123456789abcdef0123456789abcdef"), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		eps := map[int64]webhook.Endpoint{}
		for _, p := range []person{a, b} {
			ep, _, err := hooks.Create(ctx, p.ID, "http://127.0.0.1:9/hook", webhook.Types(), nil)
			if err != nil {
				t.Fatal(err)
			}
			eps[p.ID] = ep
		}
		kicked := 0
		f.svc.WithHooks(transfer.Hooks{WebhookQueued: func() { kicked++ }})
		if _, err := f.svc.Send(ctx, req(a, b.Email, 600_000)); !errors.Is(err, transfer.ErrInsufficientFunds) {
			t.Fatalf("short: %v", err)
		}
		res, err := f.svc.Send(ctx, req(a, b.Email, 100_000))
		if err != nil {
			t.Fatal(err)
		}
		if kicked != 1 {
			t.Errorf("the sender was woken %d times, want once", kicked)
		}
		for p, want := range map[int64]string{a.ID: webhook.TypeTransferSent, b.ID: webhook.TypeTransferReceived} {
			ds, err := hooks.Deliveries(ctx, eps[p].ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].Type != want || ds[0].TransferID == nil || *ds[0].TransferID != res.Transfer.ID || ds[0].TopUpID != nil {
				t.Fatalf("deliveries of user %d: %+v", p, ds)
			}
			var body struct {
				Type     string        `json:"type"`
				Transfer transfer.View `json:"transfer"`
			}
			if err := json.Unmarshal([]byte(ds[0].Body), &body); err != nil {
				t.Fatal(err)
			}
			dir := map[string]string{webhook.TypeTransferSent: "sent", webhook.TypeTransferReceived: "received"}[want]
			if body.Type != want || body.Transfer.ID != res.Transfer.PublicID || body.Transfer.Direction != dir || body.Transfer.AmountRials != 100_000 {
				t.Errorf("body of %s: %+v", want, body)
			}
		}
	})
}

// An account whose address is not confirmed (maybe a stranger's who signed
// up with it) sends nothing in its name, whatever its balance: not from
// the form (Send, Quote), not through the API (SendKeyed, the key not
// kept); once its owner confirms the address, the same requests pass.
func TestUnconfirmedSenderSendsNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, cfg)
		f.keyed()
		ctx := context.Background()
		b := f.user("bob@example.com", 0)
		u := authtest.Register(t, db, "carol@example.com")
		w, err := f.ws.ForUser(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Write(ctx, ledger.Entry{Kind: ledger.KindAdjustment, Reference: "fund:carol", Postings: ledger.Transfer(f.gw, w.AccountID, 500_000), At: f.now}); err != nil {
			t.Fatal(err)
		}
		carol := person{ID: u.ID, Email: u.Email, W: w}
		tables := []string{"transfers", "ledger_transactions", "ledger_postings", "transfer_daily_totals", "idempotency_keys", "webhook_deliveries"}
		before := storetest.Rows(t, db, tables...)
		r := req(carol, "bob@example.com", 100_000)
		if _, err := f.svc.Quote(ctx, r); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("quote: %v", err)
		}
		// The unknown recipient is not looked at first: the refusal tells
		// nothing about the address.
		if _, err := f.svc.Send(ctx, req(carol, "nobody@example.com", 100_000)); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("send to an unknown address: %v", err)
		}
		if _, err := f.svc.Send(ctx, r); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("send: %v", err)
		}
		k := apiKey(carol, "k-unconfirmed", r)
		if _, err := f.svc.SendKeyed(ctx, r, k); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("send keyed: %v", err)
		}
		if after := storetest.Rows(t, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refusal wrote: %v → %v", before, after)
		}
		// A key an older instance began and released (the legacy way):
		// refused the same, nothing written, and the key kept (released:
		// the request that left it may have made its effect, which a
		// retry finds by the key's token).
		keys := f.keyed()
		old := apiKey(carol, "k-old", r)
		if out, rec, err := keys.Begin(ctx, old); err != nil || out != idempotency.Acquired {
			t.Fatalf("begin: %v %v", out, err)
		} else if err := keys.Release(ctx, rec); err != nil {
			t.Fatal(err)
		}
		before = storetest.Rows(t, db, tables...)
		if _, err := f.svc.SendKeyed(ctx, r, old); !errors.Is(err, transfer.ErrSenderUnconfirmed) {
			t.Fatalf("send keyed, an unfinished key: %v", err)
		}
		if after := storetest.Rows(t, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refusal wrote (an unfinished key): %v → %v", before, after)
		}
		if out, _, _, err := keys.Lookup(ctx, old); err != nil || out != idempotency.Acquired {
			t.Fatalf("the unfinished key after the refusal: %v %v, want kept and free to take", out, err)
		}
		if f.balance(carol) != 500_000 || f.balance(b) != 0 {
			t.Fatalf("balances %d %d", f.balance(carol), f.balance(b))
		}
		authtest.ConfirmEmail(t, db, "carol@example.com")
		if _, err := f.svc.Send(ctx, r); err != nil {
			t.Fatalf("send once confirmed: %v", err)
		}
		if res, err := f.svc.SendKeyed(ctx, req(carol, "bob@example.com", 100_000), k); err != nil || res.Outcome != idempotency.Acquired {
			t.Fatalf("the same key once confirmed: %+v %v", res, err)
		}
		if f.balance(carol) != 300_000 || f.balance(b) != 200_000 {
			t.Fatalf("balances once confirmed %d %d", f.balance(carol), f.balance(b))
		}
		f.checkInvariants()
	})
}
