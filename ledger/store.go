package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// store is what differs between the databases a ledger can live in: where
// writers serialise, whose clock judges, how waiters hear of a change, and
// which failures pass. Every decision (judging a holder, building and
// sealing an event, the fencing token) is made above it, once.
type store interface {
	// kind is "sqlite" or "postgres".
	kind() string
	// lockWriter takes the part of the writer mutex that lies outside the
	// database, before a write transaction begins.
	lockWriter(ctx context.Context) (unlock func(), err error)
	// begin starts a write transaction and takes the serialisation point
	// inside it: after begin, no other writer on any host appends.
	begin(ctx context.Context) (*sql.Tx, error)
	// clock is the time a decision or a judgement is made at.
	clock(ctx context.Context, q querier) (time.Time, error)
	// changed tells waiters elsewhere that lock changed, as part of tx.
	changed(ctx context.Context, tx execer, lock string) error
	// watch wakes a waiter when lock may have changed.
	watch(lock string) waker
	// transient reports a passing failure that a retry may clear.
	transient(err error) bool
	// shared reports whether writers on other hosts use the same ledger:
	// lock files are then this host's own projection of the locks it holds.
	shared() bool
	// cachesStatements reports whether the driver keeps prepared statements
	// itself (the ledger then does not; see preparedTx).
	cachesStatements() bool
	close() error
}

// beginWrite starts a write transaction at the serialisation point and
// reads the time its decision is made at.
func (l *Ledger) beginWrite(ctx context.Context) (*sql.Tx, time.Time, error) {
	tx, err := l.store.begin(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("ledger: begin: %w", err)
	}
	now, err := l.store.clock(ctx, tx)
	if err != nil {
		tx.Rollback()
		return nil, time.Time{}, err
	}
	return tx, now, nil
}

// BeginRead starts a read-only transaction that reads one snapshot of the
// whole ledger, events, Merkle hashes and locks table alike, without
// waiting for writers or holding them up: SQLite's deferred BEGIN in WAL
// mode, PostgreSQL's REPEATABLE READ (under READ COMMITTED every statement
// would read the writes committed since the one before).
func (l *Ledger) BeginRead(ctx context.Context) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if l.store.shared() {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return l.db.BeginTx(ctx, opts)
}

// judgeTime is the time a read judges holders at (staleness).
func (l *Ledger) judgeTime(ctx context.Context) (time.Time, error) {
	return l.store.clock(ctx, nil)
}

// waker is a waiter's wake-up source.
type waker interface {
	// wait sleeps up to d, returning early on a change or when ctx ends.
	wait(ctx context.Context, d time.Duration)
	close()
}

// sqliteStore is the embedded store: ROOT/ledger.db, serialised by the
// writer mutex (flock on ROOT/writer.flock, then BEGIN IMMEDIATE), judged by
// this host's clock, with waiters woken by inotify on ROOT/locks.
type sqliteStore struct{ l *Ledger }

func (s sqliteStore) kind() string { return "sqlite" }

func (s sqliteStore) lockWriter(ctx context.Context) (func(), error) { return s.l.flockWriter(ctx) }

// begin runs every write transaction on one connection, taken from the
// pool at the first write and kept: the statements the write path prepares
// then live on it (see preparedTx), and a CLI process, whose open leaves
// exactly one connection in the pool, never opens a second one (each
// costs the connection's settings, the schema parsed again and the WAL's
// directory opened). Callers hold the writer mutex, or are alone (open).
func (s sqliteStore) begin(ctx context.Context) (*sql.Tx, error) {
	l := s.l
	if l.wconn == nil {
		c, err := l.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		l.wconn = c
	}
	tx, err := l.wconn.BeginTx(ctx, nil)
	if err != nil {
		if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
			// A connection the driver gave up on: let it go, so that the
			// next write takes a fresh one.
			l.wconn.Close()
			l.wconn = nil
		}
		return nil, err
	}
	l.wtx = tx
	return tx, nil
}

func (s sqliteStore) clock(context.Context, querier) (time.Time, error) { return s.l.now().UTC(), nil }

func (s sqliteStore) changed(context.Context, execer, string) error { return nil }

func (s sqliteStore) watch(lock string) waker { return watchLock(s.l.files.dir, lock+".lock") }

func (s sqliteStore) transient(err error) bool { return isBusy(err) }

func (s sqliteStore) shared() bool { return false }

func (s sqliteStore) cachesStatements() bool { return false }

func (s sqliteStore) close() error { return s.l.db.Close() }
