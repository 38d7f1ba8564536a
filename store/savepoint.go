package store

import "context"

// A group of decisions shares one write transaction (and one commit), each
// decision inside a savepoint of its own: one that fails is rolled back to
// where it began, and the others stand. Both engines speak the same
// savepoint statements.

// Savepoint marks where the next decision of a group begins.
func Savepoint(ctx context.Context, tx Execer) error {
	_, err := tx.ExecContext(ctx, `SAVEPOINT decision`)
	return err
}

// ReleaseSavepoint keeps what the decision since Savepoint wrote.
func ReleaseSavepoint(ctx context.Context, tx Execer) error {
	_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT decision`)
	return err
}

// RollbackToSavepoint undoes what the decision since Savepoint wrote, and
// ends the savepoint.
func RollbackToSavepoint(ctx context.Context, tx Execer) error {
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT decision`); err != nil {
		return err
	}
	return ReleaseSavepoint(ctx, tx)
}
