package payment_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/payment"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/wallet"
)

// ---- a scripted gateway ----

type verifyFunc func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error)
type inquireFunc func(authority string) (gateway.InquiryResult, error)

// fakeGW implements gateway.Gateway. Request hands out Zarinpal-shaped
// authorities; Verify and Inquire answer from scripts; every call is counted.
type fakeGW struct {
	mu           sync.Mutex
	requestDelay time.Duration
	requestErr   error
	verifyFn     verifyFunc
	inquireFn    inquireFunc
	// answerLost: the bank creates the transaction, but its answer to
	// request never reaches us (a time-out).
	answerLost bool
	unverified []gateway.Unverified

	requests, verifies, inquiries int
	requestInputs                 []gateway.RequestInput
	verifyInputs                  []gateway.VerifyInput
	authorities                   []string
}

var _ gateway.Gateway = (*fakeGW)(nil)

func (f *fakeGW) set(fn func(f *fakeGW)) { f.mu.Lock(); defer f.mu.Unlock(); fn(f) }

func (f *fakeGW) counts() (requests, verifies, inquiries int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.verifies, f.inquiries
}

func (f *fakeGW) Name() string { return "fake" }

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func newAuthority() string {
	b := make([]byte, 35)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return "S" + string(b)
}

func (f *fakeGW) Request(ctx context.Context, in gateway.RequestInput) (gateway.RequestResult, error) {
	f.mu.Lock()
	f.requests++
	f.requestInputs = append(f.requestInputs, in)
	delay, err := f.requestDelay, f.requestErr
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: ctx.Err()}
		}
	}
	if err != nil {
		return gateway.RequestResult{}, err
	}
	a := newAuthority()
	f.mu.Lock()
	f.authorities = append(f.authorities, a)
	lost := f.answerLost
	f.mu.Unlock()
	if lost {
		return gateway.RequestResult{}, &gateway.TransientError{Op: "request", Err: context.DeadlineExceeded}
	}
	return gateway.RequestResult{Authority: a, Code: 100}, nil
}

func (f *fakeGW) PayURL(authority string) string { return "https://bank.test/pg/StartPay/" + authority }

func (f *fakeGW) Verify(ctx context.Context, in gateway.VerifyInput) (gateway.VerifyResult, error) {
	f.mu.Lock()
	f.verifies++
	n, fn := f.verifies, f.verifyFn
	f.verifyInputs = append(f.verifyInputs, in)
	f.mu.Unlock()
	if fn == nil {
		return gateway.VerifyResult{}, &gateway.TransientError{Op: "verify", Err: errors.New("no verify script")}
	}
	return fn(n, in)
}

func (f *fakeGW) Inquire(ctx context.Context, authority string) (gateway.InquiryResult, error) {
	f.mu.Lock()
	f.inquiries++
	fn := f.inquireFn
	f.mu.Unlock()
	if fn == nil {
		return gateway.InquiryResult{}, &gateway.TransientError{Op: "inquiry", Err: errors.New("no inquiry script")}
	}
	return fn(authority)
}

func (f *fakeGW) ListUnverified(ctx context.Context) ([]gateway.Unverified, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gateway.Unverified(nil), f.unverified...), nil
}

func (f *fakeGW) lastAuthority() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authorities[len(f.authorities)-1]
}

// Scripted answers.

func paid(ref int64) verifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: gateway.VerifyPaid, Code: 100, RefID: ref, CardPANMasked: "603799******1234"}, nil
	}
}

func alreadyVerified(ref int64) verifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: gateway.VerifyAlreadyVerified, Code: 101, RefID: ref, CardPANMasked: "603799******1234"}, nil
	}
}

func verifyAnswer(outcome gateway.VerifyOutcome, code int) verifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) {
		return gateway.VerifyResult{Outcome: outcome, Code: code}, nil
	}
}

func verifyErr(err error) verifyFunc {
	return func(int, gateway.VerifyInput) (gateway.VerifyResult, error) { return gateway.VerifyResult{}, err }
}

func inquiry(st gateway.InquiryStatus) inquireFunc {
	return func(string) (gateway.InquiryResult, error) { return gateway.InquiryResult{Code: 100, Status: st}, nil }
}

func transient(op string) error {
	return &gateway.TransientError{Op: op, HTTPStatus: 504, Err: errors.New("gateway time-out")}
}

// ---- the test environment ----

// offsetClock is time.Now moved by an adjustable offset.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

type env struct {
	t      *testing.T
	db     *store.DB
	gw     *fakeGW
	clock  *offsetClock
	svc    *payment.Service
	user   auth.User
	wallet wallet.Wallet
}

var userSeq atomic.Int64

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	return newEnvWith(t, db, nil)
}

