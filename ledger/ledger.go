// Package ledger is the lock ledger: it opens ROOT/ledger.db, decides every
// lock action under one writer at a time, appends each decision as a
// schema-validated, hash-chained event, and keeps the locks table and the
// lock files in ROOT/locks as projections of the event log.
//
// Lifecycle: Open, then any number of operations from any goroutines, then
// Close. Every operation takes a context first.
package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/migrations"
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
	database string
	poolSize int
	group    *int // WithGroup
}

// Option configures Open.
type Option func(*config) error

// WithClock replaces time.Now (tests, replays).
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("ledger: WithClock(nil)")
		}
		c.now = now
		return nil
	}
}

// WithBusyTimeout bounds how long an operation waits for the database and
// for the writer mutex before it fails with a transient error.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("ledger: busy timeout %s: must be at least 1ms", d)
		}
		c.busy = d
		return nil
	}
}

// WithLogger sets the logger for warnings (drift repaired, foreign files).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("ledger: WithLogger(nil)")
		}
		c.logger = l
		return nil
	}
}

// WithHost overrides the host identity (tests).
func WithHost(h Host) Option {
	return func(c *config) error {
		if h.ID == "" {
			return errors.New("ledger: WithHost: empty host id")
		}
		c.host = &h
		return nil
	}
}

// WithProcessProbe overrides how liveness of local pids is checked (tests).
func WithProcessProbe(p proc.Probe) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("ledger: WithProcessProbe(nil)")
		}
		c.probe = p
		return nil
	}
}

// WithOpenWait lets Open wait up to d (instead of the busy timeout) for a
// database too busy to open, as when many processes open a fresh root at
// once; commands told to wait for their lock give it the same budget.
func WithOpenWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("ledger: WithOpenWait(%s): must not be negative", d)
		}
		c.openWait = d
		return nil
	}
}

// WithDatabase keeps the ledger in the PostgreSQL database at url
// (postgres://..., with the PG* environment and TLS settings honoured)
// instead of ROOT/ledger.db, so that writers on many hosts share it. The
// root still holds this host's lock files.
func WithDatabase(url string) Option {
	return func(c *config) error {
		if !IsPostgresURL(url) {
			return events.Invalid("--database", redactURL(url), "must be a postgres:// or postgresql:// URL")
		}
		c.database = url
		return nil
	}
}

// WithPoolSize bounds the connections to a PostgreSQL ledger (default
// DefaultPoolSize); the CLI, one command per process, uses 2.
func WithPoolSize(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1000 {
			return fmt.Errorf("ledger: WithPoolSize(%d): must be between 1 and 1000", n)
		}
		c.poolSize = n
		return nil
	}
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
	return func(c *config) error { c.create, c.readOnly = false, true; return nil }
}

// Ledger is an open lock ledger. It is safe for concurrent use.
type Ledger struct {
	root     string
	db       *sql.DB
	store    store
	dbName   string        // the PostgreSQL database, for messages; "" for ROOT/ledger.db
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

	stmtMu  sync.Mutex
	stmts   map[string]*sql.Stmt                   // see preparedTx
	pending map[string]func(context.Context) error // statements to prepare before the next write

	mu sync.Mutex // in-process half of the writer mutex (flock is per open file)
	// publishing counts witness copies under way (see publish).
	publishing sync.WaitGroup
	flock      *lockfile.Mutex
	closed     bool
}

// Open opens the ledger at root, creating it where the root shows no trace
// of one. A root that held a ledger now missing or emptied fails with
// ErrLedgerGone, a ledger.db that is another application's with
// ErrNotALedger (see root.go); neither is written to.
func Open(ctx context.Context, root string, opts ...Option) (_ *Ledger, err error) {
	c := config{now: time.Now, busy: DefaultBusyTimeout, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		probe: &proc.Local{}, create: true, poolSize: DefaultPoolSize,
		signing: signing{every: DefaultCheckpointEvery, interval: DefaultCheckpointInterval, timeout: DefaultWitnessTimeout}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.host == nil {
		h := ThisHost()
		c.host = &h
	}
	if root == "" {
		return nil, events.Invalid("root", root, "must not be empty")
	}
	root, err = resolveRoot(root)
	if err != nil {
		return nil, err
	}
	l := &Ledger{now: c.now, busy: c.busy, log: c.logger, host: *c.host, probe: c.probe, readOnly: c.readOnly, signing: c.signing}
	if err := l.setRoot(root); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.files.Close()
		}
	}()
	if c.database != "" {
		if err := l.openShared(ctx, &c); err != nil {
			return nil, err
		}
		return l, nil
	}
	dbPath := filepath.Join(root, DBFile)
	if !c.create {
		if err := l.mustExist(dbPath); err != nil {
			return nil, err
		}
	}
	if c.readOnly {
		if err := l.openReadOnly(ctx, dbPath); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err := l.makeRoot(c.group); err != nil {
		return nil, err
	}
	dbPath = filepath.Join(l.root, DBFile)
	if err := l.precheck(ctx, dbPath); err != nil {
		return nil, err
	}
	if err := l.openWriterMux(); err != nil {
		return nil, err
	}
	if err := l.openWritable(ctx, dbPath, max(c.busy, c.openWait), c.create); err != nil {
		l.flock.Close()
		return nil, err
	}
	return l, nil
}

