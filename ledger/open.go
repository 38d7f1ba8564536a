package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/store/postgres"
	"github.com/lockledger/lockledger/store/sqlite"
)

// The one place that picks the engine a ledger lives in, from the options:
// ROOT/ledger.db (store/sqlite) or a PostgreSQL database (store/postgres).
// Everything else in the package speaks to store.Store.

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
		if err := l.openPostgres(ctx, &c); err != nil {
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
	st, err := sqlite.Open(ctx, l.sqliteConfig(dbPath, b.allowed), patience)
	if err != nil {
		return err
	}
	l.store = st
	if err := l.loadID(ctx, b); err != nil {
		st.Close()
		return err
	}
	if b.marker != "" && b.marker != l.id {
		st.Close()
		return fmt.Errorf("ledger: %s is ledger %s but %s records ledger %s: %w; refusing to write to another ledger in its place (fencing tokens could go backwards). Restore this root's ledger.db, or use a new --root",
			dbPath, l.id, filepath.Join(l.root, WriterMux), clip(b.marker, 64), ErrLedgerGone)
	}
	if err := l.backfillTree(ctx); err != nil {
		st.Close()
		return err
	}
	if marker == "" {
		return l.flock.SetMarker(l.id)
	}
	return nil
}

// sqliteConfig is how ROOT/ledger.db at path is opened: with the ledger's
// clock, its lock files' watch, and newLedger deciding whether a database
// with no tables may become a new ledger.
func (l *Ledger) sqliteConfig(path string, newLedger func() error) sqlite.Config {
	return sqlite.Config{Path: path, Busy: l.busy, Now: l.now, NewLedger: newLedger,
		Watch: func(lock string) store.Waker { return l.files.Watch(lock) }}
}

// dbFile is what lies at ROOT/ledger.db and beside it.
type dbFile struct {
	path string
	size int64 // 0 when missing
	wal  int64 // size of ledger.db-wal, 0 when missing
}

func (d dbFile) empty() bool { return d.size == 0 }

// statDB looks at ROOT/ledger.db without handing it to SQLite: a symlink
// or other non-regular file, and a file that does not start with SQLite's
// header, are refused.
func (l *Ledger) statDB() (dbFile, error) {
	path := filepath.Join(l.root, DBFile)
	d := dbFile{path: path}
	fi, err := l.files.Lstat(DBFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return d, fmt.Errorf("ledger: %w", err)
	case !fi.Mode().IsRegular():
		return d, fmt.Errorf("ledger: %w", &UnsafePathError{Path: path, Reason: "is not a regular file"})
	default:
		d.size = fi.Size()
	}
	if d.size > 0 {
		head, err := l.files.ReadHead(DBFile, len(sqlite.Header))
		if err != nil {
			return d, fmt.Errorf("ledger: %w", err)
		}
		if string(head) != sqlite.Header {
			return d, fmt.Errorf("ledger: %s: %w: the file is not a database (it does not start with SQLite's header); lockledger adds nothing to it and creates no ledger over it",
				path, ErrNotALedger)
		}
	}
	if wi, err := l.files.Lstat(DBFile + "-wal"); err == nil && wi.Mode().IsRegular() {
		d.wal = wi.Size()
	}
	return d, nil
}

// precheck refuses, before anything is created in the root (writer.flock
// and locks/ included), what openWritable would refuse anyway where it can
// tell without the writer mutex: a ledger.db that is not an SQLite file;
// one that is another application's where no writer.flock says a ledger
// ever opened it (the directory may well be that application's); and an
// empty or missing ledger.db beside a trace of a ledger. A concurrent
// first open makes ledger.db non-empty before it leaves any trace, so a
// trace seen while ledger.db is still empty is a lost ledger's.
func (l *Ledger) precheck(ctx context.Context, dbPath string) error {
	d, err := l.statDB()
	if err != nil {
		return err
	}
	if d.empty() {
		marker, err := l.files.Marker()
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		terr := l.traceOfALedger(d, marker)
		if terr == nil {
			return nil
		}
		if again, err := l.statDB(); err != nil || !again.empty() {
			return err // a ledger was created meanwhile
		}
		return terr
	}
	if ok, err := l.files.Exists(WriterMux); ok || err != nil {
		return nil
	}
	return sqlite.CheckForeign(ctx, dbPath, l.busy)
}

