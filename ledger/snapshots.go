package ledger

import (
	"context"
	"fmt"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// snapshotBudget bounds the events a write folds for snapshots, after its
// commit and outside the writer mutex: a write that makes one folds from
// the one before it, and a ledger that has none (one older than the
// snapshots table, or a role that could not store them) gains a few per
// write that makes one, oldest first, instead of one write paying for a
// fold of the whole log. WriteSnapshots makes them all at once.
func snapshotBudget() int64 { return 4 * store.SnapshotEvery }

// crossesSnapshot reports whether the events written end at or past a
// seq at which a snapshot is due.
func crossesSnapshot(written []*events.Event) bool {
	if len(written) == 0 {
		return false
	}
	first, last := written[0].Seq, written[len(written)-1].Seq
	return last/store.SnapshotEvery > (first-1)/store.SnapshotEvery
}

// snapshotAfterWrite makes the snapshots a write made due. They only
// save readers time, so a failure (a writer role without INSERT on
// snapshots, a busy database) is logged and the write stands.
func (l *Ledger) snapshotAfterWrite(ctx context.Context) {
	if err := l.writeSnapshots(ctx, snapshotBudget()); err != nil && ctx.Err() == nil {
		l.log.Warn("could not store a snapshot of the log's state; reads of past instants fold further until one is stored (a PostgreSQL writer role needs INSERT on snapshots)",
			"err", err)
	}
}

// WriteSnapshots stores every snapshot of the folded state that is due
// and not stored (one every store.SnapshotEvery events), folding from the
// newest stored one that checks out. Writes make them as the log grows;
// this makes them for a ledger that has none yet (a long log from before
// them), in one fold of the log. It needs a writer.
func (l *Ledger) WriteSnapshots(ctx context.Context) error {
	if l.readOnly {
		return ErrReadOnly
	}
	return l.writeSnapshots(ctx, 0)
}

func (l *Ledger) writeSnapshots(ctx context.Context, budget int64) error {
	tx, err := l.store.BeginRead(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return replay.BuildSnapshots(ctx, tx, store.SnapshotEvery, budget, func(s *store.Snapshot) error {
		err := l.update(ctx, func(w *writeTx) (error, error) {
			w.rows = true
			return nil, store.InsertSnapshot(ctx, w.q, s)
		})
		if err != nil {
			return fmt.Errorf("ledger: snapshot at seq %d: %w", s.Seq, err)
		}
		return nil
	})
}