// newEnvWith is newEnv with a tweak of the payment configuration.
func newEnvWith(t *testing.T, db *store.DB, tweak func(*payment.Config)) *env {
	t.Helper()
	ctx := context.Background()
	email := fmt.Sprintf("payer%d@example.com", userSeq.Add(1))
	u, err := auth.NewService(db, auth.Options{BcryptCost: bcrypt.MinCost}).SignUp(ctx, email, "correct horse", "", "fa")
	if err != nil {
		t.Fatalf("sign up: %v", err)
	}
	w, err := wallet.NewService(db).ForUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("wallet: %v", err)
	}
	e := &env{t: t, db: db, gw: &fakeGW{}, clock: &offsetClock{}, user: u, wallet: w}
	cfg := payment.Config{BaseURL: "http://app.test", MinRials: 10000, MaxRials: 1000000000, PollInterval: 5 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	e.svc = payment.NewService(db, e.gw, e.clock.Now, nil, cfg)
	return e
}

func (e *env) input(token string, amount int64) payment.StartInput {
	return payment.StartInput{UserID: e.user.ID, WalletID: e.wallet.ID, Email: e.user.Email, FormToken: token, AmountRials: amount}
}

// start begins a top-up that must reach awaiting_payment.
func (e *env) start(amount int64) payment.Payment {
	e.t.Helper()
	r, err := e.svc.StartTopUp(context.Background(), e.input(payment.NewFormToken(), amount))
	if err != nil || r.Payment.Status != payment.StatusAwaitingPayment || r.Payment.Authority == nil {
		e.t.Fatalf("StartTopUp = %+v, %v", r, err)
	}
	return r.Payment
}

// row reads a payment straight from the database.
func (e *env) row(id int64) payment.Payment {
	e.t.Helper()
	var p payment.Payment
	if err := e.db.Gorm.Take(&p, id).Error; err != nil {
		e.t.Fatalf("payment %d: %v", id, err)
	}
	return p
}

func (e *env) count(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Gorm.Raw(sql, args...).Scan(&n).Error; err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) balance() int64 {
	return e.count(`SELECT balance_rials FROM wallets WHERE id = ?`, e.wallet.ID)
}

func (e *env) ledgerOf(paymentID int64) []wallet.LedgerEntry {
	e.t.Helper()
	var es []wallet.LedgerEntry
	if err := e.db.Gorm.Where("payment_id = ?", paymentID).Find(&es).Error; err != nil {
		e.t.Fatal(err)
	}
	return es
}

// assertCredited checks a credited payment, its row, its single ledger
// entry and its card/ref fields.
func (e *env) assertCredited(p payment.Payment, ref int64) {
	e.t.Helper()
	r := e.row(p.ID)
	if r.Status != payment.StatusCredited || r.RefID == nil || *r.RefID != ref ||
		r.VerifiedAmountRials == nil || *r.VerifiedAmountRials != r.AmountRials ||
		r.ResolvedAt == nil || r.LeaseUntil != nil || r.NextCheckAt != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
	if r.CardPANMasked != "603799******1234" {
		e.t.Errorf("card = %q", r.CardPANMasked)
	}
	es := e.ledgerOf(p.ID)
	if len(es) != 1 || es[0].AmountRials != r.AmountRials || es[0].WalletID != r.WalletID || es[0].Kind != wallet.KindTopUp {
		e.t.Errorf("ledger of payment %d = %+v, want one entry of %d", p.ID, es, r.AmountRials)
	}
}

// assertOpen checks a payment that must not have been credited.
func (e *env) assertUncredited(p payment.Payment) {
	e.t.Helper()
	if es := e.ledgerOf(p.ID); len(es) != 0 {
		e.t.Errorf("payment %d has ledger entries %+v", p.ID, es)
	}
	if r := e.row(p.ID); r.Status == payment.StatusCredited || r.VerifiedAmountRials != nil {
		e.t.Errorf("payment row = %s", dump(r))
	}
}

func dump(p payment.Payment) string {
	deref := func(v *int64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{id %d status %s reason %q authority %q ref %s verified %s card %q attempts %d next_check %v lease %v resolved %v}",
		p.ID, p.Status, p.StatusReason, p.AuthorityString(), deref(p.RefID), deref(p.VerifiedAmountRials), p.CardPANMasked,
		p.Attempts, p.NextCheckAt, p.LeaseUntil, p.ResolvedAt)
}

// checkInvariants asserts ARCHITECTURE §2 over the whole database.
func checkInvariants(t *testing.T, db *store.DB) {
	t.Helper()
	storetest.CheckInvariants(t, db)
}

// ---- StartTopUp ----

func TestStartTopUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		tok := payment.NewFormToken()
		r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil {
			t.Fatalf("StartTopUp: %v", err)
		}
		if len(e.gw.authorities) != 1 {
			t.Fatalf("%d authorities handed out", len(e.gw.authorities))
		}
		authority := e.gw.authorities[0]
		p := e.row(r.Payment.ID)
		if r.Replayed || r.PayURL != e.gw.PayURL(authority) || r.Payment.Status != payment.StatusAwaitingPayment {
			t.Errorf("result = %+v", r)
		}
		if p.Status != payment.StatusAwaitingPayment || p.AuthorityString() != authority || p.AmountRials != 50_000 ||
			p.Gateway != "fake" || p.UserID != e.user.ID || p.WalletID != e.wallet.ID || p.FormToken != tok ||
			!payment.ValidPublicID(p.PublicID) || p.RefID != nil || p.ResolvedAt != nil || p.Attempts != 0 {
			t.Errorf("row = %s", dump(p))
		}
		in := e.gw.requestInputs[0]
		if in.AmountRials != 50_000 || in.CallbackURL != "http://app.test/payments/"+p.PublicID+"/return" ||
			in.OrderID != p.PublicID || in.Email != e.user.Email {
			t.Errorf("request input = %+v", in)
		}

		// A repeat submit of the form: the same answer, no second request.
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if !r2.Replayed || r2.Payment.ID != p.ID || r2.PayURL != r.PayURL {
			t.Errorf("replay = %+v, want payment %d and %s", r2, p.ID, r.PayURL)
		}
		// The same form with another amount.
		_, err = e.svc.StartTopUp(ctx, e.input(tok, 60_000))
		var reused *payment.FormReusedError
		if !errors.As(err, &reused) || reused.Existing.ID != p.ID {
			t.Errorf("other amount: %v, want *FormReusedError for payment %d", err, p.ID)
		}
		if req, ver, _ := e.gw.counts(); req != 1 || ver != 0 {
			t.Errorf("gateway called: %d requests, %d verifies; want 1, 0", req, ver)
		}
		if n := e.count(`SELECT COUNT(*) FROM payments`); n != 1 {
			t.Errorf("%d payments, want 1", n)
		}
		if r := e.row(p.ID); r.AmountRials != 50_000 || r.Status != payment.StatusAwaitingPayment {
			t.Errorf("row after reuse = %s", dump(r))
		}

		// Lookups.
		if got, err := e.svc.ByPublicID(ctx, p.PublicID); err != nil || got.ID != p.ID {
			t.Errorf("ByPublicID = %+v, %v", got, err)
		}
		if got, err := e.svc.ForOwner(ctx, p.PublicID, e.user.ID); err != nil || got.ID != p.ID {
			t.Errorf("ForOwner(owner) = %+v, %v", got, err)
		}
		if _, err := e.svc.ForOwner(ctx, p.PublicID, e.user.ID+1000); !errors.Is(err, payment.ErrNotFound) {
			t.Errorf("ForOwner(stranger) = %v, want ErrNotFound", err)
		}
		checkInvariants(t, db)
	})
}

func TestStartTopUpRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		tests := []struct {
			name   string
			token  string
			amount int64
			want   error
		}{
			{"empty token", "", 50_000, payment.ErrBadFormToken},
			{"short token", "abc", 50_000, payment.ErrBadFormToken},
			{"long token", strings.Repeat("a", 23), 50_000, payment.ErrBadFormToken},
			{"token with a bad character", strings.Repeat("a", 21) + "!", 50_000, payment.ErrBadFormToken},
			{"bad token and bad amount", "", 1, payment.ErrBadFormToken},
			{"below minimum", payment.NewFormToken(), 9_990, payment.ErrAmountTooSmall},
			{"zero", payment.NewFormToken(), 0, payment.ErrAmountTooSmall},
			{"negative", payment.NewFormToken(), -50_000, payment.ErrAmountTooSmall},
			{"above maximum", payment.NewFormToken(), 1_000_000_010, payment.ErrAmountTooLarge},
		}
		for _, tt := range tests {
			r, err := e.svc.StartTopUp(ctx, e.input(tt.token, tt.amount))
			if !errors.Is(err, tt.want) || r.Payment.ID != 0 {
				t.Errorf("%s: StartTopUp = %+v, %v; want %v", tt.name, r, err, tt.want)
			}
		}
		if n := e.count(`SELECT COUNT(*) FROM payments`); n != 0 {
			t.Errorf("%d payments written by refused submits", n)
		}
		if req, _, _ := e.gw.counts(); req != 0 {
			t.Errorf("%d gateway requests for refused submits", req)
		}
		// The limits themselves are allowed.
		for _, amount := range []int64{10_000, 1_000_000_000} {
			if p := e.start(amount); p.AmountRials != amount {
				t.Errorf("start(%d) = %s", amount, dump(p))
			}
		}
	})
}

