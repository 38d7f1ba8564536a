package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// beginWrite starts a write transaction at the store's serialisation
// point; its failure names its kind (store.Classify), as a decision's
// does (decideGroup). The statements the last write ran unprepared are prepared first
// (store.Statements), while no transaction holds a connection, so that
// they land on the connection the transaction then takes (a CLI process
// has exactly one) instead of opening another one.
func (l *Ledger) beginWrite(ctx context.Context) (*sql.Tx, error) {
	l.stmts.PreparePending(ctx)
	tx, err := l.store.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: begin: %w", l.store.Classify(err))
	}
	return tx, nil
}

// BeginRead starts a read-only transaction that reads one snapshot of the
// whole ledger, events, Merkle hashes and locks table alike, without
// waiting for writers or holding them up.
func (l *Ledger) BeginRead(ctx context.Context) (*sql.Tx, error) {
	return l.store.BeginRead(ctx)
}

// judgeTime is the time a read judges holders at (staleness).
func (l *Ledger) judgeTime(ctx context.Context) (time.Time, error) {
	return l.store.Clock(ctx, nil)
}