// openReadOnly opens an existing ledger for reading. SQLite reads a WAL
// database through its -shm index, which it creates next to the database;
// in a directory it cannot write (an archived copy, read-only media) it
// reads the file as immutable instead, which is exact only when no commit
// is waiting in ledger.db-wal and no writer has it open (no -shm), so
// those cases are refused with the reason. An immutable read assumes that
// no writer starts on the file while it reads.
func (l *Ledger) openReadOnly(ctx context.Context, path string) error {
	fi, err := l.files.Lstat(DBFile)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("ledger: %w", &UnsafePathError{Path: path, Reason: "is not a regular file"})
	}
	l.checkLocksDir()
	err = l.openDBReadOnly(ctx, path, false)
	if err == nil || !sqlite.CannotIndexWAL(err) {
		return err
	}
	if _, serr := l.files.Lstat(DBFile + "-shm"); serr == nil {
		return fmt.Errorf("ledger: %s cannot be opened read-only although %s exists (a writer may have it open, so it cannot be read as immutable): %w",
			path, filepath.Base(path)+"-shm", err)
	}
	wal, werr := l.files.Lstat(DBFile + "-wal")
	switch {
	case werr == nil && wal.Size() > 0:
		return fmt.Errorf("ledger: %s is read-only and %s holds commits not yet copied into %s; SQLite needs to create %s to read them: make the root writable, or read a writable copy of it (%w)",
			filepath.Dir(path), filepath.Base(path)+"-wal", filepath.Base(path), filepath.Base(path)+"-shm", err)
	case werr != nil && !errors.Is(werr, fs.ErrNotExist):
		return fmt.Errorf("ledger: %w", werr)
	}
	ierr := l.openDBReadOnly(ctx, path, true)
	if ierr != nil && sqlite.CannotIndexWAL(ierr) {
		return fmt.Errorf("%w (read as immutable: %w)", err, ierr)
	}
	return ierr
}

func (l *Ledger) openDBReadOnly(ctx context.Context, path string, immutable bool) error {
	st, err := sqlite.OpenReadOnly(ctx, l.sqliteConfig(path, nil), immutable)
	if errors.Is(err, ErrNoLedger) {
		d, derr := l.statDB()
		marker, merr := l.files.Marker()
		if derr == nil && merr == nil {
			if terr := l.traceOfALedger(d, marker); terr != nil {
				return terr
			}
		}
		return fmt.Errorf("%w at %s (the database holds no ledger yet)", ErrNoLedger, l.root)
	}
	if err != nil {
		return err
	}
	if err := st.DB().QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&l.id); err != nil {
		st.Close()
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w at %s (the database has no ledger id yet)", ErrNoLedger, l.root)
		}
		return fmt.Errorf("ledger: open %s read-only: %w", path, err)
	}
	l.store = st
	l.genesis = events.Genesis(l.id)
	return nil
}

// openPostgres opens a ledger kept in PostgreSQL, with this host's lock
// files in the root.
func (l *Ledger) openPostgres(ctx context.Context, c *config) error {
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
	st, err := postgres.Open(ctx, postgres.Config{URL: c.database, PoolSize: c.poolSize, Busy: c.busy,
		Wait: max(c.busy, c.openWait), ReadOnly: c.readOnly, Create: c.create, Now: l.now, Log: l.log,
		LedgerID: func() string { return l.id }})
	if err == nil {
		l.store = st
		if err = l.loadID(ctx, birth{allowed: func() error { return nil }}); err != nil {
			st.Close()
		}
	}
	if err != nil && l.flock != nil {
		l.flock.Close()
	}
	return err
}

// WithDatabase keeps the ledger in the PostgreSQL database at url
// (postgres://..., with the PG* environment and TLS settings honoured)
// instead of ROOT/ledger.db, so that writers on many hosts share it. The
// root still holds this host's lock files.
func WithDatabase(url string) Option {
	return func(c *config) error {
		if !IsPostgresURL(url) {
			return events.Invalid("--database", postgres.Redact(url), "must be a postgres:// or postgresql:// URL")
		}
		c.database = url
		return nil
	}
}

// IsPostgresURL reports whether s names a PostgreSQL database.
func IsPostgresURL(s string) bool { return postgres.IsURL(s) }

// DefaultPoolSize is the number of connections a library ledger on
// PostgreSQL keeps at most (see WithPoolSize).
const DefaultPoolSize = postgres.DefaultPoolSize

// IsTransient reports whether err is a passing failure (the writer mutex
// or the database busy, a serialisation failure, a connection lost) that a
// retry may clear.
func IsTransient(err error) bool {
	return errors.Is(err, errWriterBusy) || sqlite.IsBusy(err) || postgres.Transient(err)
}