func TestStartTopUpGatewayFails(t *testing.T) {
	errs := []struct {
		name   string
		err    error
		reason payment.Reason
	}{
		{"transient", &gateway.TransientError{Op: "request", HTTPStatus: 502, Err: errors.New("bad gateway")}, payment.ReasonRequestFailed},
		{"rejected", &gateway.RejectedError{Op: "request", Code: -9, Message: "validation error"}, payment.ReasonRequestRefused},
		{"breaker open", gateway.ErrUnavailable, payment.ReasonGatewayUnavailable},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tc := range errs {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, db)
				e.gw.set(func(f *fakeGW) { f.requestErr = tc.err })
				tok := payment.NewFormToken()
				r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
				if !errors.Is(err, payment.ErrGatewayFailed) || !errors.Is(err, tc.err) {
					t.Fatalf("StartTopUp error = %v, want ErrGatewayFailed wrapping %v", err, tc.err)
				}
				if r.PayURL != "" || r.Payment.Status != payment.StatusFailed {
					t.Errorf("result = %+v", r)
				}
				p := e.row(r.Payment.ID)
				if p.Status != payment.StatusFailed || p.Authority != nil || p.ResolvedAt == nil ||
					p.StatusReason != string(tc.reason) {
					t.Errorf("row = %s", dump(p))
				}
				// A repeat of the form says the same, without asking the bank again.
				r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
				if !errors.Is(err, payment.ErrGatewayFailed) || !r2.Replayed || r2.Payment.ID != p.ID || r2.PayURL != "" {
					t.Errorf("replay = %+v, %v", r2, err)
				}
				if req, _, _ := e.gw.counts(); req != 1 {
					t.Errorf("%d requests, want 1", req)
				}
				// A callback for it cannot match: it never had an authority.
				if _, err := e.svc.Return(ctx, p.PublicID, ""); !errors.Is(err, payment.ErrAuthorityMismatch) {
					t.Errorf("Return of a failed start = %v, want ErrAuthorityMismatch", err)
				}
				if _, ver, _ := e.gw.counts(); ver != 0 {
					t.Errorf("%d verifies, want 0", ver)
				}
				// A fresh form works once the gateway is back.
				e.gw.set(func(f *fakeGW) { f.requestErr = nil })
				e.start(50_000)
				checkInvariants(t, db)
			})
		}
	})
}

func TestStartTopUpConcurrentSubmits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.gw.set(func(f *fakeGW) { f.requestDelay = 100 * time.Millisecond })
		tok := payment.NewFormToken()
		const n = 20
		results := make([]payment.StartResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = e.svc.StartTopUp(context.Background(), e.input(tok, 70_000))
			})
		}
		close(start)
		wg.Wait()
		replayed := 0
		for i := range n {
			if errs[i] != nil {
				t.Errorf("submit %d: %v", i, errs[i])
				continue
			}
			if results[i].Replayed {
				replayed++
			}
			if results[i].PayURL == "" || results[i].PayURL != results[0].PayURL || results[i].Payment.ID != results[0].Payment.ID {
				t.Errorf("submit %d: %+v, want %s", i, results[i], results[0].PayURL)
			}
		}
		if replayed != n-1 {
			t.Errorf("%d replayed answers, want %d", replayed, n-1)
		}
		if req, _, _ := e.gw.counts(); req != 1 {
			t.Errorf("%d gateway requests, want 1", req)
		}
		if c := e.count(`SELECT COUNT(*) FROM payments`); c != 1 {
			t.Errorf("%d payments, want 1", c)
		}
		if p := e.row(results[0].Payment.ID); p.Status != payment.StatusAwaitingPayment || e.gw.PayURL(p.AuthorityString()) != results[0].PayURL {
			t.Errorf("row = %s", dump(p))
		}
	})
}

// ---- Return and Resolve ----

func TestReturnPaid(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(50_000)
		e.gw.set(func(f *fakeGW) { f.verifyFn = paid(123) })

		// Callbacks that do not name this payment change nothing.
		for _, a := range []string{"", newAuthority(), strings.ToLower(p.AuthorityString()), p.AuthorityString() + " "} {
			if _, err := e.svc.Return(ctx, p.PublicID, a); !errors.Is(err, payment.ErrAuthorityMismatch) {
				t.Errorf("Return(authority %q) = %v, want ErrAuthorityMismatch", a, err)
			}
		}
		for _, pub := range []string{"aaaaaaaaaaaaaaaaaaaaaaaa", "nope", "", strings.ToUpper(p.PublicID)} {
			if _, err := e.svc.Return(ctx, pub, p.AuthorityString()); !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("Return(public id %q) = %v, want ErrNotFound", pub, err)
			}
		}
		if r := e.row(p.ID); r.Status != payment.StatusAwaitingPayment || r.Attempts != 0 || r.LeaseUntil != nil || r.StatusReason != string(payment.ReasonRequestOK) {
			t.Errorf("row after bad callbacks = %s", dump(r))
		}
		if _, ver, _ := e.gw.counts(); ver != 0 {
			t.Fatalf("%d verifies for bad callbacks", ver)
		}

		got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil {
			t.Fatalf("Return: %v", err)
		}
		if got.Status != payment.StatusCredited || got.RefIDValue() != 123 || got.VerifiedAmountRials == nil || *got.VerifiedAmountRials != 50_000 {
			t.Errorf("Return = %s", dump(got))
		}
		e.assertCredited(p, 123)
		if vi := e.gw.verifyInputs; len(vi) != 1 || vi[0].Authority != p.AuthorityString() || vi[0].AmountRials != 50_000 {
			t.Errorf("verify inputs = %+v, want our authority and amount", vi)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance = %d, want 50000", b)
		}

		// A repeat callback shows the same result without asking the bank.
		again, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil || again.Status != payment.StatusCredited || again.RefIDValue() != 123 || again.ID != p.ID {
			t.Errorf("repeat Return = %s, %v", dump(again), err)
		}
		// Resolve on a stale copy of the open payment changes nothing.
		if r, err := e.svc.Resolve(ctx, p); err != nil || r.Status != payment.StatusCredited {
			t.Errorf("Resolve of a credited payment = %s, %v", dump(r), err)
		}
		if _, ver, _ := e.gw.counts(); ver != 1 {
			t.Errorf("%d verifies, want 1", ver)
		}
		if b := e.balance(); b != 50_000 {
			t.Errorf("balance after repeats = %d, want 50000", b)
		}
		checkInvariants(t, db)
	})
}

func TestReturnConcurrentCreditsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := e.start(80_000)
		e.gw.set(func(f *fakeGW) {
			f.verifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
				time.Sleep(20 * time.Millisecond)
				if n == 1 {
					return paid(777)(n, in)
				}
				return alreadyVerified(777)(n, in)
			}
		})
		const n = 50
		got := make([]payment.Payment, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = e.svc.Return(context.Background(), p.PublicID, p.AuthorityString())
			})
		}
		close(start)
		wg.Wait()
		statuses := map[payment.Status]int{}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("callback %d: %v", i, errs[i])
				continue
			}
			statuses[got[i].Status]++
			if got[i].Status == payment.StatusCredited && got[i].RefIDValue() != 777 {
				t.Errorf("callback %d: %s", i, dump(got[i]))
			}
		}
		if statuses[payment.StatusCredited] != n {
			t.Errorf("statuses seen by the callbacks: %v; want all %d credited", statuses, n)
		}
		e.assertCredited(p, 777)
		if b := e.balance(); b != 80_000 {
			t.Errorf("balance = %d, want 80000", b)
		}
		_, ver, _ := e.gw.counts()
		t.Logf("%d verify calls for %d callbacks", ver, n)
		if ver < 1 || ver > n {
			t.Errorf("%d verify calls", ver)
		}
		checkInvariants(t, db)
	})
}

func TestVerifyUnknownThenResolve(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(40_000)
		e.gw.set(func(f *fakeGW) { f.verifyFn = verifyErr(transient("verify")) })

		before := e.clock.Now()
		got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil {
			t.Fatalf("Return: %v", err)
		}
		r := e.row(p.ID)
		if got.Status != payment.StatusPendingVerification || r.Status != payment.StatusPendingVerification ||
			r.NextCheckAt == nil || !r.NextCheckAt.After(before) || r.LeaseUntil != nil || r.ResolvedAt != nil ||
			r.Attempts != 1 || !strings.Contains(r.StatusReason, "verify") {
			t.Errorf("after an unknown verify: %s", dump(r))
		}
		e.assertUncredited(p)

		// Reloading the result page before next_check_at does not hammer the bank.
		if again, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString()); err != nil || again.Status != payment.StatusPendingVerification {
			t.Errorf("early repeat Return = %s, %v", dump(again), err)
		}
		if _, ver, _ := e.gw.counts(); ver != 1 {
			t.Errorf("%d verifies, want 1", ver)
		}

		// Later the bank answers: paid.
		e.clock.Advance(time.Minute)
		e.gw.set(func(f *fakeGW) { f.verifyFn = paid(555) })
		got, err = e.svc.Resolve(ctx, r)
		if err != nil || got.Status != payment.StatusCredited || got.RefIDValue() != 555 {
			t.Fatalf("Resolve = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 555)
		if r := e.row(p.ID); r.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", r.Attempts)
		}
		// Resolving or returning again credits nothing more.
		if again, err := e.svc.Resolve(ctx, r); err != nil || again.Status != payment.StatusCredited {
			t.Errorf("second Resolve = %s, %v", dump(again), err)
		}
		if again, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString()); err != nil || again.Status != payment.StatusCredited {
			t.Errorf("Return after credit = %s, %v", dump(again), err)
		}
		if _, ver, _ := e.gw.counts(); ver != 2 {
			t.Errorf("%d verifies, want 2", ver)
		}
		if b := e.balance(); b != 40_000 {
			t.Errorf("balance = %d, want 40000", b)
		}
		checkInvariants(t, db)
	})
}

