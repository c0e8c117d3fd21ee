// Package scenario holds the web app's cross-cutting HTTP scenarios: tests
// that drive the whole app (apptest.Start: every feature, the middleware,
// a database, a bank) through journeys no single feature owns — a top-up
// from the form to the bank and back under concurrency and forgery
// (flow), every route by role and method (matrix), the bank hanging or
// failing at each step (resilience, request timeouts), what a credit costs
// in SQL statements (creditcost), the pages that say how long to wait,
// the support contacts on every page, and the round-trip benchmarks.
//
// Why a package of its own: each feature's tests live beside its handlers
// (web/account, web/wallet, web/pay, web/admin, web/api), and web's own
// beside its middleware; a scenario across features belongs to none of
// them, and here they share nothing with any one feature's tests. They
// run as HTTP clients only: no raw SQL, typed reads from the packages
// that hold the data (topuptest, ledgertest, storetest).
//
// The package has no code besides this comment.
package scenario
