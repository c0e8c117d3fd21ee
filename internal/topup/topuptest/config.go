package topuptest

import (
	"time"

	"github.com/kifpool/kifpool/internal/topup"
)

// Config is a topup.Config for tests: the time budgets a deployment runs
// with unless configured otherwise (the operator's settings have no
// defaults in internal/topup), a short poll and the usual limits.
func Config() topup.Config {
	return topup.Config{
		BaseURL: "http://app.test", MinRials: 10_000, MaxRials: 1_000_000_000,
		RequestTimeout: 10 * time.Second, VerifyTimeout: 12 * time.Second, RecheckDelay: 20 * time.Second,
		PollInterval: 5 * time.Millisecond, CreditedCacheSize: 10_000,
	}
}

// WorkerConfig is a topup.WorkerConfig for tests, with a deployment's
// usual tuning; a test changes what it is about.
func WorkerConfig() topup.WorkerConfig {
	return topup.WorkerConfig{
		Interval: 2 * time.Second, Concurrency: 4,
		AbandonedAfter: 2 * time.Minute, AuthorityLifetime: 20 * time.Minute,
		MaxUnknown: 2 * time.Hour, StaleCreated: time.Minute,
		BaseBackoff: 10 * time.Second, MaxBackoff: 2 * time.Minute,
	}
}
