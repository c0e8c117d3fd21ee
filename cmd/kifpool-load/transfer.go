package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/kifpool/kifpool/internal/ledger"
	"github.com/kifpool/kifpool/internal/routes"
)

// apiUser is a seeded user with a personal API token (scope transfer, or
// topup for the top-up replay) and the address others send to.
type apiUser struct {
	email   string
	token   string
	account int64
}

// 9. Transfer: POST /api/v1/transfers with an Idempotency-Key, through
// HTTP to commit (the page's and the API's one use case: the transfer's
// row, the ledger transaction and the outbox in one database
// transaction), between 1,000 funded wallets at the ledger scenario's
// concurrency, measured in the same run against the ledger's pgbench
// script (internal/ledger/transfer.pgbench, the ledger's own SQL) on the
// same wallets: random pairs, then 90 % of transfers with one hot
// account on one side. Then replays: the same key and body sent again
// (the stored answer), beside a top-up's replay the same way.
func (bn *bench) scenarioTransfer(ctx context.Context) error {
	users, err := bn.seedAPIUsers(ctx, ledgerWallets, "transfer", "transfer")
	if err != nil {
		return fmt.Errorf("seed users: %w", err)
	}
	accounts := make([]int64, len(users))
	byAccount := make(map[int64]int, len(users))
	for i, u := range users {
		accounts[i], byAccount[u.account] = u.account, i
	}
	first, hot := accounts[0], accounts[0]
	dur := bn.sz.ledgerDur
	var pgUniform, appUniform Row
	for k, hotPct := range []int{0, ledgerHotPct} {
		label := "random pairs"
		if hotPct > 0 {
			label = fmt.Sprintf("%d%% touch one account", hotPct)
		}
		if err := bn.vacuumLedger(ctx); err != nil {
			return err
		}
		pg, err := bn.pgbench(ctx, ledgerConc, dur, map[string]string{
			"first": strconv.FormatInt(first, 10), "wallets": strconv.Itoa(len(accounts)), "hot": strconv.FormatInt(hot, 10),
			"hotpct": strconv.Itoa(hotPct), "kind": string(ledger.KindTransfer), "at": time.Now().UTC().Format(time.RFC3339Nano),
		})
		if err != nil {
			return fmt.Errorf("pgbench: %w", err)
		}
		pg.Scenario = "9 transfer, " + label + ": pgbench (ledger SQL)"
		bn.addRow(pg)
		if err := bn.vacuumLedger(ctx); err != nil {
			return err
		}
		rngs := make([]*rand.Rand, ledgerConc)
		for vu := range rngs {
			rngs[vu] = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(vu))) // #nosec G404 -- picks bench pairs, no secret
		}
		run := time.Now().UnixNano()
		app := bn.measure(bn.a, bn.baseA, "", func() Row {
			return runLoad(ctx, "9 transfer, "+label+": POST /api/v1/transfers", ledgerConc, 0, dur, func(ctx context.Context, vu int, i int64) error {
				from, to := pair(rngs[vu], accounts, hot, hotPct)
				body := fmt.Sprintf(`{"to_email": %q, "amount_rials": %d}`, users[byAccount[to]].email, 10_000+10*rngs[vu].Int64N(100))
				_, err := bn.apiPost(ctx, users[byAccount[from]].token, routes.APITransfers, fmt.Sprintf("bench-%d-%d", run, i), body, http.StatusCreated)
				return err
			})
		})
		if pg.Throughput > 0 {
			bn.rows[len(bn.rows)-1].Note = fmt.Sprintf("%.2f × pgbench", app.Throughput/pg.Throughput)
		}
		if k == 0 {
			pgUniform, appUniform = pg, app
			bn.notes = append(bn.notes, fmt.Sprintf("transfer over HTTP, random pairs: %.2f × pgbench (%.0f vs %.0f transfers/s; goal ≥ 0.5); p50 %.1f ms, p99 %.1f ms",
				ratio(app.Throughput, pg.Throughput), app.Throughput, pg.Throughput, app.P50MS, app.P99MS),
				"transfer over HTTP, random pairs: "+cpuPer(app, "serve")+"; pgbench: "+cpuPer(pg, ""))
			continue
		}
		bn.notes = append(bn.notes, fmt.Sprintf("transfer over HTTP, %d%% on one account: %.2f × pgbench's random pairs (%.0f vs %.0f; goal ≥ 0.3), %.2f × its own random pairs (no collapse: ≥ 0.33); p50 %.1f ms, p99 %.1f ms; pgbench itself %.0f",
			hotPct, ratio(app.Throughput, pgUniform.Throughput), app.Throughput, pgUniform.Throughput,
			ratio(app.Throughput, appUniform.Throughput), app.P50MS, app.P99MS, pg.Throughput))
	}

	// Replays: one key and body sent again and again, answered from the
	// idempotency record; the same for a top-up.
	sender := users[1]
	replayBody := fmt.Sprintf(`{"to_email": %q, "amount_rials": 10000}`, users[2].email)
	if _, err := bn.apiPost(ctx, sender.token, routes.APITransfers, "replay-transfer", replayBody, http.StatusCreated); err != nil {
		return err
	}
	payers, err := bn.seedAPIUsers(ctx, 1, "topup", "topup")
	if err != nil {
		return err
	}
	topUpBody := `{"amount_rials": 10000}`
	if _, err := bn.apiPost(ctx, payers[0].token, routes.APITopUps, "replay-topup", topUpBody, http.StatusCreated); err != nil {
		return err
	}
	// Two rounds, in both orders: the machine's load moves between runs.
	const conns = 50
	replay := func(kind, token, path, key, body string) Row {
		return bn.measure(bn.a, bn.baseA, "", func() Row {
			return runLoad(ctx, fmt.Sprintf("9 replay: %s, same key (%d conns)", kind, conns), conns, 0, bn.sz.replayDur, func(ctx context.Context, vu int, i int64) error {
				_, err := bn.apiPost(ctx, token, path, key, body, http.StatusCreated)
				return err
			})
		})
	}
	var tr, tu [2]Row
	tr[0] = replay("transfer", sender.token, routes.APITransfers, "replay-transfer", replayBody)
	tu[0] = replay("top-up", payers[0].token, routes.APITopUps, "replay-topup", topUpBody)
	tu[1] = replay("top-up", payers[0].token, routes.APITopUps, "replay-topup", topUpBody)
	tr[1] = replay("transfer", sender.token, routes.APITransfers, "replay-transfer", replayBody)
	for k := range 2 {
		bn.notes = append(bn.notes, fmt.Sprintf("idempotency replay, round %d: transfer %.0f/s (p50 %.1f ms, p99 %.1f ms) vs top-up %.0f/s (p50 %.1f ms, p99 %.1f ms): %.2f × (goal ≥ 1)",
			k+1, tr[k].Throughput, tr[k].P50MS, tr[k].P99MS, tu[k].Throughput, tu[k].P50MS, tu[k].P99MS, ratio(tr[k].Throughput, tu[k].Throughput)))
	}
	return nil
}