func TestVerifyOutcomes(t *testing.T) {
	tests := []struct {
		name          string
		verify        verifyFunc
		inquire       inquireFunc
		want          payment.Status
		wantReason    string // the reason code
		wantRef       int64  // credited only
		wantInquiries int
		wantNextCheck bool
		wantResolved  bool
	}{
		{"paid", paid(1001), nil, payment.StatusCredited, "verified_paid", 1001, 0, false, true},
		{"already verified", alreadyVerified(1002), nil, payment.StatusCredited, "already_verified", 1002, 0, false, true},
		{"not paid, bank says failed", verifyAnswer(gateway.VerifyNotPaid, -51), inquiry(gateway.InquiryFailed),
			payment.StatusFailed, "bank_cancelled", 0, 1, false, true},
		{"not paid, bank says reversed", verifyAnswer(gateway.VerifyNotPaid, -51), inquiry(gateway.InquiryReversed),
			payment.StatusFailed, "bank_reversed", 0, 1, false, true},
		{"not paid, payer still at the bank", verifyAnswer(gateway.VerifyNotPaid, -51), inquiry(gateway.InquiryInBank),
			payment.StatusAwaitingPayment, "request_ok", 0, 1, true, false},
		{"not paid, inquiry says paid", verifyAnswer(gateway.VerifyNotPaid, -51), inquiry(gateway.InquiryPaid),
			payment.StatusPendingVerification, "verify_unknown", 0, 1, true, false},
		{"not paid, inquiry unknown", verifyAnswer(gateway.VerifyNotPaid, -51),
			func(string) (gateway.InquiryResult, error) { return gateway.InquiryResult{}, transient("inquiry") },
			payment.StatusPendingVerification, "verify_unknown", 0, 1, true, false},
		{"amount mismatch", verifyAnswer(gateway.VerifyAmountMismatch, -50), nil,
			payment.StatusNeedsReview, "amount_mismatch", 0, 0, false, true},
		{"invalid", verifyAnswer(gateway.VerifyInvalid, -11), nil,
			payment.StatusNeedsReview, "verify_rejected", 0, 0, false, true},
		{"paid without a reference", paid(0), nil, payment.StatusNeedsReview, "no_ref_id", 0, 0, false, true},
		{"paid with a negative reference", paid(-5), nil, payment.StatusNeedsReview, "no_ref_id", 0, 0, false, true},
		{"verify rejected", verifyErr(&gateway.RejectedError{Op: "verify", Code: -10, Message: "bad merchant"}), nil,
			payment.StatusNeedsReview, "verify_rejected", 0, 0, false, true},
		{"verify unknown", verifyErr(transient("verify")), nil,
			payment.StatusPendingVerification, "verify_unknown", 0, 0, true, false},
		{"breaker open", verifyErr(gateway.ErrUnavailable), nil,
			payment.StatusPendingVerification, "verify_unknown", 0, 0, true, false},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(30_000)
				e.gw.set(func(f *fakeGW) { f.verifyFn, f.inquireFn = tt.verify, tt.inquire })
				got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
				if err != nil {
					t.Fatalf("Return: %v", err)
				}
				r := e.row(p.ID)
				if got.Status != tt.want || r.Status != tt.want {
					t.Fatalf("status: returned %s, row %s; want %s", got.Status, dump(r), tt.want)
				}
				if r.StatusReason != tt.wantReason {
					t.Errorf("status_reason %q, want %q", r.StatusReason, tt.wantReason)
				}
				if (r.NextCheckAt != nil) != tt.wantNextCheck || (r.ResolvedAt != nil) != tt.wantResolved || r.LeaseUntil != nil {
					t.Errorf("row = %s; want next_check_at set %v, resolved %v, no lease", dump(r), tt.wantNextCheck, tt.wantResolved)
				}
				if _, ver, inq := e.gw.counts(); ver != 1 || inq != tt.wantInquiries {
					t.Errorf("%d verifies, %d inquiries; want 1, %d", ver, inq, tt.wantInquiries)
				}
				if tt.want == payment.StatusCredited {
					e.assertCredited(p, tt.wantRef)
					if b := e.balance(); b != 30_000 {
						t.Errorf("balance = %d, want 30000", b)
					}
				} else {
					e.assertUncredited(p)
					if b := e.balance(); b != 0 {
						t.Errorf("balance = %d, want 0", b)
					}
				}
				// A repeat callback within the pacing window never asks the
				// bank: the outcome the bank just gave stands.
				again, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
				if err != nil || again.Status != tt.want {
					t.Errorf("repeat Return = %s, %v; want %s", dump(again), err, tt.want)
				}
				if _, ver, _ := e.gw.counts(); ver != 1 {
					t.Errorf("repeat Return verified again (%d verifies)", ver)
				}
				checkInvariants(t, db)
			})
		}
	})
}

