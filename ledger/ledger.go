// Package ledger holds the lock decisions: it decides every lock action
// under one writer at a time, appends each decision as a schema-validated,
// hash-chained event, and keeps the locks table and the lock files in
// ROOT/locks as projections of the event log. The database it lives in is
// a store.Store (store/sqlite or store/postgres, picked in open.go); the
// files are internal/lockfile's. docs/architecture.md shows the write path
// and where each guarantee is enforced.
//
// Lifecycle: Open, then any number of operations from any goroutines, then
// Close. Every operation takes a context first.
package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/store"
)

// Defaults, checked by Open.
const (
	DefaultTTL         = 900 * time.Second
	DefaultBusyTimeout = 10 * time.Second
	MaxTTL             = 365 * 24 * time.Hour
)

// File names inside the root.
const (
	DBFile    = "ledger.db"
	LocksDir  = lockfile.LocksName
	WriterMux = lockfile.MutexName
)

type config struct {
	now      func() time.Time
	busy     time.Duration
	logger   *slog.Logger
	host     *Host
	probe    proc.Probe
	create   bool
	readOnly bool
	openWait time.Duration
	signing  signing
	trust    trustConfig
	database string
	poolSize int
	group    *int // WithGroup
	pin      store.PinPolicy
}

// Option configures Open.
type Option func(*config) error

// WithClock replaces time.Now (tests, replays).
func WithClock(now func() time.Time) Option {
	return given("WithClock", now == nil, func(c *config) { c.now = now })
}

// given is the option named name that applies set, refused when its
// argument is nil.
func given(name string, isNil bool, set func(*config)) Option {
	return checked(isNil, errors.New("ledger: "+name+"(nil)"), set)
}

// checked is the option that applies set, refused with err when bad.
func checked(bad bool, err error, set func(*config)) Option {
	return func(c *config) error {
		if bad {
			return err
		}
		set(c)
		return nil
	}
}

// WithBusyTimeout bounds how long an operation waits for the database and
// for the writer mutex while no other writer commits before it fails with
// a transient error; behind writers that commit, it waits its turn.
func WithBusyTimeout(d time.Duration) Option {
	return checked(d < time.Millisecond, fmt.Errorf("ledger: busy timeout %s: must be at least 1ms", d), func(c *config) { c.busy = d })
}

// WithLogger sets the logger for warnings (drift repaired, foreign files).
func WithLogger(l *slog.Logger) Option {
	return given("WithLogger", l == nil, func(c *config) { c.logger = l })
}

// WithHost overrides the host identity (tests).
func WithHost(h Host) Option {
	err := checkHostID("host id", h.ID)
	if h.ID == "" {
		err = errors.New("ledger: WithHost: empty host id")
	}
	return checked(err != nil, err, func(c *config) { c.host = &h })
}

// WithProcessProbe overrides how liveness of local pids is checked (tests).
func WithProcessProbe(p proc.Probe) Option {
	return given("WithProcessProbe", p == nil, func(c *config) { c.probe = p })
}

// WithOpenWait lets Open wait up to d (instead of the busy timeout) for a
// database too busy to open, as when many processes open a fresh root at
// once; commands told to wait for their lock give it the same budget.
func WithOpenWait(d time.Duration) Option {
	return checked(d < 0, fmt.Errorf("ledger: WithOpenWait(%s): must not be negative", d), func(c *config) { c.openWait = d })
}

// WithPoolSize bounds the connections to a PostgreSQL ledger (default
// DefaultPoolSize); the CLI, one command per process, uses 2.
func WithPoolSize(n int) Option {
	return checked(n < 1 || n > 1000, fmt.Errorf("ledger: WithPoolSize(%d): must be between 1 and 1000", n), func(c *config) { c.poolSize = n })
}

// MustExist makes Open fail with ErrNoLedger instead of creating a ledger.
func MustExist() Option {
	return func(c *config) error { c.create = false; return nil }
}

// ReadOnly opens an existing ledger for reading only, as the audit and
// status commands do: no ledger file is created, migrated or locked (only
// SQLite's own -wal and -shm files, where the directory is writable), every
// write fails with ErrReadOnly, and a root on read-only media or with
// read-only permissions (an archived copy) can be read. A database that
// needs migrating fails with ErrOldSchema.
func ReadOnly() Option {
	return func(c *config) error { c.create, c.readOnly, c.pin = false, true, store.PinNone; return nil }
}

