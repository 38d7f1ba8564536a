package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
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
		signing: signing{every: DefaultCheckpointEvery, interval: DefaultCheckpointInterval}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.host == nil {
		h, err := ReadHost()
		if err != nil {
			return nil, err
		}
		c.host = &h
	}
	if root == "" {
		return nil, events.Invalid("root", root, "must not be empty")
	}
	root, err = resolveRoot(root)
	if err != nil {
		return nil, err
	}
	if !c.readOnly {
		// Before the key and the writer mutex, whose refusals (EACCES)
		// would advise making a key or writing unsigned.
		if why := lockfile.Outsider(root); why != "" {
			return nil, events.Invalid("--root", root, why)
		}
	}
	l := &Ledger{now: c.now, busy: c.busy, log: c.logger, host: *c.host, probe: c.probe, readOnly: c.readOnly}
	if err := l.setRoot(root); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.files.Close()
		}
	}()
	var pg *postgres.Store
	if c.database != "" {
		// The database first: one the open refuses, or a role that may not
		// write it, leaves nothing of this host's behind (no root, no
		// writer mutex, no key, no pin).
		if pg, err = l.connectPostgres(ctx, &c); err != nil {
			return nil, err
		}
	}
	if c.group != nil {
		if err := checkGroupRoot(root, *c.group); err != nil {
			if pg != nil {
				pg.Close()
			}
			return nil, err
		}
	}
	trusted, err := c.applyTrust(root)
	if err != nil {
		if pg != nil {
			pg.Close()
		}
		return nil, err
	}
	l.signing, l.trust = c.signing, trusted
	if trusted != nil && c.create && c.pin != store.PinSkip && l.startsLedger(ctx, pg, false) {
		err := trusted.refuseNewLedger(root)
		if err != nil && !l.startsLedger(ctx, pg, true) {
			// Another first open made the ledger and pinned it since
			// the look above (it pins only once the ledger is made):
			// this open joins that ledger.
			err = nil
		}
		if pg != nil && err != nil {
			// A root that holds another ledger's pin is told so first: it
			// holds a ledger, which the trust store's pin names too.
			if serves := l.rootServesNoOther(&c); serves != nil {
				err = serves
			}
		}
		if err != nil {
			if pg != nil {
				pg.Close()
			}
			return nil, err
		}
	}
	if pg != nil {
		err = l.openPostgres(ctx, &c, pg)
	} else {
		err = l.openSQLite(ctx, &c)
	}
	if err != nil {
		return nil, err
	}
	l.stmts = store.NewStatements(l.store)
	l.host.peers = &peers{many: l.store.ManyHosts(), log: l.log}
	var seen int64
	if l.pinned, l.rollback, seen, err = store.CheckPin(ctx, l.store, l.files, l.where(), l.id, c.pin); err != nil {
		l.Close()
		return nil, err
	}
	l.seen.Store(seen)
	if c.readOnly {
		if l.behind = store.LookPin(ctx, l.store, l.files, l.where(), l.id); l.behind != nil {
			// It asks something of the reader: an error line, shown with
			// --quiet too, whatever the read's exit code.
			l.log.Error(l.behind.Behind())
		}
	}
	if err = l.checkTrust(c.pin); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// startsLedger reports whether a writer's open would start a new ledger:
// the database pg connected to holds none (as Connect found it, or, again,
// as it is now), or (pg nil) the root shows no trace of one.
func (l *Ledger) startsLedger(ctx context.Context, pg *postgres.Store, again bool) bool {
	if pg != nil {
		if again {
			return pg.EmptyNow(ctx)
		}
		return pg.Empty()
	}
	return errors.Is(l.sqliteRoot().MustExist(), store.ErrNoLedger)
}

// WithPin sets what a writer's Open does with the root's pin of the ledger (store.CheckPin; store.PinCheck by default).
func WithPin(p store.PinPolicy) Option {
	return func(c *config) error { c.pin = max(c.pin, p); return nil }
}