// An early (or forged) callback while the payer is still at the bank must
// not fail the payment: when the payer pays, the real callback credits it.
func TestEarlyCallbackThenPaid(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.start(30_000)
		e.gw.set(func(f *fakeGW) {
			f.verifyFn = verifyAnswer(gateway.VerifyNotPaid, -51)
			f.inquireFn = inquiry(gateway.InquiryInBank)
		})
		for range 3 {
			got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
			if err != nil || got.Status != payment.StatusAwaitingPayment {
				t.Fatalf("early Return = %s, %v", dump(got), err)
			}
		}
		// Only the first callback asked the bank; the others were answered
		// from the row (at most one check per pacing window).
		if _, ver, inq := e.gw.counts(); ver != 1 || inq != 1 {
			t.Errorf("%d verifies, %d inquiries for 3 early callbacks; want 1, 1", ver, inq)
		}
		e.assertUncredited(p)
		e.gw.set(func(f *fakeGW) { f.verifyFn = paid(4242) })
		got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != payment.StatusAwaitingPayment {
			t.Fatalf("Return after paying, within the window = %s, %v; want answered from the row", dump(got), err)
		}
		e.clock.Advance(21 * time.Second) // the pacing window (20s) ends
		got, err = e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != payment.StatusCredited {
			t.Fatalf("Return after paying = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 4242)
		if r := e.row(p.ID); r.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", r.Attempts)
		}
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000", b)
		}
		checkInvariants(t, db)
	})
}

// Two payments the bank confirms with the same reference: only the first is
// credited; the second is a fraud signal for a person.
func TestSameRefIDTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p1 := e.start(30_000)
		p2 := e.start(45_000)
		e.gw.set(func(f *fakeGW) { f.verifyFn = paid(999) })

		got1, err := e.svc.Return(ctx, p1.PublicID, p1.AuthorityString())
		if err != nil || got1.Status != payment.StatusCredited {
			t.Fatalf("first Return = %s, %v", dump(got1), err)
		}
		got2, err := e.svc.Return(ctx, p2.PublicID, p2.AuthorityString())
		if err != nil || got2.Status != payment.StatusNeedsReview {
			t.Fatalf("second Return = %s, %v; want needs_review", dump(got2), err)
		}
		e.assertCredited(p1, 999)
		e.assertUncredited(p2)
		r2 := e.row(p2.ID)
		if r2.RefID != nil || r2.StatusReason != string(payment.ReasonRefIDReused) || r2.ResolvedAt == nil || r2.LeaseUntil != nil {
			t.Errorf("second payment = %s", dump(r2))
		}
		// A repeat of the second callback after the pacing window asks the
		// bank again, and it stays in review, crediting nothing.
		e.clock.Advance(21 * time.Second)
		if again, err := e.svc.Return(ctx, p2.PublicID, p2.AuthorityString()); err != nil || again.Status != payment.StatusNeedsReview {
			t.Errorf("repeat Return = %s, %v", dump(again), err)
		}
		if n := e.count(`SELECT COUNT(*) FROM ledger_entries`); n != 1 {
			t.Errorf("%d ledger entries, want 1", n)
		}
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000 (credited once)", b)
		}
		if _, ver, _ := e.gw.counts(); ver != 3 {
			t.Errorf("%d verifies, want 3", ver)
		}
		checkInvariants(t, db)
	})
}

// A repeat submit that outwaits ReplayWait while the first submit is still
// talking to the bank says so, and never starts a second payment.
func TestStartTopUpReplayStillProcessing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *payment.Config) { c.ReplayWait = 30 * time.Millisecond })
		e.gw.set(func(f *fakeGW) { f.requestDelay = 300 * time.Millisecond })
		tok := payment.NewFormToken()
		first := make(chan error, 1)
		var r1 payment.StartResult
		go func() {
			var err error
			r1, err = e.svc.StartTopUp(ctx, e.input(tok, 50_000))
			first <- err
		}()
		waitFor(t, func() bool { return e.count(`SELECT COUNT(*) FROM payments`) == 1 })
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if !errors.Is(err, payment.ErrStillProcessing) || !r2.Replayed || r2.PayURL != "" || r2.Payment.Status != payment.StatusCreated {
			t.Errorf("repeat while the first is at the bank = %+v, %v; want ErrStillProcessing", r2, err)
		}
		if err := <-first; err != nil || r1.Payment.Status != payment.StatusAwaitingPayment {
			t.Fatalf("first submit = %+v, %v", r1, err)
		}
		// Once the first is done, a repeat gets its answer.
		r3, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if err != nil || !r3.Replayed || r3.PayURL != r1.PayURL {
			t.Errorf("repeat after the first = %+v, %v", r3, err)
		}
		if req, _, _ := e.gw.counts(); req != 1 {
			t.Errorf("%d requests, want 1", req)
		}
	})
}

