package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kifpool/kifpool/internal/auth/authtest"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/transfer"
)

// A sender who could not make the transfer anyway (a short balance, no
// wallet, the day's limit reached) is refused alike whatever the address:
// unknown, unconfirmed, another person's or their own. Whether an address
// has an account is never told by a refusal that takes nothing of the
// unknown-recipient allowance (the callers count ErrRecipientNotFound
// only), through Quote (the confirmation step), Send (the page's Send)
// and SendKeyed (the API), and nothing is written.
func TestShortSenderLearnsNothingOfTheRecipient(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, transfer.Config{MinRials: 10_000, DailyMaxRials: 300_000})
		f.keyed()
		ctx := context.Background()
		f.user("bob@example.com", 0)
		authtest.Register(t, db, "carol@example.com") // not confirmed
		empty := f.user("empty@example.com", 0)
		poor := f.user("poor@example.com", 50_000)
		noWallet := f.user("nowallet@example.com", 0)
		f.dropWallet(noWallet)
		spent := f.user("spent@example.com", 1_000_000)
		if _, err := f.svc.Send(ctx, req(spent, "bob@example.com", 300_000)); err != nil {
			t.Fatal(err)
		}
		tables := []string{"transfers", "ledger_transactions", "ledger_postings", "transfer_daily_totals", "idempotency_keys", "webhook_deliveries"}
		for i, tc := range []struct {
			name   string
			sender person
			rials  int64
			want   error
		}{
			{"zero balance", empty, 20_000, transfer.ErrInsufficientFunds},
			{"short balance", poor, 60_000, transfer.ErrInsufficientFunds},
			{"no wallet", noWallet, 20_000, transfer.ErrInsufficientFunds},
			{"the day's limit reached", spent, 10_000, transfer.ErrDailyLimit},
		} {
			for j, to := range []string{"nobody@example.com", "bob@example.com", "carol@example.com", tc.sender.Email} {
				t.Run(tc.name+" to "+to, func(t *testing.T) {
					before := storetest.Rows(t, db, tables...)
					r := req(tc.sender, to, tc.rials)
					if _, err := f.svc.Quote(ctx, r); !errors.Is(err, tc.want) {
						t.Errorf("quote: %v, want %v", err, tc.want)
					}
					if _, err := f.svc.Send(ctx, r); !errors.Is(err, tc.want) {
						t.Errorf("send: %v, want %v", err, tc.want)
					}
					if _, err := f.svc.SendKeyed(ctx, r, apiKey(tc.sender, fmt.Sprintf("k-%d-%d", i, j), r)); !errors.Is(err, tc.want) {
						t.Errorf("send keyed: %v, want %v", err, tc.want)
					}
					if after := storetest.Rows(t, db, tables...); fmt.Sprint(after) != fmt.Sprint(before) {
						t.Errorf("a refusal wrote: %v → %v", before, after)
					}
				})
			}
		}
		// With the money, the same addresses are told apart (the
		// allowance's business): the refusals above were the sender's.
		if _, err := f.svc.Send(ctx, req(poor, "nobody@example.com", 20_000)); !errors.Is(err, transfer.ErrRecipientNotFound) {
			t.Fatalf("an unknown address, the balance enough: %v", err)
		}
		if _, err := f.svc.Send(ctx, req(poor, "bob@example.com", 20_000)); err != nil {
			t.Fatalf("bob, the balance enough: %v", err)
		}
		f.checkInvariants()
	})
}
