package pgtest

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"

	"github.com/lockledger/lockledger/store/sqlite"
)

// Open opens a test's own pool on a ledger's database, closed when the test
// ends: where is a PostgreSQL URL, or a ledger's Source: a database of this
// cluster (reached as the superuser), else a SQLite file (opened with the
// ledger's own settings).
// A test reads or tampers with the tables through it as any other client
// of the database could; the ledger itself hands out no handle.
func Open(t testing.TB, where string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", where
	switch f := strings.Fields(where); {
	case strings.HasPrefix(where, "postgres database "):
		dsn = Get(t).SocketURL(f[2])
	case !strings.HasPrefix(where, "postgres://"):
		driver, dsn = "sqlite", sqlite.DSN(where, 10*time.Second)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
