package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
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

// OpenReadOnly opens an existing ledger for reading only: nothing is
// created, migrated or locked (only SQLite's own -wal and -shm files, where
// the directory is writable). immutable reads the file as no one writes it
// (see CannotIndexWAL). A database with no ledger yet fails with
// store.ErrNoLedger, one that needs migrating with store.ErrOldSchema.
func OpenReadOnly(ctx context.Context, cfg Config, immutable bool) (*Store, error) {
	db, err := sql.Open("sqlite", roDSN(cfg.Path, cfg.Busy, immutable))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if err := prepareReadOnly(ctx, db, cfg.Path); err != nil {
		db.Close()
		if errors.Is(err, store.ErrNotALedger) || errors.Is(err, store.ErrNoLedger) || errors.Is(err, store.ErrOldSchema) {
			return nil, err
		}
		return nil, fmt.Errorf("ledger: open %s read-only: %w", cfg.Path, err)
	}
	return &Store{Pool: store.NewPool(db), cfg: cfg, db: db, readOnly: true, immutable: immutable}, nil
}

func prepareReadOnly(ctx context.Context, db *sql.DB, path string) error {
	empty, cur, err := CheckTables(ctx, db, path)
	if err != nil {
		return err
	}
	switch {
	case empty || cur == 0:
		return fmt.Errorf("%w (the database holds no ledger yet)", store.ErrNoLedger)
	case cur < migrations.SQLite.ReadableFrom():
		return fmt.Errorf("%w: database schema version %d is older than this lockledger (%d) and a read-only open does not upgrade it; run any writing command (e.g. lockledger project) once",
			store.ErrOldSchema, cur, migrations.Latest())
	case cur > migrations.Latest():
		return fmt.Errorf("database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, migrations.Latest())
	}
	return nil
}

// CannotIndexWAL reports the failures of a read-only open that come from
// SQLite being unable to create or write the WAL index beside the database.
func CannotIndexWAL(err error) bool {
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