// apiPost sends a POST with a bearer token and an Idempotency-Key and
// wants status back; it returns the body.
func (bn *bench) apiPost(ctx context.Context, token, path, key, body string, status int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, bn.baseA+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: bn.tr, Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != status {
		return b, fmt.Errorf("POST %s: %d %s", path, res.StatusCode, b)
	}
	return b, nil
}

// seedAPIUsers makes n users (prefix1@…, prefix2@…) with wallets and
// their accounts (ids contiguous, as the pgbench script picks them by
// range), each funded by a credited top-up, and an API token of scope
// each; it returns them in account order.
func (bn *bench) seedAPIUsers(ctx context.Context, n int, prefix, scope string) ([]apiUser, error) {
	rows, err := bn.pool.Query(ctx, `WITH u AS (
			INSERT INTO users (email, password_hash, role, locale, created_at, email_verified_at)
			SELECT $2 || g || '@example.com', 'x', 'user', 'en', now(), now() FROM generate_series(1, $1::int) g RETURNING id, email),
		w AS (INSERT INTO wallets (user_id, created_at, updated_at) SELECT id, now(), now() FROM u ORDER BY id RETURNING id, user_id),
		a AS (INSERT INTO ledger_accounts (kind, code, wallet_id, user_id, may_go_negative, created_at, updated_at)
			SELECT 'wallet', 'wallet:' || id, id, user_id, FALSE, now(), now() FROM w ORDER BY id RETURNING id, user_id)
		SELECT a.id, u.id, u.email FROM a JOIN u ON u.id = a.user_id ORDER BY a.id`, n, prefix)
	if err != nil {
		return nil, err
	}
	var out []apiUser
	var ids, uids []int64
	for rows.Next() {
		var u apiUser
		var uid int64
		if err := rows.Scan(&u.account, &uid, &u.email); err != nil {
			rows.Close()
			return nil, err
		}
		out, ids, uids = append(out, u), append(ids, u.account), append(uids, uid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != n || out[n-1].account-out[0].account != int64(n-1) {
		return nil, fmt.Errorf("%d wallet accounts: not one range", len(out))
	}
	for i := range out {
		var b [32]byte
		_, _ = crand.Read(b[:])
		out[i].token = "kp_" + base64.RawURLEncoding.EncodeToString(b[:])
		sum := sha256.Sum256([]byte(out[i].token))
		if _, err := bn.pool.Exec(ctx, `INSERT INTO api_tokens (user_id, name, token_hash, prefix, scope, created_at, expires_at)
			VALUES ($1, 'bench', $2, $3, $4, now(), now() + interval '1 day')`, uids[i], hex.EncodeToString(sum[:]), out[i].token[:9], scope); err != nil {
			return nil, err
		}
	}
	refBase := map[string]int64{"transfer": 600_000_000, "topup": 650_000_000}[prefix]
	if err := bn.seedTopUps(ctx, ids, 1, ledgerFunds, "seed"+prefix, refBase); err != nil {
		return nil, err
	}
	if _, err := bn.pool.Exec(ctx, `VACUUM ANALYZE users, ledger_accounts, ledger_transactions, ledger_postings`); err != nil {
		return nil, err
	}
	return out, nil
}
