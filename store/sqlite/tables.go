package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
)

// CheckTables refuses a database whose tables are not the ledger's or
// whose text is not UTF-8, and reports whether it has none at all (a new
// database) and its schema version as schema_migrations records it (0 for
// none), read here anyway so that opening does not ask again.
func CheckTables(ctx context.Context, q store.Querier, path string) (empty bool, version int, err error) {
	names, err := store.QueryAll(ctx, q, store.ScanOne[string], `SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return false, 0, err
	}
	if len(names) == 0 {
		var enc string
		if err := q.QueryRowContext(ctx, `SELECT encoding FROM pragma_encoding`).Scan(&enc); err != nil {
			return false, 0, err
		}
		return true, 0, checkEncoding(path, enc)
	}
	ours, err := migrations.Tables()
	if err != nil {
		return false, 0, err
	}
	var foreign []string
	var verr error
	var enc string
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
		version, enc, verr = currentVersion(ctx, q)
		if verr == nil && version > migrations.Latest() {
			return false, version, nil
		}
	}
	if !hasMigrations || len(foreign) > 0 {
		if len(foreign) == 0 {
			foreign = names
		}
		return false, 0, fmt.Errorf("ledger: %s: %w: it is an SQLite database of another application (tables %s); lockledger adds nothing to it",
			path, store.ErrNotALedger, termtext.Clip(strings.Join(foreign, ", "), 200))
	}
	if verr != nil {
		return false, version, verr
	}
	return false, version, checkEncoding(path, enc)
}

// currentVersion reads the schema version and, in the same statement, the
// database's text encoding.
func currentVersion(ctx context.Context, q store.Querier) (version int, encoding string, err error) {
	err = q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0), (SELECT encoding FROM pragma_encoding) FROM schema_migrations`).Scan(&version, &encoding)
	return version, encoding, err
}

// checkEncoding refuses a database whose text is not UTF-8. Every ledger
// lockledger creates is; one converted to UTF-16 keeps its bodies (BLOBs)
// but would read them differently wherever SQLite makes them text, as the
// audit reads do (store.Bodies and store.ChainRowsAfter).
func checkEncoding(path, enc string) error {
	if enc == "UTF-8" {
		return nil
	}
	return fmt.Errorf("ledger: %s: %w: its text is encoded in %s, and a ledger's database is UTF-8 (every ledger lockledger creates is); lockledger adds nothing to it and reads it no further. A copy made by `sqlite3 %s .dump | sqlite3 NEW` is UTF-8 and keeps every event and hash",
		path, store.ErrNotALedger, termtext.Clip(enc, 40), path)
}

// CheckForeign reports store.ErrNotALedger for a database at path whose
// tables are another application's or whose text is not UTF-8, reading it
// without writing anything; any other failure is left for the writable
// open to find and report.
func CheckForeign(ctx context.Context, path string, busy time.Duration) error {
	db, err := sql.Open("sqlite", roDSN(path, busy, false))
	if err != nil {
		return nil
	}
	defer db.Close()
	if _, _, err := CheckTables(ctx, db, path); errors.Is(err, store.ErrNotALedger) {
		return err
	}
	return nil
}
