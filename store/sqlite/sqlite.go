// Package sqlite is the embedded store: one machine's ledger in
// ROOT/ledger.db. Writers serialise on the root's writer mutex (an flock
// taken above this package) and then on SQLite's BEGIN IMMEDIATE; this
// host's clock judges; waiters are woken by the lock files' directory
// watch. Every connection runs with WAL, synchronous=FULL and a busy
// timeout, checked after the open.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/backoff"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// Header starts every SQLite database file.
const Header = "SQLite format 3\x00"

// Config is how a ledger database is opened.
type Config struct {
	Path string
	// Busy bounds every wait for the database (busy_timeout).
	Busy time.Duration
	// Now is the clock decisions are made at.
	Now func() time.Time
	// Watch wakes a waiter on a change of lock (the lock files' directory).
	Watch func(lock string) store.Waker
	// WatchLog wakes a reader of the log on a write to the database's
	// files (the database and its write-ahead log).
	WatchLog func() store.Waker
	// NewLedger says whether a database with no tables may become a new
	// ledger (nil error: yes); OpenWritable sets it from the root.
	NewLedger func() error
	Log       *slog.Logger
}

// Store is an open ROOT/ledger.db.
type Store struct {
	store.Pool
	cfg      Config
	db       *sql.DB
	readOnly bool
	// immutable: read as a file no one writes (see Root.OpenExisting),
	// which never shows a later commit.
	immutable bool
}

var _ store.Store = (*Store)(nil)

// DSN is the data source name the ledger opens path with: busy_timeout
// first so that the WAL switch itself waits, WAL, FULL sync, and BEGIN
// IMMEDIATE for every transaction (one writer at a time). Benchmarks use it
// to measure the raw database under the very same settings.
func DSN(path string, busy time.Duration) string { return dsn(path, busy, true) }

