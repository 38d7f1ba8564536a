package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fencedDB is a fresh database with the fence installed and a table
// orders fenced as resource "orders".
func fencedDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id int PRIMARY KEY, state text NOT NULL, fencing_token bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := fence.InstallPostgres(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Twice: installing again changes nothing.
	if err := fence.InstallPostgres(ctx, db, pgx.Identifier{"orders"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, fence.AttachSQL(pgx.Identifier{"public", "orders"}, "orders")); err != nil {
		t.Fatal(err)
	}
	return db
}

func orderState(t *testing.T, db *sql.DB) (state string, token int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT state, fencing_token FROM orders WHERE id = 1`).Scan(&state, &token); err != nil {
		t.Fatal(err)
	}
	return state, token
}

func fenceToken(t *testing.T, db *sql.DB, resource string) int64 {
	t.Helper()
	var tok int64
	if err := db.QueryRow(`SELECT token FROM lockledger_fences WHERE resource = $1`, resource).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// The database itself refuses a row whose token is below the resource's,
// with SQLSTATE LF001 that AsStale reads; the row and the resource's
// token stay; equal and higher tokens pass and advance it; the refusal
// recorded is a fence_rejected event.
func TestPostgresFenceRefusesAStaleRowInTheDatabase(t *testing.T) {
	ctx := context.Background()
	db := fencedDB(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO orders VALUES (1, 'new', 5)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE orders SET state = 'paid', fencing_token = 7 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(ctx, `UPDATE orders SET state = 'cancelled', fencing_token = 6 WHERE id = 1`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != fence.SQLStateStale {
		t.Fatalf("token 6 after 7: %v, want SQLSTATE %s", err, fence.SQLStateStale)
	}
	stale, ok := fence.AsStale(err)
	if !ok || stale.Resource != "orders" || stale.Token != 6 || stale.Current != 7 || stale.Fence != events.FencePostgresWrite {
		t.Fatalf("AsStale: %+v %v", stale, ok)
	}
	if state, tok := orderState(t, db); state != "paid" || tok != 7 || fenceToken(t, db, "orders") != 7 {
		t.Fatalf("after the refusal: %s %d (fence %d), want paid 7", state, tok, fenceToken(t, db, "orders"))
	}
	// A new row with a stale token, too.
	if _, err := db.ExecContext(ctx, `INSERT INTO orders VALUES (2, 'new', 3)`); !errors.As(err, &pe) || pe.Code != fence.SQLStateStale {
		t.Fatalf("insert with token 3: %v", err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE orders SET state = 'shipped', fencing_token = 7 WHERE id = 1`); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE orders SET fencing_token = NULL WHERE id = 1`); !errors.As(err, &pe) || pe.Code == fence.SQLStateStale {
		t.Fatalf("no token: %v, want refused as bad input", err)
	}

	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := fence.Record(ctx, l, "orders", ledger.Identity{RequestID: "req_stale"}, err0(db)); err != nil {
		t.Fatal(err)
	}
	got := rejections(t, l)
	if len(got) != 1 || got[0].Fence != events.FencePostgresWrite || got[0].Resource != "orders" ||
		got[0].StaleToken != 2 || got[0].CurrentToken != 7 || got[0].RequestID != "req_stale" {
		t.Fatalf("recorded: %+v", got)
	}
	verifyClean(t, l)
}

// err0 is a stale write's error, as a service holding token 2 gets it.
func err0(db *sql.DB) error {
	_, err := db.Exec(`UPDATE orders SET state = 'stale', fencing_token = 2 WHERE id = 1`)
	return err
}

// Writers of one resource in concurrent transactions, each with its own
// token: the row ends with the highest token's write, every refusal is
// LF001, and the fence's token is the highest.
func TestPostgresFenceConcurrentWritersNeverRegress(t *testing.T) {
	ctx := context.Background()
	db := fencedDB(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO orders VALUES (1, 'token 1', 1)`); err != nil {
		t.Fatal(err)
	}
	const writers = 12
	var wg sync.WaitGroup
	errs := make([]error, writers+2)
	for tok := 2; tok <= writers+1; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[tok] = func() error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, `UPDATE orders SET state = $1, fencing_token = $2 WHERE id = 1`,
					"token "+strconv.Itoa(tok), tok); err != nil {
					return err
				}
				return tx.Commit()
			}()
		}()
	}
	wg.Wait()
	for tok := 2; tok <= writers+1; tok++ {
		if errs[tok] == nil {
			continue
		}
		if _, ok := fence.AsStale(errs[tok]); !ok || tok == writers+1 {
			t.Fatalf("token %d: %v", tok, errs[tok])
		}
	}
	if state, tok := orderState(t, db); state != "token "+strconv.Itoa(writers+1) || tok != writers+1 || fenceToken(t, db, "orders") != writers+1 {
		t.Fatalf("the row ends as %q token %d (fence %d), want the highest token's", state, tok, fenceToken(t, db, "orders"))
	}
}

// docs/fencing.md gives the SQL InstallPostgres runs, as it is.
func TestFencingDocGivesThePostgresSQL(t *testing.T) {
	b, err := os.ReadFile("../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```sql\n"+fence.PostgresSQL+"```") {
		t.Fatal("docs/fencing.md does not hold fence.PostgresSQL in its sql block: copy it there")
	}
}
