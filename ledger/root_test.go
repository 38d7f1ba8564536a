package ledger

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/migrations"
)

// makeLedger creates a ledger with one event at a fresh root and closes it.
func makeLedger(t *testing.T) (root, id string) {
	t.Helper()
	e := open(t)
	if _, err := e.l.TryAcquire(context.Background(), req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	id = e.l.ID()
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	return e.root, id
}

func TestANewLedgerIsRecordedInWriterFlock(t *testing.T) {
	t.Parallel()
	root, id := makeLedger(t)
	b, err := os.ReadFile(filepath.Join(root, WriterMux))
	if err != nil || string(b) != id+"\n" {
		t.Fatalf("writer.flock holds %q (%v), want the ledger id %s", b, err, id)
	}
}

// A root written before writer.flock recorded the ledger id gets it on its
// next writable open, and is protected from then on.
func TestAnOlderRootGetsItsLedgerRecordedAndThenProtected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, id := makeLedger(t)
	mux := filepath.Join(root, WriterMux)
	if err := os.Truncate(mux, 0); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, root, Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() != id {
		t.Fatalf("reopened as ledger %s, was %s", l.ID(), id)
	}
	l.Close()
	if b, _ := os.ReadFile(mux); string(b) != id+"\n" {
		t.Fatalf("writer.flock holds %q after the open, want %s", b, id)
	}
	db := filepath.Join(root, DBFile)
	for _, p := range []string{db + "-wal", db + "-shm"} {
		os.Remove(p)
	}
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {MustExist()}, {ReadOnly()}} {
		if _, err := Open(ctx, root, append(opts, Unsigned())...); !errors.Is(err, ErrLedgerGone) {
			t.Fatalf("Open of an emptied ledger.db: %v, want ErrLedgerGone", err)
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Fatalf("ledger.db after the refusals: %v %v", fi, err)
	}
}

func TestAnotherApplicationsDatabaseIsNotALedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, DBFile)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {MustExist()}, {ReadOnly()}} {
		if _, err := Open(ctx, root, append(opts, Unsigned())...); !errors.Is(err, ErrNotALedger) {
			t.Fatalf("Open of another application's database: %v, want ErrNotALedger", err)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the other application's database was written to")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Fatalf("files were created beside it: %v", entries)
	}
}

// A database whose text is UTF-16 is not a ledger, whether it holds no
// table yet or the ledger's tables: every open refuses it, naming its
// encoding; nothing is written to it or created beside it.
func TestAUTF16DatabaseIsNotALedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, withTables := range []bool{false, true} {
		root := t.TempDir()
		path := filepath.Join(root, DBFile)
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1) // the encoding is the connection's that creates the file
		for _, q := range []string{`PRAGMA encoding = 'UTF-16le'`, `CREATE TABLE t (x)`, `DROP TABLE t`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if withTables {
			if err := migrations.Apply(ctx, db, func() string { return "2026-12-01T00:00:00Z" }); err != nil {
				t.Fatal(err)
			}
		}
		var enc string
		if err := db.QueryRow(`PRAGMA encoding`).Scan(&enc); err != nil || enc != "UTF-16le" {
			t.Fatalf("encoding %q, %v", enc, err)
		}
		db.Close()
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range [][]Option{nil, {MustExist()}, {ReadOnly()}} {
			_, err := Open(ctx, root, append(opts, Unsigned())...)
			if !errors.Is(err, ErrNotALedger) || !strings.Contains(err.Error(), "encoded in UTF-16le") {
				t.Fatalf("Open of a UTF-16 database (ledger tables: %v): %v, want ErrNotALedger naming UTF-16le", withTables, err)
			}
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatalf("the UTF-16 database (ledger tables: %v) was written to", withTables)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 1 {
			t.Fatalf("files were created beside the UTF-16 database (ledger tables: %v): %v", withTables, entries)
		}
	}
}
