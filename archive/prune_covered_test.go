package archive_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/lockledger/lockledger/archive"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/store"
)

// TestPruneOfAKeptHeadsRangeNeedsItsArchiveKept: the head this user keeps
// covers the events to prune; their archive verified when it was read but
// is gone by the prune's write: the prune is refused naming the head, and
// the ledger is unchanged. Put back, the same archive prunes.
func TestPruneOfAKeptHeadsRangeNeedsItsArchiveKept(t *testing.T) {
	ctx := context.Background()
	owner := newSigner(t)
	root, heads := t.TempDir(), t.TempDir()
	l, err := ledger.Open(ctx, root, ledger.WithSigner(owner.s), ledger.WithHeads(heads), ledger.WithCheckpointPolicy(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cycles(t, l, 5)
	tx, err := l.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	below, err := archive.Boundary(ctx, tx, 0, time.Now().Add(time.Hour))
	if err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	_, err = archive.Write(ctx, tx, f, below)
	tx.Rollback()
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := archive.Read(f, path, "", replay.WithTrust(&replay.Trust{Verifiers: []note.Verifier{owner.v}, Expected: true}))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := func() (int64, int64) {
		tx, err := l.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		first, err := store.FirstSeq(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		_, last, err := store.TreeLag(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		return first, last
	}
	first, last := size()

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = l.Prune(ctx, who(), c, path)
	var ce *archive.CoveredError
	if !errors.As(err, &ce) || !errors.Is(err, archive.ErrMismatch) || ce.Size < c.FirstSeq {
		t.Fatalf("a prune of a range the kept head covers, its archive gone: %v, want a CoveredError naming the head", err)
	}
	if f2, l2 := size(); f2 != first || l2 != last {
		t.Fatalf("the refused prune changed the ledger: seq %d-%d, was %d-%d", f2, l2, first, last)
	}

	// Another file at the path is not the archive that was checked.
	if err := os.WriteFile(path, append(kept, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prune(ctx, who(), c, path); !errors.As(err, &ce) {
		t.Fatalf("a prune whose archive changed since it was checked: %v, want a CoveredError", err)
	}
	if f2, l2 := size(); f2 != first || l2 != last {
		t.Fatalf("the refused prune changed the ledger: seq %d-%d, was %d-%d", f2, l2, first, last)
	}

	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prune(ctx, who(), c, path); err != nil {
		t.Fatalf("the prune with its archive kept: %v", err)
	}
	if f2, _ := size(); f2 != c.LastSeq+1 {
		t.Fatalf("after the prune the live log starts at seq %d, want %d", f2, c.LastSeq+1)
	}
}