// Ledger is an open lock ledger. It is safe for concurrent use.
type Ledger struct {
	root     string
	store    store.Store
	files    *lockfile.Dir // ROOT and ROOT/locks, opened once
	now      func() time.Time
	busy     time.Duration
	log      *slog.Logger
	host     Host
	probe    proc.Probe
	id       string
	genesis  string
	readOnly bool
	signing  signing

	stmts *store.Statements // the write path's prepared statements

	mu               sync.Mutex // in-process half of the writer mutex (flock is per open file)
	writes           writeQueue // the decisions on locks waiting for the writer mutex, made in groups
	publishing       publishing // the worker that publishes a write's checkpoint (publishLater)
	flock            *lockfile.Mutex
	seen             atomic.Int64 // the seq of the newest head this process saw (-1: none), which a busy wait measures progress from (awaitWriter)
	closed           bool
	pinned, rollback *lockfile.Pin          // the root's pin, kept at close (nil: a reader); the one store.PinAccept overrode
	trust            *trusted               // the trust store's pin this writer is checked against (trust.go); nil: none
	behind           *store.RolledBackError // a reader's: the ledger is not the one the root's pin allows (store.LookPin)
	accepted         atomic.Bool            // a Project run recorded the rollback (l.rollback): the pin may move to it at close
}

// Behind reports, for a ledger opened ReadOnly, why a writer at this root
// would refuse it: another ledger, or an older state or another history
// of the one this host wrote to (a restore or a rollback). Nil when the
// root's pin allows it, or for a writer (which is refused at open).
func (l *Ledger) Behind() *store.RolledBackError { return l.behind }

// loadID reads the ledger's id, and gives a new ledger one where newLedger
// allows a new ledger and no event was ever appended.
func (l *Ledger) loadID(ctx context.Context, newLedger func() error) error {
	id, err := store.LedgerID(ctx, l.store)
	if errors.Is(err, sql.ErrNoRows) {
		id, err = l.newID(ctx, newLedger)
	}
	if err != nil {
		return err
	}
	l.id = id
	l.genesis = events.Genesis(l.id)
	return nil
}

// newID is the id of a ledger that had none when loadID read it: a new
// one where the log holds no events, else the one another first open gave
// it since (an id is committed before any event, so it is there once its
// events are), else none: the ledger's id is gone (ErrLedgerGone).
func (l *Ledger) newID(ctx context.Context, newLedger func() error) (string, error) {
	n, err := store.CountEvents(ctx, l.store)
	if err != nil {
		return "", err
	}
	if n > 0 {
		id, err := store.LedgerID(ctx, l.store)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("ledger: %s holds %d events but no ledger id: %w; refusing to give it a new one (the chain could not be verified)",
				l.store.Source(), n, ErrLedgerGone)
		}
		return id, err
	}
	if err := newLedger(); err != nil {
		return "", err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	created, err := l.store.Clock(ctx, nil)
	if err != nil {
		return "", err
	}
	return l.store.NewLedgerID(ctx, hex.EncodeToString(b), created)
}

// Close releases the database and the writer mutex file, after the
// publishing worker has published the last checkpoint signed (each
// witness within its timeout) and waiting (at most the witness timeout)
// for witness copies still under way.
func (l *Ledger) Close() error {
	l.stopPublishing()
	l.waitPublishing()
	return l.shut(func() error {
		if l.stmts != nil {
			l.stmts.Close()
		}
		return l.store.Close()
	})
}

// Detach is Close for a process that is about to exit. It releases the
// writer mutex file and leaves the database to the store's Detach: SQLite
// leaves its connection to the operating system, so that it skips the WAL
// checkpoint that closing the last connection runs (every committed
// transaction is already durable in the WAL; the next Open recovers it);
// PostgreSQL closes its pool within a bound. The Ledger must not be used
// afterwards, and a long-lived process should call Close instead. The
// publishing worker is waited for first, as by Close.
func (l *Ledger) Detach() error {
	l.stopPublishing()
	return l.shut(func() error { return l.store.Detach() })
}

