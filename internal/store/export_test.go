package store

import "context"

// SchemaLockID exposes PerSchemaLock's advisory lock id to the tests.
func (db *DB) SchemaLockID(ctx context.Context) (int64, error) { return db.schemaLockID(ctx) }