// makeRoot creates the root where it is missing (shared with group, if
// given) and resolves it again: a root just created below a symlinked
// directory resolves only now.
func (l *Ledger) makeRoot(group *int) error {
	if err := ensureRoot(l.root, group); err != nil {
		return err
	}
	root, err := resolveRoot(l.root)
	if err != nil {
		return err
	}
	l.files.Close()
	return l.setRoot(root)
}

// openWriterMux creates the locks directory and opens ROOT/writer.flock,
// this host's writer mutex.
func (l *Ledger) openWriterMux() error {
	if err := l.files.MakeLocks(); err != nil {
		return fmt.Errorf("ledger: locks directory: %w", err)
	}
	f, err := l.files.OpenMutex()
	if err != nil {
		return fmt.Errorf("ledger: writer mutex: %w", err)
	}
	l.flock = f
	return nil
}

// checkLocksDir is a reader's look at the locks directory: the events do
// not depend on lock files, so a directory that cannot be read is noted
// and reported wherever lock files are read, and the events read anyway.
func (l *Ledger) checkLocksDir() {
	if err := l.files.Broken(); err != nil {
		l.log.Warn("the locks directory cannot be read; lock files are left out", "err", err)
	}
}

// mustExist fails with ErrNoLedger where there is no ledger to open, or
// with ErrLedgerGone where the root shows that it held one (see root.go),
// before anything in the root is created.
func (l *Ledger) mustExist(dbPath string) error {
	d, err := l.statDB()
	if err != nil || !d.empty() {
		return err
	}
	marker, err := l.files.Marker()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := l.traceOfALedger(d, marker); err != nil {
		return err
	}
	return fmt.Errorf("%w at %s (nothing has been recorded there; check --root or LOCKLEDGER_ROOT)", ErrNoLedger, l.root)
}

// birth is what an open may do about the ledger's identity: allowed says
// whether a new ledger may start in this root (nil error: yes), marker is
// the id writer.flock records ("" for none).
type birth struct {
	marker  string
	allowed func() error
}

