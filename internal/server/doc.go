// Package server assembles a running Kifpool from its configuration: the
// gateway drivers, the sandbox bank (when it is the gateway), the domain
// services, the web app and the background loops. `kifpool serve` and the
// integration tests build the app through New.
//
// New only orders the parts; each part has its own constructor, which
// returns a small struct and is tested on its own:
//
//   - newGateways (gateways.go): the configuration's drivers, or the
//     options' replacements, each behind its resilient caller and breaker
//     (GATEWAY_*, BREAKER_*), the sandbox bank, the clearing accounts.
//   - newObservability (observability.go): the metrics, read at scrape
//     time. Logs are the options' logger, one component each; the
//     profiler (PPROF_ADDR) is serve's own listener, in cmd/kifpool.
//   - newMail (mail.go): the mail queue over SMTP_URL, or a folder.
//   - newUseCases (usecases.go): the payment service and worker, accounts,
//     wallets, tokens, limits, the top-up start, idempotency keys and the
//     webhook sender.
//   - newWeb (web.go): the one function that fills web.Deps.
//
// One payment store (sqlstore.New) and one ledger serve the whole
// instance. Settings come from config.Config alone: their defaults are
// the configuration table's (internal/config), never a fallback here;
// Options carry only dependencies a test replaces (a nil one is
// production's).
//
// Every background loop (background.go) runs on lifecycle.Loop: the
// worker, reconciliation, mail, webhooks, idempotency keys, holds and
// retention, each with its period from the configuration, the mail and
// webhook loops also woken by their queues' Kick. Options.Ticks lets a
// test drive them without real time. The clock's re-sync loop
// (store.Clock.Run) is started by serve beside them, on the same helper.
package server
