package idempotency

// SetCleanupBatch sets s's Cleanup batch, so that a test shows a backlog
// deleted over several statements without making thousands of rows.
func SetCleanupBatch(s *Store, n int) { s.cleanupBatch = n }
