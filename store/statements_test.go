package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"
)

// parsing counts the statements SQLite is given to parse: each prepared
// statement and each query or exec run as SQL, on the real driver.
type parsing struct {
	driver.Driver
	n *atomic.Int64
}

type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
}

type parsingConn struct {
	fullConn
	n *atomic.Int64
}

func (p parsing) Open(name string) (driver.Conn, error) {
	c, err := p.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return parsingConn{c.(fullConn), p.n}, nil
}

func (c parsingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.fullConn.PrepareContext(ctx, q)
}

func (c parsingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.fullConn.QueryContext(ctx, q, args)
}

func (c parsingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.fullConn.ExecContext(ctx, q, args)
}

var parsed atomic.Int64

func init() { sql.Register("sqlite-parsing", parsing{&sqlite.Driver{}, &parsed}) }

// TestAStatementIsParsedOncePerTransaction: a statement not yet prepared
// on the pool, run again and again in one transaction (a tree read is),
// is parsed once there; in the next transaction it comes prepared.
func TestAStatementIsParsedOncePerTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite-parsing", filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (2)`); err != nil {
		t.Fatal(err)
	}
	c := &Statements{prepare: db.PrepareContext, stmts: map[string]*sql.Stmt{}, pending: map[string]func(context.Context){}}
	defer c.Close()
	for round := 0; round < 2; round++ {
		if round > 0 {
			c.PreparePending(ctx)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := c.In(tx)
		before := parsed.Load()
		for x := 0; x < 5; x++ {
			var n int
			if err := q.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE x = ?`, x).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if want := map[int]int{1: 1, 2: 2}[x]; n != want {
				t.Fatalf("round %d: count of %d = %d, want %d", round, x, n, want)
			}
		}
		if got, want := parsed.Load()-before, int64(1-round); got != want {
			t.Fatalf("round %d: 5 runs of one statement in a transaction parsed %d statements, want %d", round, got, want)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestABindingRefusedToOneCallIsNotKept: a call whose context is done when
// it binds the pool's statement to the transaction fails alone, as a call
// of the transaction itself would; the transaction's next call of the
// statement, with a live context, runs it.
func TestABindingRefusedToOneCallIsNotKept(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t VALUES (?)`
	c := &Statements{prepare: db.PrepareContext, stmts: map[string]*sql.Stmt{}, pending: map[string]func(context.Context){}}
	defer c.Close()
	st, err := db.PrepareContext(ctx, insert)
	if err != nil {
		t.Fatal(err)
	}
	c.stmts[insert] = st
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	q := c.In(tx)
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.ExecContext(done, insert, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call with a context done: %v, want %v", err, context.Canceled)
	}
	if _, err := q.ExecContext(ctx, insert, 2); err != nil {
		t.Fatalf("the transaction's next call of the statement, with a live context: %v", err)
	}
	var xs []int
	rows, err := tx.QueryContext(ctx, `SELECT x FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(xs, []int{2}) {
		t.Fatalf("the table holds %v, want [2]", xs)
	}
}
