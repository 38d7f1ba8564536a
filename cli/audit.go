package cli

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/ledger"
)

// auditCommands are the read side of the ledger: history, timeline, who,
// replay, verify, export and project.
func auditCommands(g *globals) []*cobra.Command {
	return []*cobra.Command{newHistory(g), newTimeline(g), newWho(g), newReplay(g), newVerify(g), newExport(g), newProject(g)}
}

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

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 0 {
		return &usageError{fmt.Errorf("%s: takes no arguments, got %q", cmd.Name(), args)}
	}
	return nil
}
