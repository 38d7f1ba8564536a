package invocation

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// Reader is an open ledger and a read-only transaction on it: one snapshot
// of the database, taken without the writer lock (see ledger.BeginRead).
type Reader struct {
	g      *Globals
	Ledger *ledger.Ledger
	Tx     *sql.Tx
}

// Reading runs read on one snapshot of the ledger: opened for Reads, and
// read in one read-only transaction, rolled back after.
func (g *Globals) Reading(ctx context.Context, read func(*Reader) error) error {
	l, err := g.Open(ctx, Reads)
	if err != nil {
		return err
	}
	tx, err := l.BeginRead(ctx)
	if err != nil {
		l.Close()
		return fmt.Errorf("ledger: read: %w", err)
	}
	defer g.Finish(l)
	defer func() { _ = tx.Rollback() }()
	return read(&Reader{g: g, Ledger: l, Tx: tx})
}

// NoteArchived says on stderr, for a read of a pruned log, what
// ArchivedNote says.
func (r *Reader) NoteArchived(ctx context.Context) {
	if n := ArchivedNote(ctx, r); n != "" {
		r.g.Sayf("note: %s", n)
	}
}

// ArchivedNote says, for a read of a pruned log, that it reads only the
// live log and which archive holds the events before it ("" when nothing
// was pruned).
func ArchivedNote(ctx context.Context, r *Reader) string {
	a, err := replay.LastPrune(ctx, r.Tx)
	if err != nil || a == nil {
		return ""
	}
	return fmt.Sprintf("events below seq %d are archived (archive sha256 %s, recorded by ledger_pruned at seq %d): this reads the live log, from seq %d",
		a.BelowSeq, a.ArchiveSHA256, a.MarkerSeq, a.BelowSeq)
}

// ReadInput reads at most limit bytes of the file at path, or of standard
// input when path is "-"; a file that cannot be opened is bad input naming
// field.
func (g *Globals) ReadInput(field, path string, limit int64) ([]byte, error) {
	var r io.Reader = g.IO.In
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, events.Invalid(field, path, "cannot be read: "+ErrText(err))
		}
		defer f.Close()
		r = f
	}
	return io.ReadAll(io.LimitReader(r, limit))
}
