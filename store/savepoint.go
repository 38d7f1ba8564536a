package store

import "context"

// A group of decisions shares one write transaction (and one commit), each
// decision inside a savepoint of its own: one that fails is rolled back to
// where it began, and the others stand. A decision that stands keeps its
// savepoint open, and the next one's nests inside it: releasing it would
// cost a round trip and change nothing, as a rollback to the name goes to
// the newest savepoint of that name and the commit keeps them all. Both
// engines speak the same savepoint statements.

// Savepoint marks where the next decision of a group begins.
func Savepoint(ctx context.Context, tx Execer) error {
	_, err := tx.ExecContext(ctx, `SAVEPOINT decision`)
	return err
}

// RollbackToSavepoint undoes what the decision since Savepoint wrote, and
// ends the savepoint.
func RollbackToSavepoint(ctx context.Context, tx Execer) error {
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT decision`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT decision`)
	return err
}