// openSQLite opens ROOT/ledger.db: read-only, or for writing, creating the
// ledger only where the root shows no trace of one (store/sqlite's Root).
func (l *Ledger) openSQLite(ctx context.Context, c *config) error {
	if !c.create {
		if err := l.sqliteRoot().MustExist(); err != nil {
			return err
		}
	}
	if c.readOnly {
		l.readerLook(l.sqliteRoot().CheckOwners(nil))
		st, err := l.sqliteRoot().OpenExisting(ctx, l.sqliteConfig())
		if err != nil {
			return err
		}
		return l.readID(ctx, st)
	}
	if err := l.makeRoot(c.group); err != nil {
		return err
	}
	if err := l.sqliteRoot().CheckOwners(c.group); err != nil {
		return err
	}
	if err := l.sqliteRoot().Precheck(ctx, filepath.Join(l.root, DBFile), l.busy); err != nil {
		return err
	}
	if err := l.openWriterMux(); err != nil {
		return err
	}
	identify := func(ctx context.Context, st *sqlite.Store, newLedger func() error) (string, error) {
		l.store = st
		err := l.loadID(ctx, newLedger)
		return l.id, err
	}
	st, err := l.sqliteRoot().OpenWritable(ctx, l.sqliteConfig(), max(c.busy, c.openWait), c.create, identify)
	if err != nil {
		l.flock.Close()
		return err
	}
	l.store = st
	return nil
}

// sqliteRoot is the root as store/sqlite opens ledger.db in it.
func (l *Ledger) sqliteRoot() sqlite.Root {
	return sqlite.Root{Dir: l.root, Files: l.files, Mutex: l.flock, LedgerFile: ledgerFile}
}

// ledgerFile reports a lock file of lock name in exactly the layout the
// ledger renders: a trace of a ledger in the root.
func ledgerFile(name string, data []byte) bool {
	rec, err := ParseLockFile(data)
	return err == nil && rec.LockName == name && bytes.Equal(rec.File(), data)
}

// readID reads the id of the ledger a read-only open found.
func (l *Ledger) readID(ctx context.Context, st *sqlite.Store) error {
	id, err := store.LedgerID(ctx, st)
	if err != nil {
		st.Close()
		if errors.Is(err, sql.ErrNoRows) {
			return &store.NoLedgerError{Where: l.root, Hint: "its ledger.db has no ledger id yet"}
		}
		return fmt.Errorf("ledger: open %s read-only: %w", filepath.Join(l.root, DBFile), err)
	}
	l.id, l.store = id, st
	l.genesis = events.Genesis(l.id)
	return nil
}

// makeRoot creates the root where it is missing (a group root of group, if
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

// readerLook is a reader's look at the root. The events do not depend on
// lock files, so a locks directory that cannot be read is noted and
// reported wherever lock files are read, and the events read anyway. A
// root that a writer would refuse (owners, lockfile.Dir.CheckOwners' answer)
// is read, with a warning that what it holds may be another user's doing.
func (l *Ledger) readerLook(owners error) {
	if err := l.files.Broken(); err != nil {
		l.log.Warn("the locks directory cannot be read; lock files are left out", "err", err)
	}
	var ue *lockfile.UntrustedError
	if errors.As(owners, &ue) {
		l.log.Warn("reading a root that another user can write: what it holds may be that user's doing", "found", ue.What())
	} else if owners != nil {
		l.log.Warn("reading a root whose owners could not be checked", "err", owners)
	}
}

// sqliteConfig is how ROOT/ledger.db is opened: with the ledger's clock,
// logger and lock files' watch.
func (l *Ledger) sqliteConfig() sqlite.Config {
	return sqlite.Config{Path: filepath.Join(l.root, DBFile), Busy: l.busy, Now: l.now, Log: l.log,
		Watch:    func(lock string) store.Waker { return l.files.Watch(lock) },
		WatchLog: func() store.Waker { return l.files.WatchFiles(DBFile, DBFile+"-wal") }}
}

