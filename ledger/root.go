package ledger

// When a root may get a new ledger, and when ledger.db is not ours.
//
// A ledger is created only where no trace of one exists, because a new
// ledger restarts the chain and the fencing tokens at 1: a client that
// holds token 812 from the lost ledger would be overtaken by token 1's
// successors. The traces:
//
//   - writer.flock records a ledger id. The process that creates a ledger
//     (or first opens an older root with this version) writes the id into
//     writer.flock under the writer mutex, after the id is committed. An
//     empty writer.flock is no trace: it is how a creator that has not
//     finished, or died before finishing, leaves it, and a later creator
//     takes the mutex and finishes the job.
//   - ledger.db is missing or empty while ledger.db-wal holds bytes: the
//     commits of a ledger whose main file was lost (SQLite, given an empty
//     database file, would delete that WAL).
//   - the locks directory holds a file only a ledger writes: a journal
//     (.NAME.lock.pending, .NAME.lock.swap), or a lock file in exactly the
//     layout the ledger renders (events.Record.File) whose lock_name is
//     its file name. A tower-fleet tool that writes that same layout into
//     the directory before any ledger exists is indistinguishable and is
//     taken for a trace too (fail safe; the message says how to proceed).
//
// A ledger.db that is not an SQLite file, or an SQLite database whose
// tables are not the ledger's, is another application's: nothing is added
// to it, not even the switch to WAL.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lockledger/lockledger/migrations"
)

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

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
		head, err := l.files.ReadHead(DBFile, len(sqliteHeader))
		if err != nil {
			return d, fmt.Errorf("ledger: %w", err)
		}
		if string(head) != sqliteHeader {
			return d, fmt.Errorf("ledger: %s: %w: the file is not a database (it does not start with SQLite's header); lockledger adds nothing to it and creates no ledger over it",
				path, ErrNotALedger)
		}
	}
	if wi, err := l.files.Lstat(DBFile + "-wal"); err == nil && wi.Mode().IsRegular() {
		d.wal = wi.Size()
	}
	return d, nil
}

// traceOfALedger says what in the root shows that it held a ledger, given
// the database files and writer.flock's marker; nil when nothing does.
func (l *Ledger) traceOfALedger(d dbFile, marker string) error {
	what := "is missing"
	if _, err := l.files.Lstat(DBFile); err == nil {
		what = "is empty"
		if d.size > 0 {
			what = "holds no ledger"
		}
	}
	refuse := func(found string) error {
		return fmt.Errorf("ledger: %s %s but %s: %w; refusing to start a new one (fencing tokens would restart at 1). Restore ledger.db from a backup, or use a new --root",
			d.path, what, found, ErrLedgerGone)
	}
	mux := filepath.Join(l.root, WriterMux)
	switch {
	case marker != "":
		return refuse(fmt.Sprintf("%s records ledger %s", mux, clip(marker, 64)))
	case d.empty() && d.wal > 0:
		return refuse(fmt.Sprintf("%s-wal holds %d bytes: the commits of a ledger whose database file was lost", d.path, d.wal))
	}
	found, err := l.ledgerTrace()
	if err != nil {
		return fmt.Errorf("ledger: locks directory: %w", err)
	}
	if found != "" {
		return refuse(found + " (if no ledger ever lived here and the files are another tool's, move them out of the locks directory, run lockledger once, and move them back)")
	}
	return nil
}

// ledgerTrace names the first file in the locks directory that only a
// ledger writes, "" when there is none (see the comment at the top). A
// locks directory that cannot be read shows none; the writable open
// refuses it afterwards.
func (l *Ledger) ledgerTrace() (string, error) {
	if l.files.Broken() != nil {
		return "", nil
	}
	entries, err := l.files.Entries()
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".lock.pending") || strings.HasSuffix(n, ".lock.swap")) {
			return fmt.Sprintf("%s is a lock file journal, which only a ledger writes", filepath.Join(l.files.LocksDir(), n)), nil
		}
		name, ok := strings.CutSuffix(n, ".lock")
		if !ok || strings.HasPrefix(n, ".") {
			continue
		}
		st, err := l.files.Read(name)
		if err != nil || !st.Exists {
			continue // not a file the ledger wrote
		}
		rec, err := ParseLockFile(st.Data)
		if err == nil && rec.LockName == name && bytes.Equal(rec.File(), st.Data) {
			return fmt.Sprintf("%s is a lock file in the layout the ledger writes", filepath.Join(l.files.LocksDir(), n)), nil
		}
	}
	return "", nil
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
	db, err := sql.Open("sqlite", roDSN(dbPath, l.busy, false))
	if err != nil {
		return nil
	}
	defer db.Close()
	if _, _, err := checkTables(ctx, db, dbPath); errors.Is(err, ErrNotALedger) {
		return err
	}
	return nil // anything else is for the writable open to find and report
}

// checkTables refuses a database whose tables are not the ledger's, and
// reports whether it has none at all (a new database) and its schema
// version as schema_migrations records it (0 for none), read here anyway
// so that opening does not ask again.
func checkTables(ctx context.Context, q querier, path string) (empty bool, version int, err error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return false, 0, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return false, 0, err
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return false, 0, err
	}
	if len(names) == 0 {
		return true, 0, nil
	}
	ours, err := migrations.Tables()
	if err != nil {
		return false, 0, err
	}
	var foreign []string
	var verr error
	hasMigrations := false
	for _, n := range names {
		hasMigrations = hasMigrations || n == "schema_migrations"
		if !ours[strings.ToLower(n)] {
			foreign = append(foreign, n)
		}
	}
	if hasMigrations {
		// A newer lockledger's tables are named by the version check.
		// An error here is reported below, once the tables are known
		// to be the ledger's (another application's come first).
		version, verr = currentVersion(ctx, q)
		if verr == nil && version > migrations.Latest() {
			return false, version, nil
		}
	}
	if !hasMigrations || len(foreign) > 0 {
		if len(foreign) == 0 {
			foreign = names
		}
		return false, 0, fmt.Errorf("ledger: %s: %w: it is an SQLite database of another application (tables %s); lockledger adds nothing to it",
			path, ErrNotALedger, clip(strings.Join(foreign, ", "), 200))
	}
	return false, version, verr
}

func currentVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
