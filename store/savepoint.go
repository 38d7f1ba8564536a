package store

import "context"

// A group of decisions shares one write transaction (and one commit), each
// decision inside a savepoint of its own: one that fails is rolled back to
// where it began, and the others stand. A decision that stands keeps its
// savepoint open, and the next one's nests inside it: releasing it would
// cost a round trip and change nothing, as a rollback to the name goes to
// the newest savepoint of that name and the commit keeps them all. Both
// engines speak the same savepoint statements. Where the decisions' writes
// are kept (see decisionBatch), nothing of a decision is in the database
// until it sends a statement: it takes its savepoint then, after the
// writes of the decisions before it, and one that sent none takes none.

// Savepoint marks where the next decision of a group begins.
func (p PreparedTx) Savepoint(ctx context.Context) error {
	if b := p.batch; b != nil {
		b.lazy, b.saved = true, false
		return nil
	}
	return savepoint(ctx, p)
}

func savepoint(ctx context.Context, tx Execer) error {
	_, err := tx.ExecContext(ctx, `SAVEPOINT decision`)
	return err
}

// RollbackToSavepoint undoes what the decision since Savepoint wrote, and
// ends the savepoint (Settle has dropped its writes not sent).
func (p PreparedTx) RollbackToSavepoint(ctx context.Context) error {
	var tx Execer = p
	if b := p.batch; b != nil {
		if !b.saved {
			return nil
		}
		b.saved, tx = false, p.tx
	}
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT decision`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT decision`)
	return err
}