// openWritable opens ledger.db for writing, creating the ledger only where
// no trace of one exists (root.go). A root whose writer.flock records its
// ledger and whose database has content is opened straight away; any
// other is looked at again under the writer mutex, so that of concurrent
// first opens one creates the ledger and the others find it made.
func (l *Ledger) openWritable(ctx context.Context, dbPath string, patience time.Duration, create bool) error {
	marker, err := l.flock.Marker()
	if err != nil {
		return err
	}
	d, err := l.statDB()
	if err != nil {
		return err
	}
	if d.empty() || marker == "" {
		unlock, err := l.flock.Lock(ctx, patience, 5*time.Millisecond)
		if err != nil {
			return fmt.Errorf("ledger: open %s: %w", dbPath, err)
		}
		defer unlock()
		if marker, err = l.flock.Marker(); err != nil {
			return err
		}
		if d, err = l.statDB(); err != nil {
			return err
		}
	}
	b := birth{marker: marker, allowed: func() error { return l.traceOfALedger(d, marker) }}
	if d.empty() {
		if err := b.allowed(); err != nil {
			return err
		}
		if !create {
			return fmt.Errorf("%w at %s (nothing has been recorded there; check --root or LOCKLEDGER_ROOT)", ErrNoLedger, l.root)
		}
		if err := l.files.CreateFile(DBFile); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	if err := l.openDB(ctx, dbPath, patience, b); err != nil {
		return err
	}
	if err := l.backfillTree(ctx); err != nil {
		l.db.Close()
		return err
	}
	if marker == "" {
		return l.flock.SetMarker(l.id)
	}
	return nil
}

func (l *Ledger) openDB(ctx context.Context, path string, patience time.Duration, b birth) error {
	db, err := sql.Open("sqlite", ledgerDSN(path, l.busy, false))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	l.db = db
	l.store = sqliteStore{l}
	// The first connections of a fresh root race to switch it to WAL and
	// migrate; a busy answer there is passing, so retry for patience.
	deadline := time.Now().Add(patience)
	for {
		err = l.prepare(ctx, path, b)
		if err == nil {
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			db.Close()
			if errors.Is(err, ErrNotALedger) || errors.Is(err, ErrLedgerGone) {
				return err
			}
			return fmt.Errorf("ledger: open %s: %w", path, err)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			db.Close()
			return err
		}
	}
}

func (l *Ledger) prepare(ctx context.Context, path string, b birth) error {
	empty, cur, err := checkTables(ctx, l.db, path)
	if err != nil {
		return err
	}
	if empty {
		if err := b.allowed(); err != nil {
			return err
		}
	}
	var mode string
	if err := l.db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
		return err
	}
	if err := checkPragmas(ctx, l.db, mode); err != nil {
		return err
	}
	if cur < migrations.Latest() {
		if err := migrations.Apply(ctx, l.db, func() string { return events.FormatTime(l.now()) }); err != nil {
			return err
		}
	} else if cur > migrations.Latest() {
		return fmt.Errorf("ledger: database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, migrations.Latest())
	}
	if err := l.loadID(ctx, b); err != nil {
		return err
	}
	if b.marker != "" && b.marker != l.id {
		return fmt.Errorf("ledger: %s is ledger %s but %s records ledger %s: %w; refusing to write to another ledger in its place (fencing tokens could go backwards). Restore this root's ledger.db, or use a new --root",
			path, l.id, filepath.Join(l.root, WriterMux), clip(b.marker, 64), ErrLedgerGone)
	}
	return nil
}

// loadID reads the ledger's id, and gives a new ledger one where b allows
// a new ledger and no event was ever appended.
func (l *Ledger) loadID(ctx context.Context, nb birth) error {
	err := l.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&l.id)
	if errors.Is(err, sql.ErrNoRows) {
		var n int64
		if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("ledger: %s holds %d events but no ledger id: %w; refusing to give it a new one (the chain could not be verified)",
				filepath.Join(l.root, DBFile), n, ErrLedgerGone)
		}
		if err := nb.allowed(); err != nil {
			return err
		}
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		tx, err := l.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		created, err := l.store.clock(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('ledger_id', $1), ('created_at', $2) ON CONFLICT DO NOTHING`,
			hex.EncodeToString(b), events.FormatTime(created)); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&l.id); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	l.genesis = events.Genesis(l.id)
	return nil
}

// Close releases the database and the writer mutex file, after waiting
// (at most the witness timeout) for witness copies still under way.
func (l *Ledger) Close() error {
	l.waitPublishing()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	defer l.files.Close()
	l.stmtMu.Lock()
	for _, st := range l.stmts {
		st.Close()
	}
	l.stmts = nil
	l.stmtMu.Unlock()
	err := l.store.close()
	if l.flock != nil {
		if cerr := l.flock.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Detach is Close for a process that is about to exit. It releases the
// writer mutex file but leaves the database connection to the operating
// system, so SQLite skips the WAL checkpoint that closing the last
// connection runs (two more fsyncs, and the WAL file deleted and created
// again by the next process). Every committed transaction is already
// durable in the WAL; the next Open recovers it, and the WAL is
// checkpointed as it grows (wal_autocheckpoint). The Ledger must not be
// used afterwards, and a long-lived process should call Close instead.
func (l *Ledger) Detach() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	defer l.files.Close()
	if s, ok := l.store.(*pgStore); ok {
		err := s.closeWithin(detachWait)
		if l.flock != nil {
			if cerr := l.flock.Close(); err == nil {
				err = cerr
			}
		}
		return err
	}
	if l.flock == nil {
		return nil
	}
	l.trimWAL()
	return l.flock.Close()
}

// walTrimAbove is the size of ledger.db-wal above which a detaching writer
// checkpoints and truncates it. Commits keep it near wal_autocheckpoint's
// 1 MiB; one large transaction (project, import, a backfill) leaves it far
// larger, and every later process, the first to open the database, reads
// and checksums the whole WAL to rebuild its index (measured: 6.5 MiB left
// by project cost each 'who' about 5 ms of CPU).
const walTrimAbove = 4 << 20

// trimWAL checkpoints a large WAL and truncates it, without waiting: the
// connection's busy timeout is set to 0 first (the process is about to
// exit), so a reader or writer elsewhere makes it give up at once, and the
// WAL stays as it is, which is only slower to open.
func (l *Ledger) trimWAL() {
	if _, ok := l.store.(sqliteStore); !ok {
		return
	}
	fi, err := l.files.Lstat(DBFile + "-wal")
	if err != nil || fi.Size() <= walTrimAbove {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := l.db.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		return
	}
	if _, err := c.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		l.log.Debug("could not truncate the WAL", "err", err)
	}
}

// openShared opens a ledger kept in PostgreSQL, with this host's lock
// files in the root.
func (l *Ledger) openShared(ctx context.Context, c *config) error {
	if c.readOnly {
		l.checkLocksDir()
	} else {
		if err := l.makeRoot(c.group); err != nil {
			return err
		}
		if err := l.openWriterMux(); err != nil {
			return err
		}
	}
	if err := l.openPostgres(ctx, c); err != nil {
		if l.flock != nil {
			l.flock.Close()
		}
		return err
	}
	return nil
}

// Source names the ledger's database: ROOT/ledger.db, or the PostgreSQL
// database (without its password).
func (l *Ledger) Source() string {
	if l.dbName != "" {
		return l.dbName
	}
	return filepath.Join(l.root, DBFile)
}

// where names where the ledger is kept, for messages.
func (l *Ledger) where() string {
	if l.dbName != "" {
		return l.dbName
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

// DB exposes the database for read-only queries (replay, verify, tests).
func (l *Ledger) DB() *sql.DB { return l.db }

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
		return shareRoot(root, *group, created)
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
		return shareRoot(root, *group, false)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
