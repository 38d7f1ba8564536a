package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/store/sqlite"
)

// TestDetachTruncatesALargeWAL: a writer that leaves a WAL far above the
// autocheckpoint's size (one large transaction) checkpoints and truncates
// it on Detach, so that the next process does not rebuild the WAL index
// from all of it; the ledger reads back whole afterwards.
func TestDetachTruncatesALargeWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	l, err := Open(ctx, root, Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.TryAcquire(ctx, AcquireRequest{Lock: "app", Identity: Identity{Actor: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	// One transaction larger than sqlite.WALTrimAbove, as project or import can make.
	if _, err := pgtest.Open(t, l.Source()).ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('wal-trim-test', hex(randomblob($1)))`, sqlite.WALTrimAbove); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(root, DBFile) + "-wal"
	if fi, err := os.Stat(wal); err != nil || fi.Size() <= sqlite.WALTrimAbove {
		t.Fatalf("setup: WAL %v, %v; want more than %d bytes", fi, err, sqlite.WALTrimAbove)
	}
	if err := l.Detach(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(wal); err != nil || fi.Size() != 0 {
		t.Fatalf("after Detach: WAL %v, %v; want it truncated to 0 bytes", fi, err)
	}
	l, err = Open(ctx, root, MustExist(), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.Status(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.RequestID != a.RequestID {
		t.Fatalf("after the truncation: status %+v, want held by %s", st, a.RequestID)
	}
}
