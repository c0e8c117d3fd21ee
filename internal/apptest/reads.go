package apptest

import (
	"context"
	"slices"
	"testing"

	"github.com/kifpool/kifpool/internal/apitoken"
	"github.com/kifpool/kifpool/internal/audit"
	"github.com/kifpool/kifpool/internal/charge"
	"github.com/kifpool/kifpool/internal/webhook"
)

// What an app's tests read of its state, through the services that keep
// it (the admin pages' own reads), never by SQL: every API token, every
// webhook endpoint, the audit log. A test of the web app has a handful of
// each, far under the reads' limits.

// Tokens is every user's API tokens, newest first.
func (a *App) Tokens(t testing.TB) []apitoken.Token {
	t.Helper()
	rows, err := a.Server.Tokens.All(context.Background(), "", 500)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]apitoken.Token, len(rows))
	for i, r := range rows {
		out[i] = r.Token
	}
	return out
}

// Endpoints is every user's webhook endpoints.
func (a *App) Endpoints(t testing.TB) []webhook.Endpoint {
	t.Helper()
	rows, err := a.Server.Webhooks.All(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]webhook.Endpoint, len(rows))
	for i, r := range rows {
		out[i] = r.Endpoint
	}
	return out
}

// AuditLog is the admins' audit log, newest first.
func (a *App) AuditLog(t testing.TB) []audit.Entry {
	t.Helper()
	rows, err := audit.NewLog(a.DB).List(context.Background(), audit.Query{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]audit.Entry, len(rows))
	for i, r := range rows {
		out[i] = r.Entry
	}
	return out
}

// CountAudit is how many audit entries are of one of actions (every
// entry with none).
func (a *App) CountAudit(t testing.TB, actions ...audit.Action) int64 {
	t.Helper()
	var n int64
	for _, e := range a.AuditLog(t) {
		if len(actions) == 0 || slices.Contains(actions, e.Action) {
			n++
		}
	}
	return n
}

// Deliveries is every webhook delivery of every endpoint, newest first
// per endpoint.
func (a *App) Deliveries(t testing.TB) []webhook.Delivery {
	t.Helper()
	var out []webhook.Delivery
	for _, e := range a.Endpoints(t) {
		ds, err := a.Server.Webhooks.Deliveries(context.Background(), e.ID, 500)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ds...)
	}
	return out
}

// Charges is every merchant's charges, newest first, each with its
// refunds (the admin console's reads).
func (a *App) Charges(t testing.TB) []charge.Charge {
	t.Helper()
	ctx := context.Background()
	rows, err := a.Server.Charges.Search(ctx, "", 200)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]charge.Charge, len(rows))
	for i, r := range rows {
		if out[i], err = a.Server.Charges.Admin(ctx, r.PublicID); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// ChargeRows counts every charge and every refund of one.
func (a *App) ChargeRows(t testing.TB) (charges, refunds int) {
	t.Helper()
	cs := a.Charges(t)
	for _, c := range cs {
		refunds += len(c.Refunds)
	}
	return len(cs), refunds
}
