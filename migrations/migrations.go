// Package migrations holds the ledger's schema as embedded SQL files,
// applied in name order, each in its own transaction, and recorded in
// schema_migrations: one set for SQLite (this directory) and one for
// PostgreSQL (postgres/), which creates the same tables and columns.
package migrations

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed *.sql postgres/*.sql
var files embed.FS

// DB is a database or one connection to it (*sql.DB, *sql.Conn).
type DB interface {
	Querier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Querier reads: a DB, or a transaction.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Set is the migrations of one database engine.
type Set struct {
	glob string
	// exists reports whether schema_migrations exists.
	exists string
	// lockWait, when set, bounds serialise's wait for the lock in a
	// transaction of MigrateWithin: it takes the wait (ms), then 0 once
	// the lock is held.
	lockWait string
	// serialise runs first in every migration's transaction, so that
	// concurrent first opens apply each migration once (see Migrate).
	serialise string
	// readable is the oldest version a reader of this lockledger reads as
	// it stands (ReadableFrom).
	readable int
	// once holds what is read of the embedded files, read at first use:
	// every open asks for the tables and the latest version.
	once *loaded
}

// loaded is a set's file names, migrations and tables, each read once.
// An open of an existing ledger asks only for the tables and the latest
// version, which are found without keeping a copy of every file's SQL.
type loaded struct {
	names  func() ([]named, error)
	all    func() ([]Migration, error)
	tables func() (map[string]bool, error)
}

// readOnce is s with its files and tables read at first use, once.
func readOnce(s Set) Set {
	s.once = &loaded{names: sync.OnceValues(s.readNames), all: sync.OnceValues(s.read), tables: sync.OnceValues(s.tables)}
	return s
}

// Migrate applies every migration newer than the database in one
// transaction that first takes the set's lock for the transaction, so that
// what a first open reads of the database (its version, and what fresh
// asks of a database without one) and the migrations it applies are one
// step among concurrent first opens: of those, one migrates and the others
// find it done. The lock is the transaction's, never the session's, so
// that it cannot outlive the transaction on a connection a pooler hands to
// another client. fresh, when set, is asked before a database at version
// 0 is migrated; its error applies nothing.
func (s Set) Migrate(ctx context.Context, db DB, fresh func(*sql.Tx) error, now func() string) error {
	return s.MigrateWithin(ctx, db, 0, fresh, now)
}

// MigrateWithin is Migrate whose wait for the set's lock, held by another
// process's migration, ends after wait (none: until ctx ends), while the
// migrations themselves, once this process holds the lock, run until they
// are done or ctx ends: an index built over a long log is not cut short by
// the time an open gives itself to find the ledger.
func (s Set) MigrateWithin(ctx context.Context, db DB, wait time.Duration, fresh func(*sql.Tx) error, now func() string) error {
	all, err := s.All()
	if err != nil {
		return err
	}
	tx, err := s.begin(ctx, db, wait)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	cur, err := s.Current(ctx, tx)
	if err != nil {
		return err
	}
	if cur == 0 && fresh != nil {
		if err := fresh(tx); err != nil {
			return err
		}
	}
	for _, m := range all {
		if m.Version <= cur {
			continue
		}
		if err := applyIn(ctx, tx, m, now); err != nil {
			return fmt.Errorf("migrations: %s: %w", m.Name, err)
		}
	}
	return tx.Commit()
}

// SQLite is the set for ledger.db. Its transactions begin with BEGIN
// IMMEDIATE, which serialises them.
var SQLite = readOnce(Set{glob: "*.sql", readable: 12,
	exists: `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_migrations'`})

// Postgres is the set for a ledger on PostgreSQL, in the connection's
// current schema.
var Postgres = readOnce(Set{glob: "postgres/*.sql", readable: 10,
	exists:    `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`,
	serialise: `SELECT pg_advisory_xact_lock(7215843091255761)`,
	lockWait:  `SELECT set_config('lock_timeout', $1, true)`})

// Migration is one embedded SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns every SQLite migration in order.
func All() ([]Migration, error) { return SQLite.All() }

// Latest is the highest embedded SQLite version.
func Latest() int { return SQLite.Latest() }

// Apply applies every SQLite migration newer than the database.
func Apply(ctx context.Context, db *sql.DB, now func() string) error {
	return SQLite.Apply(ctx, db, now)
}

// Tables names every table the SQLite migrations create, schema_migrations
// included: a database with any other table is not the ledger's.
func Tables() (map[string]bool, error) { return SQLite.Tables() }

// All returns every migration of the set in order.
func (s Set) All() ([]Migration, error) {
	if s.once == nil {
		return s.read()
	}
	all, err := s.once.all()
	return slices.Clone(all), err
}

// named is one embedded file of the set and the version its name starts with.
type named struct {
	version int
	name    string
}

func (s Set) names() ([]named, error) {
	if s.once == nil {
		return s.readNames()
	}
	return s.once.names()
}

func (s Set) readNames() ([]named, error) {
	names, err := fs.Glob(files, s.glob)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]named, 0, len(names))
	for _, n := range names {
		prefix, _, ok := strings.Cut(path.Base(n), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %s: name must start with a number and _", n)
		}
		out = append(out, named{version: v, name: n})
	}
	return out, nil
}

func (s Set) read() ([]Migration, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		b, err := files.ReadFile(n.name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: n.version, Name: n.name, SQL: string(b)})
	}
	return out, nil
}

// Latest is the highest embedded version, read from the files' names.
func (s Set) Latest() int {
	names, err := s.names()
	if err != nil || len(names) == 0 {
		return 0
	}
	return names[len(names)-1].version
}

// ReadableFrom is the oldest version a read-only open reads without the
// migrations after it: those only add indexes or store a table again as it
// stands (its columns and rows, in another layout), which change how fast
// a read or a write is, not what a read finds, so that a root that cannot
// be written (a read-only copy, another user's) stays readable by a newer
// lockledger. A migration that changes a table's columns or rows, or a
// trigger, moves it to its own version (TestReadableFromIsFollowedByIndexesOnly,
// TestReadableFromSeesTheSameTables).
func (s Set) ReadableFrom() int { return s.readable }

// Current returns the highest applied version, 0 for a fresh database.
func (s Set) Current(ctx context.Context, db Querier) (int, error) {
	var exists int
	if err := db.QueryRowContext(ctx, s.exists).Scan(&exists); err != nil {
		return 0, err
	}
	if exists == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// Apply applies every migration newer than the database.
func (s Set) Apply(ctx context.Context, db DB, now func() string) error {
	all, err := s.All()
	if err != nil {
		return err
	}
	cur, err := s.Current(ctx, db)
	if err != nil {
		return err
	}
	for _, m := range all {
		if m.Version <= cur {
			continue
		}
		if err := s.applyOne(ctx, db, m, now); err != nil {
			return fmt.Errorf("migrations: %s: %w", m.Name, err)
		}
	}
	return nil
}

func (s Set) applyOne(ctx context.Context, db DB, m Migration, now func() string) error {
	tx, err := s.begin(ctx, db, 0)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := applyIn(ctx, tx, m, now); err != nil {
		return err
	}
	return tx.Commit()
}

// begin begins a migration's transaction, serialised (see serialise),
// waiting at most wait for the lock where the set can bound it (lockWait).
func (s Set) begin(ctx context.Context, db DB, wait time.Duration) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if s.serialise == "" {
		return tx, nil
	}
	bounded := wait > 0 && s.lockWait != ""
	if bounded {
		_, err = tx.ExecContext(ctx, s.lockWait, strconv.FormatInt(max(wait.Milliseconds(), 1), 10))
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, s.serialise)
	}
	if err == nil && bounded {
		_, err = tx.ExecContext(ctx, s.lockWait, "0")
	}
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// applyIn applies m in tx, unless another process applied it first.
func applyIn(ctx context.Context, tx *sql.Tx, m Migration, now func() string) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil // another process applied it while we waited for the write lock
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.Version, m.Name, now())
	return err
}

// Tables names every table the set's migrations create, schema_migrations
// included.
func (s Set) Tables() (map[string]bool, error) {
	if s.once == nil {
		return s.tables()
	}
	t, err := s.once.tables()
	return maps.Clone(t), err
}

// tables reads each file's SQL a word at a time for CREATE TABLE [IF NOT
// EXISTS] NAME, keeping only the names.
func (s Set) tables() (map[string]bool, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{"schema_migrations": true}
	buf := make([]byte, 0, 4096)
	for _, n := range names {
		f, err := files.Open(n.name)
		if err != nil {
			return nil, err
		}
		words := bufio.NewScanner(f)
		words.Buffer(buf, 1<<20)
		words.Split(bufio.ScanWords)
		// Where the words since the last CREATE stand in
		// CREATE TABLE [IF NOT EXISTS] NAME: 0 before CREATE.
		const create, table, ifw, not, exists = 1, 2, 3, 4, 5
		at := 0
		for words.Scan() {
			w := words.Bytes()
			switch {
			case at == create && bytes.EqualFold(w, []byte("TABLE")):
				at = table
			case at == table && bytes.EqualFold(w, []byte("IF")):
				at = ifw
			case at == ifw && bytes.EqualFold(w, []byte("NOT")):
				at = not
			case at == not && bytes.EqualFold(w, []byte("EXISTS")):
				at = exists
			case at == table || at == exists:
				name, _, _ := bytes.Cut(w, []byte("("))
				out[strings.ToLower(strings.Trim(string(name), "\"`[]"))] = true
				at = 0
			case bytes.EqualFold(w, []byte("CREATE")):
				at = create
			default:
				at = 0
			}
		}
		f.Close()
		if err := words.Err(); err != nil {
			return nil, fmt.Errorf("migrations: %s: %w", n.name, err)
		}
	}
	return out, nil
}
