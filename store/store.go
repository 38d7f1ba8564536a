// Package store is what the ledger asks of the database it lives in, and
// nothing else: where writers serialise, whose clock judges, how waiters
// hear of a change, which failures pass, whether many hosts write, and
// the engine's own storage check. Every decision (judging a holder,
// sealing an event, the fencing token) is made above it, once, in package
// ledger, with the SQL written once in the dialect both engines speak.
// One package per engine implements Store: store/sqlite (ROOT/ledger.db)
// and store/postgres (a database many hosts share). docs/architecture.md
// shows where each guarantee is enforced.
package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lockledger/lockledger/verify"
)

// Querier reads: a *sql.DB or a *sql.Tx.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Execer writes: a *sql.DB or a *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Waker wakes a waiter when the lock it watches may have changed.
type Waker interface {
	// Wait sleeps up to d, returning early on a change or when ctx ends.
	Wait(ctx context.Context, d time.Duration)
	Close()
}

// Store is one open ledger database.
type Store interface {
	// Querier reads outside a transaction, from the engine's Pool (which
	// every engine embeds; it also prepares the write path's statements).
	Querier
	// Prepare prepares one of the write path's statements on the pool
	// (Statements keeps them).
	Prepare(ctx context.Context, query string) (*sql.Stmt, error)
	// NewLedgerID gives a new ledger its id (see Pool.NewLedgerID).
	NewLedgerID(ctx context.Context, id string, created time.Time) (string, error)
	// Begin starts a write transaction and takes the serialisation point
	// inside it: after Begin, no other writer on any host appends.
	Begin(ctx context.Context) (*sql.Tx, error)
	// BeginRead starts a read-only transaction that reads one snapshot of
	// the whole ledger without waiting for writers or holding them up.
	BeginRead(ctx context.Context) (*sql.Tx, error)
	// Clock is the time a decision or a judgement is made at, read in q
	// (nil: outside a transaction).
	Clock(ctx context.Context, q Querier) (time.Time, error)
	// Changed tells waiters elsewhere that locks changed, as part of tx
	// (all in one statement: a group's decisions tell theirs at once).
	Changed(ctx context.Context, tx Execer, locks []string) error
	// Watch wakes a waiter when lock may have changed.
	Watch(lock string) Waker
	// WatchLog wakes a reader of the log when events may have been
	// appended. It watches from the moment it returns: a reader that calls
	// it before reading misses no append committed after that read.
	WatchLog(ctx context.Context) (Waker, error)
	// Classify is err, or err naming the kinds of failure this engine
	// sees in it (ErrTransient, ErrUnreachable, ErrPermissionDenied, see
	// Classified): the ledger, and its callers, then tell them with
	// errors.Is without knowing which engine answered.
	Classify(err error) error
	// ManyHosts reports whether writers on other hosts use the same
	// ledger: lock files are then each host's own projection of the locks
	// it holds.
	ManyHosts() bool
	// CachesStatements reports whether the driver keeps prepared
	// statements itself (the ledger then does not).
	CachesStatements() bool
	// DecisionCalls reports whether the database has the decision
	// functions: a group's reads and writes then go in one call each
	// (LoadDecision).
	DecisionCalls() bool
	// Source names the database for messages (never with a password).
	Source() string
	// CheckStorage adds to rep what the engine finds wrong with the
	// database itself: damaged pages (as much of the file as level
	// reads), missing or altered append-only guards.
	CheckStorage(ctx context.Context, q Querier, level StorageCheck, rep *verify.Report) error
	// Size is the database's size in bytes (SQLite: its pages; PostgreSQL:
	// the events table with its indexes).
	Size(ctx context.Context) (int64, error)
	// Compact gives the space of deleted rows back to the file system
	// (SQLite: VACUUM; PostgreSQL: nothing, its autovacuum reuses it).
	Compact(ctx context.Context) error
	// FollowCopiedIDs makes the checkpoint ids copied in tx take effect:
	// the next checkpoint's id follows them.
	FollowCopiedIDs(ctx context.Context, tx Execer) error
	// Close closes the database.
	Close() error
	// Detach is Close for a process about to exit: what is left to do is
	// left to the operating system, within a bound.
	Detach() error
}

// Errors an engine's open reports; package ledger re-exports them.
var (
	// ErrNoLedger: a read-only open found no ledger.
	ErrNoLedger = errors.New("no ledger")
	// ErrNotALedger: the database is another application's, or its text
	// is not UTF-8; nothing is added to it.
	ErrNotALedger = errors.New("not a lockledger ledger")
	// ErrLedgerGone: the database shows that it held a ledger, or holds
	// another one than the writer's; a new ledger there would restart
	// fencing tokens at 1, so none is created.
	ErrLedgerGone = errors.New("this root held a ledger")
	// ErrOldSchema: a read-only open found a database that needs
	// migrating first (a writable open migrates it).
	ErrOldSchema = errors.New("ledger schema needs upgrading")
	// ErrMayNotAppend: a writer's open or write found that its role may
	// not append events (one that may only read); nothing was written.
	ErrMayNotAppend = errors.New("this role may not append events")
)

// The kinds of failure an engine names on an error (Store.Classify). An
// error of a kind still says what it said (its text and errors.As reach
// the engine's own error): the kind only adds what errors.Is finds.
var (
	// ErrTransient: a passing failure that a retry may clear (the database
	// busy, a serialisation failure, a connection lost or refused).
	ErrTransient = errors.New("a passing failure of the database")
	// ErrUnreachable: the database out of reach for now (a session the
	// server ended, a connection lost or refused: a restart or failover);
	// always ErrTransient too. A SQLite file is never out of reach.
	ErrUnreachable = errors.New("the database is out of reach")
	// ErrPermissionDenied: the database refused a statement for a right
	// the role lacks.
	ErrPermissionDenied = errors.New("the role lacks a right")
)

// Classified is err naming kinds (ErrTransient, ErrUnreachable,
// ErrPermissionDenied) besides what it wraps, its text unchanged; nil
// stays nil, and err with no kind is itself.
func Classified(err error, kinds ...error) error {
	if err == nil || len(kinds) == 0 {
		return err
	}
	return &classified{err: err, kinds: kinds}
}

type classified struct {
	err   error
	kinds []error
}

func (c *classified) Error() string { return c.err.Error() }

func (c *classified) Unwrap() []error { return append([]error{c.err}, c.kinds...) }

// StorageCheck is how much of the database CheckStorage reads.
type StorageCheck int

const (
	// StorageQuick: SQLite's quick_check (every page, not the indexes
	// against their tables), and the guards.
	StorageQuick StorageCheck = iota
	// StorageFull: SQLite's integrity_check, and the guards.
	StorageFull
	// StorageGuards: the append-only guards only, no page of the file (a
	// check of the events after a verified head reads no more).
	StorageGuards
)
