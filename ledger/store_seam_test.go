package ledger

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/store"
)

// The ledger does not know which engine it runs on: only open.go, which
// picks the engine, names one. The failures of either engine reach the
// ledger and its callers through store.Store (Classify).
func TestOnlyOpenNamesAnEngine(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "open.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(path, "github.com/lockledger/lockledger/store/") {
				t.Errorf("%s imports %s: only open.go picks the engine; ask store.Store instead", name, path)
			}
		}
	}
}

// A write kept out of ROOT/ledger.db by another program that holds its
// write lock (SQLITE_BUSY past the busy timeout) fails transiently, as the
// engine names it through the store: a retry may get through.
func TestSQLiteBusyIsTransient(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := Open(ctx, root, Unsigned(), WithBusyTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	db := rawDB(t, root)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	_, err = l.TryAcquire(ctx, req("busy", "r-busy", 0))
	if !IsTransient(err) || !errors.Is(err, store.ErrTransient) || IsUnreachable(err) {
		t.Fatalf("a write behind another program's write lock on the database: %v, want a transient error, not unreachable", err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, req("busy", "r-busy", 0)); err != nil {
		t.Fatalf("the write once the other program let go: %v", err)
	}
}
