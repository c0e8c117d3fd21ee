package api_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/apptest"
	"github.com/kifpool/kifpool/internal/money"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/internal/server"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// spyStarter records what the web form and the API ask of the top-up
// start use case, and what it answered.
type spyStarter struct {
	topup.Starter
	mu    sync.Mutex
	calls []spyCall
}

type spyCall struct {
	op    string // "amount" or "start"
	rials int64  // the amount the rules read (0 if refused)
	err   error
}

func (s *spyStarter) Amount(a topup.Amount) (int64, error) {
	n, err := s.Starter.Amount(a)
	s.record(spyCall{"amount", n, err})
	return n, err
}

func (s *spyStarter) Start(ctx context.Context, r topup.Request) (topup.StartResult, error) {
	n, _ := s.Starter.Amount(r.Amount)
	res, err := s.Starter.Start(ctx, r)
	s.record(spyCall{"start", n, err})
	return res, err
}

func (s *spyStarter) record(c spyCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// take returns the calls since the last take.
func (s *spyStarter) take() []spyCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

// TestFormAndAPIShareTheTopUpUseCase: the top-up form and POST
// /api/v1/topups both go through the one start use case, and the same
// amount gets the same answer from its one set of rules (the form in
// tomans, any digits; the API in rials): the same refusal, or a payment
// of the same amount.
func TestFormAndAPIShareTheTopUpUseCase(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		spy := &spyStarter{}
		f := start(t, db, apptest.Options{
			Env: map[string]string{"TOPUP_MIN_RIALS": "20000", "TOPUP_MAX_RIALS": "5000000"},
			Server: server.Options{WrapTopUp: func(s topup.Starter) topup.Starter {
				spy.Starter = s
				return spy
			}},
		})
		api, _ := f.user(t, "both@example.com", apitoken.ScopeTopUp)
		web := f.app.NewClient(t)
		web.SignIn("both@example.com", "correct horse battery")

		for i, tt := range []struct {
			name       string
			typed      string // the form's amount, in tomans
			rials      int64  // the API's amount
			want       error
			apiCode    string
			formStatus int
		}{
			{"below the minimum", "۱٬۰۰۰", 10_000, money.ErrTooSmall, "amount_too_small", http.StatusUnprocessableEntity},
			{"at the minimum", "2000", 20_000, nil, "", http.StatusSeeOther},
			{"above the maximum", "500,001", 5_000_010, money.ErrTooLarge, "amount_too_large", http.StatusUnprocessableEntity},
			{"at the maximum", "۵۰۰۰۰۰", 5_000_000, nil, "", http.StatusSeeOther},
			{"zero", "0", 0, money.ErrNotPositive, "amount_invalid", http.StatusUnprocessableEntity},
		} {
			func() { // one row; a failure names it
				csrf, token := web.TopUpForm()
				spy.take()
				r := web.PostTopUp(csrf, token, tt.typed)
				formCalls := spy.take()
				// 0 is outside the document's schema too; the server must
				// still refuse it itself.
				a := api.do(http.MethodPost, routes.APITopUps, map[string]string{"Idempotency-Key": "key-" + strconv.Itoa(i)},
					`{"amount_rials": `+strconv.FormatInt(tt.rials, 10)+`}`, tt.rials <= 0)
				apiCalls := spy.take()

				if r.Status != tt.formStatus {
					t.Errorf("%s: form: %d, want %d", tt.name, r.Status, tt.formStatus)
				}
				if tt.want != nil && (a.Status != http.StatusUnprocessableEntity || a.Code() != tt.apiCode) {
					t.Errorf("%s: API: %d %s, want 422 %s", tt.name, a.Status, a.Body, tt.apiCode)
				}
				if tt.want == nil && a.Status != http.StatusCreated {
					t.Errorf("%s: API: %d %s, want 201", tt.name, a.Status, a.Body)
				}
				if len(formCalls) != 1 || formCalls[0].op != "start" || !errors.Is(formCalls[0].err, tt.want) && formCalls[0].err != tt.want {
					t.Fatalf("%s: form reached the use case as %+v, want one start answered %v", tt.name, formCalls, tt.want)
				}
				if len(apiCalls) == 0 || !errors.Is(apiCalls[0].err, tt.want) && apiCalls[0].err != tt.want {
					t.Fatalf("%s: API reached the use case as %+v, want its rules answering %v", tt.name, apiCalls, tt.want)
				}
				if tt.want != nil {
					// A refusal: the API asked the rules before taking its
					// key, and never started anything.
					if len(apiCalls) != 1 || apiCalls[0].op != "amount" {
						t.Errorf("%s: API calls %+v, want one amount check", tt.name, apiCalls)
					}
					return
				}
				if len(apiCalls) != 2 || apiCalls[1].op != "start" || apiCalls[1].err != nil {
					t.Fatalf("%s: API calls %+v, want the amount check then one start", tt.name, apiCalls)
				}
				if formCalls[0].rials != tt.rials || apiCalls[1].rials != tt.rials {
					t.Errorf("%s: rules read the form as %d and the API as %d rials, want %d", tt.name, formCalls[0].rials, apiCalls[1].rials, tt.rials)
				}
				if n := int64(len(topuptest.Select(t, db, func(p topup.TopUp) bool { return p.AmountRials == tt.rials }))); n != 2 {
					t.Errorf("%s: %d payments of %d rials, want one from each", tt.name, n, tt.rials)
				}
			}()
		}
		// Whole tomans: the form takes tomans, so only the API can send
		// rials that are not; the same rules refuse them.
		a := api.post(routes.APITopUps, "key-odd", `{"amount_rials": 20005}`)
		if c := spy.take(); a.Status != http.StatusUnprocessableEntity || a.Code() != "amount_invalid" ||
			len(c) != 1 || !errors.Is(c[0].err, money.ErrNotWholeTomans) {
			t.Errorf("20005 rials: %d %s, use case %+v", a.Status, a.Body, c)
		}
		if n := topuptest.Count(t, db); n != 4 {
			t.Errorf("%d payments, want 4 (refusals write nothing)", n)
		}
	})
}
