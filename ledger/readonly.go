package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
)

// roDSN opens path without ever writing it. immutable tells SQLite that no
// one writes the file while it is open, which lets it read a database whose
// directory does not let it create the WAL index (-shm).
func roDSN(path string, busy time.Duration, immutable bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
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
	if err == nil || !cannotIndexWAL(err) {
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
	if ierr != nil && cannotIndexWAL(ierr) {
		return fmt.Errorf("%w (read as immutable: %w)", err, ierr)
	}
	return ierr
}

func (l *Ledger) openDBReadOnly(ctx context.Context, path string, immutable bool) error {
	db, err := sql.Open("sqlite", roDSN(path, l.busy, immutable))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if err := l.prepareReadOnly(ctx, db, path); err != nil {
		db.Close()
		if errors.Is(err, ErrNotALedger) || errors.Is(err, ErrLedgerGone) {
			return err
		}
		return fmt.Errorf("ledger: open %s read-only: %w", path, err)
	}
	l.db = db
	l.store = sqliteStore{l}
	return nil
}

func (l *Ledger) prepareReadOnly(ctx context.Context, db *sql.DB, path string) error {
	empty, cur, err := checkTables(ctx, db, path)
	if err != nil {
		return err
	}
	switch {
	case empty || cur == 0:
		d, derr := l.statDB()
		marker, merr := l.files.Marker()
		if derr == nil && merr == nil {
			if err := l.traceOfALedger(d, marker); err != nil {
				return err
			}
		}
		return fmt.Errorf("%w at %s (the database holds no ledger yet)", ErrNoLedger, l.root)
	case cur < migrations.Latest():
		return fmt.Errorf("%w: database schema version %d is older than this lockledger (%d) and a read-only open does not upgrade it; run any writing command (e.g. lockledger project) once",
			ErrOldSchema, cur, migrations.Latest())
	case cur > migrations.Latest():
		return fmt.Errorf("database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, migrations.Latest())
	}
	if err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'ledger_id'`).Scan(&l.id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w at %s (the database has no ledger id yet)", ErrNoLedger, l.root)
		}
		return err
	}
	l.genesis = events.Genesis(l.id)
	return nil
}

// cannotIndexWAL reports the failures of a read-only open that come from
// SQLite being unable to create or write the WAL index beside the database.
func cannotIndexWAL(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}