// shut keeps the root's pin, lets the database go (closeStore), then the
// root's files and the writer mutex file; once.
func (l *Ledger) shut(closeStore func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	defer l.files.Close()
	if l.rollback == nil || l.accepted.Load() {
		store.KeepPin(l.store, l.files, l.id, l.pinned, l.rollback, l.log)
	}
	err := closeStore()
	if l.flock != nil {
		err = cmp.Or(err, l.flock.Close())
	}
	return err
}

// Source names the ledger's database: ROOT/ledger.db, or the PostgreSQL
// database (without its password).
func (l *Ledger) Source() string { return l.store.Source() }

// where names where the ledger is kept, for messages.
func (l *Ledger) where() string {
	if l.store.ManyHosts() {
		return l.store.Source()
	}
	return l.root
}

// Root is the directory that holds ledger.db and locks/.
func (l *Ledger) Root() string { return l.root }

// ID is the ledger's own id, from which the chain's genesis is derived.
func (l *Ledger) ID() string { return l.id }

// Genesis is the prev_hash of the first event.
func (l *Ledger) Genesis() string { return l.genesis }

// Host is the identity this ledger writes as host_id.
func (l *Ledger) Host() Host { return l.host }

// Size is the database's size in bytes (SQLite: its pages; PostgreSQL:
// the events table with its indexes).
func (l *Ledger) Size(ctx context.Context) (int64, error) { return l.store.Size(ctx) }

// Compact gives the space of deleted rows back to the file system
// (SQLite's VACUUM; nothing on PostgreSQL).
func (l *Ledger) Compact(ctx context.Context) error { return l.store.Compact(ctx) }

// HashAt is the hash of the event at seq ("": none there).
func (l *Ledger) HashAt(ctx context.Context, seq int64) (string, error) {
	return store.EventHash(ctx, l.store, seq)
}

// LockPath is the lock file path of name.
func (l *Ledger) LockPath(name string) string { return l.files.Path(name) }

// LocksDir is the directory of lock files.
func (l *Ledger) LocksDir() string { return l.files.LocksDir() }

// resolveRoot is root as every command uses it, reading or writing:
// absolute, and with its symlinks resolved where it exists, so that a root
// given as a symlink is the directory it names (a root that does not exist
// yet is created as given). A symlink that dangles stays as it is, and
// ensureRoot refuses it.
func resolveRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("ledger: root %s: %w", root, err)
	}
	r, err := filepath.EvalSymlinks(abs)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	}
	return "", fmt.Errorf("ledger: root %s: %w", root, err)
}

// setRoot opens the root's files (lockfile.Open: nothing is created).
func (l *Ledger) setRoot(root string) error {
	files, err := lockfile.Open(root)
	if err != nil {
		return fmt.Errorf("ledger: root %s: %w", root, err)
	}
	l.root, l.files = root, files
	return nil
}

// ensureRoot creates root where it is missing, and shares it with group
// where one is given (see WithGroup).
func ensureRoot(root string, group *int) error {
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		if group == nil {
			if err := os.MkdirAll(root, lockfile.PrivateDirMode); err != nil {
				return fmt.Errorf("ledger: create root: %w", err)
			}
			return nil
		}
		if err := lockfile.MkdirReachable(filepath.Dir(root)); err != nil {
			return fmt.Errorf("ledger: create root: %w", err)
		}
		created := true
		if err := os.Mkdir(root, lockfile.PrivateDirMode); errors.Is(err, fs.ErrExist) {
			created = false
		} else if err != nil {
			return fmt.Errorf("ledger: create root: %w", err)
		}
		return makeGroupRoot(root, *group, created)
	}
	if err != nil {
		return fmt.Errorf("ledger: root: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("ledger: root %s: %w", root, &UnsafePathError{Path: root, Reason: "is a symlink to nothing"})
	}
	if !fi.IsDir() {
		return fmt.Errorf("ledger: root %s: %w", root, &UnsafePathError{Path: root, Reason: "is not a directory"})
	}
	if group != nil {
		return makeGroupRoot(root, *group, false)
	}
	return nil
}
