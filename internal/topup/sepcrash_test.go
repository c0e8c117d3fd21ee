package topup_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kifpool/kifpool/internal/gateway"
	"github.com/kifpool/kifpool/internal/sandbank"
	"github.com/kifpool/kifpool/internal/store"
	"github.com/kifpool/kifpool/internal/store/storetest"
	"github.com/kifpool/kifpool/internal/topup"
	"github.com/kifpool/kifpool/internal/topup/topuptest"
)

// afterFirstInquiry is a gateway at whose bank something happens right
// after our first inquiry of a token has been answered: the payer pays
// between a check's inquiry (still at the bank) and its verify.
type afterFirstInquiry struct {
	gateway.Gateway
	once sync.Once
	then func()
}

func (g *afterFirstInquiry) Inquire(ctx context.Context, token string) (gateway.InquiryResult, error) {
	r, err := g.Gateway.Inquire(ctx, token)
	g.once.Do(g.then)
	return r, err
}

// TestSEPCrashInsideTheCreditLosesNoReceipt: the e2e crash points'
// "inside the ledger" at SEP. The worker checks an open SEP payment
// while its payer pays: SEP's receipt of the token says "in progress"
// to the check's first question, and paid a moment later. The check must
// not verify a RefNum it never kept (SEP forgets the token's receipt
// once verified): then the credit's transaction dies, and the payment,
// with no RefNum on its row (or only the callback's, unconfirmed, when
// the payer's callback kept it meanwhile), could never be verified again
// — pending_verification or review, the bank's sale never credited. The
// RefNum is kept, as the bank's, before any verify that names it; after
// the crash the worker hears "already verified" and credits it, once.
func TestSEPCrashInsideTheCreditLosesNoReceipt(t *testing.T) {
	for _, callback := range []bool{false, true} {
		name := map[bool]string{false: "callback lost", true: "callback kept its RefNum meanwhile"}[callback]
		t.Run(name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				var (
					e    *env
					bank *sandbank.Bank
					p    topup.TopUp
					paid sandbank.CallbackRequest
				)
				e, bank = newBankEnvWrapped(t, db, "sep", func(g gateway.Gateway) gateway.Gateway {
					return &afterFirstInquiry{Gateway: g, then: func() {
						var err error
						if paid, err = bank.Finish(p.AuthorityString(), true); err != nil {
							t.Errorf("pay: %v", err)
							return
						}
						if callback {
							// The payer's callback keeps its RefNum (its first
							// statement) while the worker holds the lease.
							if _, err := e.store.KeepReceipt(ctx, p.ID, paid.Form["RefNum"], topup.ReceiptFromCallback); err != nil {
								t.Errorf("callback's receipt: %v", err)
							}
						}
					}}
				})
				p = e.start(150_000)
				e.store.set(func(h *hookStore) {
					h.credit = func(topup.Move) error { return errors.New("killed inside the credit's transaction") }
				})
				w := e.svc.NewWorker(topuptest.WorkerConfig())
				// Check until the bank has verified the sale: every credit dies.
				for i := 0; ; i++ {
					if bp, _ := bank.Payment(p.AuthorityString()); bp.State == sandbank.StateVerified {
						break
					}
					if i == 5 {
						t.Fatalf("the bank never verified: %s", dump(e.row(p.ID)))
					}
					e.clock.Advance(2 * time.Minute)
					if _, err := w.RunOnce(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if r := e.row(p.ID); r.Status == topup.StatusCredited || r.ReceiptString() != paid.Form["RefNum"] || !r.ReceiptConfirmed() {
					t.Fatalf("after the crash: %s, receipt %q (confirmed %v); want open with the token's RefNum %q kept as the bank's",
						dump(r), r.ReceiptString(), r.ReceiptConfirmed(), paid.Form["RefNum"])
				}
				// Restarted: the worker finishes it.
				e.store.set(func(h *hookStore) { h.credit = nil })
				e.clock.Advance(2 * time.Minute)
				if _, err := w.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				if r := e.row(p.ID); r.Status != topup.StatusCredited || e.balance() != 150_000 {
					t.Fatalf("after the restart: %s, balance %d; want credited 150,000 once", dump(r), e.balance())
				}
				if bp, _ := bank.Payment(p.AuthorityString()); bp.VerifyCount < 1 {
					t.Errorf("bank: %+v", bp)
				}
				checkInvariants(t, db)
			})
		})
	}
}
