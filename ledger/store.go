package ledger

import (
	"context"
	"database/sql"
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

// begin first prepares on the pool the statements the last write ran
// unprepared (see preparedTx), while no transaction holds a connection, so
// that they land on the connection the transaction then takes (a CLI
// process has exactly one), instead of opening another one.
func (s sqliteStore) begin(ctx context.Context) (*sql.Tx, error) {
	s.l.preparePending(ctx)
	return s.l.db.BeginTx(ctx, nil)
}

func (s sqliteStore) clock(context.Context, querier) (time.Time, error) { return s.l.now().UTC(), nil }

func (s sqliteStore) changed(context.Context, execer, string) error { return nil }

func (s sqliteStore) watch(lock string) waker { return fileWaker{s.l.files.Watch(lock)} }

func (s sqliteStore) transient(err error) bool { return isBusy(err) }

func (s sqliteStore) shared() bool { return false }

func (s sqliteStore) cachesStatements() bool { return false }

func (s sqliteStore) close() error { return s.l.db.Close() }