// dsn is DSN, with the switch to WAL left out when wal is false: Open
// makes it itself once it has seen that the database is the ledger's (the
// switch writes the file's header, and another application's database
// must not be written at all). WAL mode is persistent, so every later
// connection is in WAL mode too.
func dsn(path string, busy time.Duration, wal bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	if wal {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Add("_pragma", "synchronous(FULL)")
	// A checkpoint every 256 pages (1 MiB) keeps the WAL, which a process
	// that exits without closing leaves for the next one to recover, small.
	q.Add("_pragma", "wal_autocheckpoint(256)")
	q.Add("_pragma", "foreign_keys(ON)")
	for _, p := range osPragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Open opens cfg.Path for writing: the tables are checked to be the
// ledger's (or none, where cfg.NewLedger allows a new ledger), the journal
// switched to WAL, the settings checked and the migrations applied. The
// first connections of a fresh root race to switch it to WAL and migrate;
// a busy answer there is passing, so it is retried for patience.
func Open(ctx context.Context, cfg Config, patience time.Duration) (*Store, error) {
	db, err := sql.Open("sqlite", dsn(cfg.Path, cfg.Busy, false))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	deadline := time.Now().Add(patience)
	for {
		err = prepare(ctx, db, cfg)
		if err == nil {
			return &Store{Pool: store.NewPool(db), cfg: cfg, db: db}, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			db.Close()
			if errors.Is(err, store.ErrNotALedger) || errors.Is(err, store.ErrLedgerGone) {
				return nil, err
			}
			return nil, classify(fmt.Errorf("ledger: open %s: %w", cfg.Path, err))
		}
		if err := backoff.Sleep(ctx, 5*time.Millisecond); err != nil {
			db.Close()
			return nil, err
		}
	}
}

func prepare(ctx context.Context, db *sql.DB, cfg Config) error {
	empty, cur, err := CheckTables(ctx, db, cfg.Path)
	if err != nil {
		return err
	}
	if empty {
		if err := cfg.NewLedger(); err != nil {
			return err
		}
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
		return err
	}
	if err := checkPragmas(ctx, db, mode); err != nil {
		return err
	}
	switch {
	case cur < migrations.Latest():
		return migrations.Apply(ctx, db, func() string { return events.FormatTime(cfg.Now()) })
	case cur > migrations.Latest():
		return fmt.Errorf("ledger: database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, migrations.Latest())
	}
	return nil
}

// checkPragmas verifies the settings the ledger's guarantees rest on: the
// journal mode that switching to WAL answered, and what the DSN set on the
// connection, read back in one statement.
func checkPragmas(ctx context.Context, db *sql.DB, mode string) error {
	if mode != "wal" {
		return fmt.Errorf("ledger: journal_mode is %q, want wal", mode)
	}
	var sync, busy int
	if err := db.QueryRowContext(ctx, `SELECT * FROM pragma_synchronous, pragma_busy_timeout`).Scan(&sync, &busy); err != nil {
		return err
	}
	if sync != 2 {
		return fmt.Errorf("ledger: synchronous is %d, want 2 (FULL)", sync)
	}
	if busy <= 0 {
		return fmt.Errorf("ledger: busy_timeout is %d, want > 0", busy)
	}
	return nil
}

// Classify names the kinds of failure err is (see classify).
func (s *Store) Classify(err error) error { return classify(err) }

// classify is err naming its kind: SQLITE_BUSY and SQLITE_LOCKED (isBusy)
// are store.ErrTransient. A file is never out of reach, and SQLite has no
// rights to refuse a statement for.
func classify(err error) error {
	if isBusy(err) {
		return store.Classified(err, store.ErrTransient)
	}
	return err
}

// isBusy reports SQLITE_BUSY / SQLITE_LOCKED, the passing failures.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

func (s *Store) Size(ctx context.Context) (n int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
	return n, err
}

func (s *Store) Compact(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `VACUUM`)
	return err
}

func (s *Store) Begin(ctx context.Context) (*sql.Tx, error) { return s.db.BeginTx(ctx, nil) }

// BeginRead is SQLite's deferred BEGIN in WAL mode: one snapshot, read
// without waiting for writers.
func (s *Store) BeginRead(ctx context.Context) (*sql.Tx, error) {
	return s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// Clock is this host's clock: every writer of the ledger runs here.
func (s *Store) Clock(context.Context, store.Querier) (time.Time, error) {
	return s.cfg.Now().UTC(), nil
}

func (s *Store) Changed(context.Context, store.Execer, []string) error { return nil }

func (s *Store) Watch(lock string) store.Waker { return s.cfg.Watch(lock) }

// WatchLog watches the database's files: a commit writes the write-ahead
// log. SQLite publishes the commit to readers in its shared-memory index
// just after that write (which no file watch sees), so a reader woken
// here that finds nothing new looks again shortly (see package stream).
func (s *Store) WatchLog(context.Context) (store.Waker, error) {
	if s.immutable {
		return nil, fmt.Errorf("ledger: %s is read as a file no one writes (its directory does not let this user create %s), "+
			"so later commits cannot be seen: follow it as a user who can write the root", s.cfg.Path, "ledger.db-shm")
	}
	return s.cfg.WatchLog(), nil
}

func (s *Store) ManyHosts() bool { return false }

func (s *Store) CachesStatements() bool { return false }

func (s *Store) DecisionCalls() bool { return false }

func (s *Store) Source() string { return s.cfg.Path }

func (s *Store) CheckStorage(ctx context.Context, q store.Querier, level store.StorageCheck, rep *verify.Report) error {
	if level == store.StorageGuards {
		return checkTriggers(ctx, q, rep)
	}
	return CheckStorage(ctx, q, level == store.StorageFull, rep)
}

// FollowCopiedIDs: an INTEGER PRIMARY KEY follows the largest id already.
func (s *Store) FollowCopiedIDs(context.Context, store.Execer) error { return nil }

func (s *Store) Close() error { return s.db.Close() }

// WALTrimAbove is the size of ledger.db-wal above which a detaching writer
// checkpoints and truncates it. Commits keep it near wal_autocheckpoint's
// 1 MiB; one large transaction (project, import, a backfill) leaves it far
// larger, and every later process, the first to open the database, reads
// and checksums the whole WAL to rebuild its index (measured: 6.5 MiB left
// by project cost each 'who' about 5 ms of CPU).
const WALTrimAbove = 4 << 20

// Detach leaves the connections to the operating system, so SQLite skips
// the WAL checkpoint that closing the last connection runs (two more
// fsyncs, and the WAL file deleted and created again by the next process).
// Every committed transaction is already durable in the WAL; the next open
// recovers it. A WAL grown large is checkpointed and truncated first,
// without waiting: with busy_timeout 0, a reader or writer elsewhere makes
// it give up at once, and the WAL stays as it is, which is only slower to open.
func (s *Store) Detach() error {
	if s.readOnly {
		return nil
	}
	fi, err := os.Stat(s.cfg.Path + "-wal")
	if err != nil || fi.Size() <= WALTrimAbove {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		return nil
	}
	_, _ = c.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return nil
}