// connectPostgres connects to the ledger's database (postgres.Connect):
// it makes nothing, and refuses what the open would refuse. A writer's
// root that is there and that others can write is refused before the
// database is reached, as openPostgres would refuse it: only a root about
// to be made a group root (WithGroup) is left to openPostgres to check,
// once it is one.
func (l *Ledger) connectPostgres(ctx context.Context, c *config) (*postgres.Store, error) {
	if !c.readOnly && c.group == nil {
		if err := l.files.CheckOwners(nil); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
	}
	return postgres.Connect(ctx, postgres.Config{URL: c.database, PoolSize: c.poolSize, Busy: c.busy,
		Wait: max(c.busy, c.openWait), ReadOnly: c.readOnly, Create: c.create, Now: l.now, Log: l.log,
		LedgerID: func() string { return l.id }, BeforeCreate: func() error { return l.rootServesNoOther(c) }})
}

// openPostgres opens the ledger kept in the database st is connected to,
// with this host's lock files in the root; st is closed if it fails.
func (l *Ledger) openPostgres(ctx context.Context, c *config, st *postgres.Store) (err error) {
	defer func() {
		if err != nil {
			st.Close()
			if l.flock != nil {
				l.flock.Close()
			}
		}
	}()
	if c.readOnly {
		l.readerLook(l.files.CheckOwners(nil))
	} else {
		if err := l.makeRoot(c.group); err != nil {
			return err
		}
		if err := l.files.CheckOwners(c.group); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if err := l.openWriterMux(); err != nil {
			return err
		}
	}
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	l.store = st
	return l.loadID(ctx, func() error { return nil })
}

// rootServesNoOther refuses to create a new ledger in an empty database
// for a root that has pinned another ledger (one it wrote before, in
// ROOT/ledger.db or another database): the new ledger's pin check would
// refuse every write after the tables were made, so nothing is made. A
// root serves one ledger.
func (l *Ledger) rootServesNoOther(c *config) error {
	if c.pin != store.PinCheck {
		return nil
	}
	pin, ok, err := l.files.ReadPin()
	if err != nil || !ok {
		return err
	}
	return events.Invalid("--root", l.root, fmt.Sprintf("has pinned %s, and %s holds no ledger yet: a root serves one ledger, "+
		"so give this database a root of its own (--root DIR or LOCKLEDGER_ROOT); nothing was created", pin, postgres.Redact(c.database)))
}

// WithDatabase keeps the ledger in the PostgreSQL database at url
// (postgres://..., with the PG* environment and TLS settings honoured)
// instead of ROOT/ledger.db, so that writers on many hosts share it. The
// root still holds this host's lock files.
func WithDatabase(url string) Option {
	return checked(!IsPostgresURL(url), events.Invalid("--database", postgres.Redact(url), "must be a postgres:// or postgresql:// URL"),
		func(c *config) { c.database = url })
}

// IsPostgresURL reports whether s names a PostgreSQL database.
func IsPostgresURL(s string) bool { return postgres.IsURL(s) }

// DefaultPoolSize is the number of connections a library ledger on
// PostgreSQL keeps at most (see WithPoolSize).
const DefaultPoolSize = postgres.DefaultPoolSize

// IsTransient reports whether err is a passing failure (the writer mutex
// or the database busy, a serialisation failure, a connection lost) that a
// retry may clear: the engine names the database's (store.Classify).
func IsTransient(err error) bool {
	if errors.Is(err, ErrCommitUnknown) {
		return false // made again, it could be made twice
	}
	return errors.Is(err, errWriterBusy) || errors.Is(err, store.ErrTransient)
}

// IsUnreachable reports whether err is the database out of reach for now
// (a session the server ended, a connection lost or refused: a restart or
// failover), among the passing failures IsTransient reports; a SQLite file
// is never out of reach.
func IsUnreachable(err error) bool {
	return !errors.Is(err, ErrCommitUnknown) && errors.Is(err, store.ErrUnreachable)
}

// RedactURL is a database URL without its password, for messages.
func RedactURL(url string) string { return postgres.Redact(url) }
