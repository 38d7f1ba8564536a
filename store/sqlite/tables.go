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

// CheckTables refuses a database whose tables are not the ledger's, and
// reports whether it has none at all (a new database) and its schema
// version as schema_migrations records it (0 for none), read here anyway
// so that opening does not ask again.
func CheckTables(ctx context.Context, q store.Querier, path string) (empty bool, version int, err error) {
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
			path, store.ErrNotALedger, termtext.Clip(strings.Join(foreign, ", "), 200))
	}
	return false, version, verr
}

func currentVersion(ctx context.Context, q store.Querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// CheckForeign reports store.ErrNotALedger for a database at path whose
// tables are another application's, reading it without writing anything;
// any other failure is left for the writable open to find and report.
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
