package cli

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// reader is an open ledger and a read-only transaction on it: one snapshot
// of the database, taken without the writer lock (see ledger.BeginRead).
type reader struct {
	g  *globals
	l  *ledger.Ledger
	tx *sql.Tx
}

func (g *globals) openRead(ctx context.Context) (*reader, error) {
	l, err := g.open(ctx, reads)
	if err != nil {
		return nil, err
	}
	tx, err := l.BeginRead(ctx)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("ledger: read: %w", err)
	}
	return &reader{g: g, l: l, tx: tx}, nil
}

func (r *reader) close() {
	_ = r.tx.Rollback()
	r.g.finish(r.l)
}

// archivedNote says, for a read of a pruned log, that it reads only the
// live log and which archive holds the events before it ("" when nothing
// was pruned).
func archivedNote(ctx context.Context, r *reader) string {
	a, err := replay.LastPrune(ctx, r.tx)
	if err != nil || a == nil {
		return ""
	}
	return fmt.Sprintf("events below seq %d are archived (archive sha256 %s, recorded by ledger_pruned at seq %d): this reads the live log, from seq %d",
		a.BelowSeq, a.ArchiveSHA256, a.MarkerSeq, a.BelowSeq)
}