// A first submit that hangs past its budget is failed by a repeat submit; if
// the bank then answers the first, its authority must not be handed out.
func TestStartTopUpAbandonedFirstSubmit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		e.gw.set(func(f *fakeGW) { f.requestDelay = 300 * time.Millisecond })
		tok := payment.NewFormToken()
		type result struct {
			r   payment.StartResult
			err error
		}
		first := make(chan result, 1)
		go func() {
			r, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
			first <- result{r, err}
		}()
		waitFor(t, func() bool { return e.count(`SELECT COUNT(*) FROM payments`) == 1 })
		e.clock.Advance(time.Minute) // the first submit is now long past RequestTimeout
		r2, err := e.svc.StartTopUp(ctx, e.input(tok, 50_000))
		if !errors.Is(err, payment.ErrGatewayFailed) || r2.Payment.Status != payment.StatusFailed || r2.PayURL != "" {
			t.Errorf("repeat of an abandoned submit = %+v, %v; want a failed payment", r2, err)
		}
		r1 := <-first
		if r1.r.PayURL != "" || r1.r.Payment.Status != payment.StatusFailed || !errors.Is(r1.err, payment.ErrGatewayFailed) {
			t.Errorf("late first submit = %+v, %v; want the failed payment and no bank URL", r1.r, r1.err)
		}
		p := e.row(r2.Payment.ID)
		if p.Status != payment.StatusFailed || p.Authority != nil || !strings.Contains(p.StatusReason, "abandoned") {
			t.Errorf("row = %s", dump(p))
		}
		if n := e.count(`SELECT COUNT(*) FROM payments`); n != 1 {
			t.Errorf("%d payments, want 1", n)
		}
	})
}

// A verification lease held by another actor makes a callback wait (bounded)
// and leaves the payment alone; a lease whose holder died is taken over.
func TestReturnRespectsLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newEnvWith(t, db, func(c *payment.Config) { c.VerifyTimeout = 300 * time.Millisecond })
		p := e.start(30_000)
		e.gw.set(func(f *fakeGW) { f.verifyFn = paid(31337) })
		setLease := func(until time.Time) {
			t.Helper()
			if err := db.Gorm.Exec(`UPDATE payments SET lease_until = ? WHERE id = ?`, until.UTC(), p.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		setLease(e.clock.Now().Add(time.Hour))
		got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != payment.StatusAwaitingPayment {
			t.Errorf("Return under a live lease = %s, %v", dump(got), err)
		}
		if _, ver, _ := e.gw.counts(); ver != 0 {
			t.Errorf("verified under another actor's lease (%d verifies)", ver)
		}
		e.assertUncredited(p)

		setLease(e.clock.Now().Add(-time.Second)) // its holder died
		got, err = e.svc.Return(ctx, p.PublicID, p.AuthorityString())
		if err != nil || got.Status != payment.StatusCredited {
			t.Fatalf("Return after the lease expired = %s, %v", dump(got), err)
		}
		e.assertCredited(p, 31337)
		if b := e.balance(); b != 30_000 {
			t.Errorf("balance = %d, want 30000", b)
		}
		checkInvariants(t, db)
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A bank answer that the payment is paid is never dropped: when another
// actor ended the payment on a stale view while the bank was being asked
// (a deadline, a review), the verified payment is still credited, once.
func TestLateVerifiedAnswerStillCredits(t *testing.T) {
	for _, other := range []payment.Status{payment.StatusNeedsReview, payment.StatusFailed} {
		t.Run(string(other), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				e := newEnv(t, db)
				p := e.start(30_000)
				e.gw.set(func(f *fakeGW) {
					f.verifyFn = func(n int, in gateway.VerifyInput) (gateway.VerifyResult, error) {
						// Meanwhile another actor ends it without a verify.
						storetest.ForceStatus(t, db, p.ID, string(other), "stale deadline")
						return paid(2024)(n, in)
					}
				})
				got, err := e.svc.Return(ctx, p.PublicID, p.AuthorityString())
				if err != nil || got.Status != payment.StatusCredited {
					t.Fatalf("Return = %s, %v; want credited", dump(got), err)
				}
				e.assertCredited(p, 2024)
				var from string
				db.Gorm.Raw(`SELECT from_status FROM payment_events WHERE payment_id = ? AND to_status = 'credited'`, p.ID).Scan(&from)
				if from != string(other) {
					t.Errorf("credit event from %q, want %q (what happened must be on record)", from, other)
				}
				if b := e.balance(); b != 30_000 {
					t.Errorf("balance = %d, want 30000", b)
				}
				// A repeat callback changes nothing.
				if got, _ := e.svc.Return(ctx, p.PublicID, p.AuthorityString()); got.Status != payment.StatusCredited || e.balance() != 30_000 {
					t.Errorf("repeat: %s balance %d", dump(got), e.balance())
				}
				checkInvariants(t, db)
			})
		})
	}
}
