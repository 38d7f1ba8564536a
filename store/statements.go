package store

import (
	"context"
	"database/sql"
	"sync"
)

// Statements runs a write transaction's statements through statements
// prepared once on the pool, which database/sql keeps prepared per
// connection, so that the write path does not parse the same SQL again on
// every call. A statement not prepared yet is prepared on the transaction
// once (its connection: no second one), used for every call of it there,
// and prepared on the pool by PreparePending before the next write begins:
// preparing it on the pool while the transaction holds the pool's only
// connection would open a second one (its settings applied, the schema
// parsed and the WAL opened again). Where the driver keeps prepared
// statements per connection itself (pgx), every statement runs as SQL: one
// prepared on the transaction would be deallocated at its end, one more
// round trip for each, and parsed again by the next.
type Statements struct {
	prepare func(ctx context.Context, query string) (*sql.Stmt, error)
	cached  bool // the driver caches statements itself
	calls   bool // the database has the decision functions (see LoadDecision)

	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]func(context.Context) // prepares a statement that ran as SQL
}

// NewStatements is the statement cache of s.
func NewStatements(s Store) *Statements {
	return &Statements{prepare: s.Prepare, cached: s.CachesStatements(), calls: s.DecisionCalls(),
		stmts: map[string]*sql.Stmt{}, pending: map[string]func(context.Context){}}
}

// In runs tx's statements through the cache, a decision's in the decision
// calls where the database has them: each decision is then settled
// (PreparedTx.Settle) before the next begins, and the writes kept are sent
// (PreparedTx.Flush) before the commit.
func (c *Statements) In(tx *sql.Tx) PreparedTx {
	p := PreparedTx{c: c, tx: tx, local: map[string]*sql.Stmt{}}
	if c.calls {
		p.batch = &decisionBatch{}
	}
	return p
}

// PreparePending prepares on the pool the statements that ran as SQL since
// the last call. One that does not prepare is left to run as SQL. Call it
// while no transaction holds a connection.
func (c *Statements) PreparePending(ctx context.Context) {
	if c.cached {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for query, prepare := range c.pending {
		delete(c.pending, query)
		prepare(ctx)
	}
}

// Close closes the prepared statements.
func (c *Statements) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = map[string]*sql.Stmt{}
}

// PreparedTx is a write transaction whose statements run through a
// Statements cache.
type PreparedTx struct {
	c     *Statements
	tx    *sql.Tx
	local map[string]*sql.Stmt // statements of tx, closed with it
	batch *decisionBatch       // the decision calls' state; nil without them
}

// PrepareContext is query as a statement of the transaction: from the
// statement prepared on the pool, else prepared on the transaction once
// (noted, so that PreparePending prepares it on the pool); nil where it
// runs as SQL.
func (p PreparedTx) PrepareContext(ctx context.Context, query string) *sql.Stmt {
	c := p.c
	if c.cached {
		return nil
	}
	if st := p.local[query]; st != nil {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[query]; st != nil {
		// The pool's statement on the transaction's connection, kept for
		// the transaction's other calls of it; but not one bound while
		// this call's context was done, which database/sql refuses for
		// this call alone, and which the later calls, with contexts of
		// their own, would otherwise get refused too.
		st = p.tx.StmtContext(ctx, st)
		if ctx.Err() == nil {
			p.local[query] = st
		}
		return st
	}
	c.pending[query] = func(ctx context.Context) {
		if st, err := c.prepare(ctx, query); err == nil {
			c.stmts[query] = st
		}
	}
	st, err := p.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil // runs as SQL, which reports the error
	}
	p.local[query] = st
	return st
}

func (p PreparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.flush(ctx)
	if st := p.PrepareContext(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

func (p PreparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.flush(ctx)
	if st := p.PrepareContext(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p PreparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.flush(ctx)
	if b := p.batch; b != nil {
		b.ahead, b.aheadHead = nil, nil // the statement may write what the group read
	}
	if st := p.PrepareContext(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}
