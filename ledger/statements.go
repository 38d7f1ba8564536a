package ledger

// The statements of a write transaction, prepared once per process.

import (
	"context"
	"database/sql"
	"errors"

	"github.com/lockledger/lockledger/store"
)

// querier reads and execer writes: a *sql.DB, a *sql.Tx or a preparedTx.
type (
	querier = store.Querier
	execer  = store.Execer
)

// preparedTx runs a write transaction's statements through statements the
// ledger prepares once on the pool, which database/sql keeps prepared per
// connection, so that the write path does not parse the same SQL again on
// every call. A statement not prepared yet runs through the transaction as
// SQL and is prepared before the next write begins (see beginWrite):
// preparing it on the pool now, while the transaction holds the pool's only
// connection, would open a second one (its settings applied, the schema
// parsed and the WAL opened again).
type preparedTx struct {
	l  *Ledger
	tx *sql.Tx
}

// errUnprepared: the statement runs through the transaction as SQL.
var errUnprepared = errors.New("ledger: statement not prepared yet")

// PrepareContext is query as a statement of tx, from the statement prepared
// on the pool. It fails with errUnprepared where the statement runs through
// tx as SQL: one not prepared yet (it is noted, for preparePending), or a
// driver that caches statements per connection itself (pgx; a statement
// prepared on the transaction would be deallocated at its end, one more
// round trip for each, and parsed again by the next).
func (p preparedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	l := p.l
	if l.store.CachesStatements() {
		return nil, errUnprepared
	}
	l.stmtMu.Lock()
	st := l.stmts[query]
	if st == nil {
		if l.pending == nil {
			l.pending = map[string]func(context.Context) error{}
		}
		l.pending[query] = func(ctx context.Context) error {
			st, err := l.store.DB().PrepareContext(ctx, query)
			if err == nil {
				l.stmts[query] = st
			}
			return err
		}
	}
	l.stmtMu.Unlock()
	if st == nil {
		return nil, errUnprepared
	}
	return p.tx.StmtContext(ctx, st), nil
}

// preparePending prepares on the pool the statements noted by
// PrepareContext. One that does not prepare is left to run as SQL.
func (l *Ledger) preparePending(ctx context.Context) {
	l.stmtMu.Lock()
	defer l.stmtMu.Unlock()
	for query, prepare := range l.pending {
		delete(l.pending, query)
		if l.stmts[query] != nil {
			continue
		}
		if l.stmts == nil {
			l.stmts = map[string]*sql.Stmt{}
		}
		_ = prepare(ctx)
	}
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, err := p.PrepareContext(ctx, query); err == nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}
