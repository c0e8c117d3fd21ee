package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/kifpool/kifpool/internal/routes"
)

// 8. Mixed soak: 4 payers make whole top-ups (form, start, pay at the
// bank, callback) back to back for the soak's length, while 16 other
// payers reload their receipts (each a credited top-up of theirs) as
// fast as they are answered. The figure is the whole top-ups done: what a
// slower hot path around them (sessions, middleware, rendering) costs the
// money path on a shared machine.
func (bn *bench) scenarioSoak(ctx context.Context) error {
	const payers, readers = 4, 16
	receipts := make([]string, readers)
	prep := runLoad(ctx, "prepare", readers, readers, 0, func(ctx context.Context, _ int, i int64) error {
		u := bn.users[payers+int(i)]
		cb, err := bn.paidTopUp(ctx, u, bn.baseA)
		if err != nil {
			return err
		}
		if err := callback(ctx, u, cb, "credited"); err != nil {
			return err
		}
		pu, err := url.Parse(cb)
		if err != nil {
			return err
		}
		args, ok := routes.MatchEnd(routes.TopUpReturnPattern, pu.Path)
		if !ok {
			return fmt.Errorf("not a return address: %s", pu.Path)
		}
		receipts[i] = bn.baseA + routes.TopUpPage(args[0])
		return nil
	})
	if prep.Errors > 0 {
		return fmt.Errorf("prepare receipts: %s", prep.FirstError)
	}
	var reads Row
	var wg sync.WaitGroup
	bn.measure(bn.a, bn.baseA, fmt.Sprintf("whole top-ups in %s by %d payers while %d others reload their receipts", bn.sz.soakDur, payers, readers), func() Row {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads = runLoad(ctx, fmt.Sprintf("8 mixed soak: receipt reloads (%d conns)", readers), readers, 0, bn.sz.soakDur, func(ctx context.Context, vu int, _ int64) error {
				return callback(ctx, bn.users[payers+vu], receipts[vu], "credited")
			})
		}()
		r := runLoad(ctx, fmt.Sprintf("8 mixed soak: whole top-ups (%d payers)", payers), payers, 0, bn.sz.soakDur, func(ctx context.Context, vu int, _ int64) error {
			u := bn.users[vu]
			cb, err := bn.paidTopUp(ctx, u, bn.baseA)
			if err != nil {
				return err
			}
			return callback(ctx, u, cb, "credited")
		})
		wg.Wait()
		return r
	})
	reads.Note = "beside the whole top-ups above (serve's CPU and RSS are in that row)"
	bn.rows = append(bn.rows, reads)
	return nil
}
