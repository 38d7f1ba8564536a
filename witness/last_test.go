package witness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testkeys"
	"github.com/lockledger/lockledger/trust"
)

// TestLastFindsTheLargestCheckpointOfTheLedgerSignedByTheKey: in a file
// shared with another ledger, whose notes fill more than one chunk after
// this ledger's, and in a directory; notes by another key of the same
// name, or of another ledger, are skipped.
func TestLastFindsTheLargestCheckpointOfTheLedgerSignedByTheKey(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	forger, _, _ := testkeys.Signer(t, "ops")
	dir := t.TempDir()
	file, wdir := filepath.Join(dir, "witness.log"), filepath.Join(dir, "witness.d")
	if err := os.Mkdir(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(testkeys.Signed(t, mine, id, 1, at) + testkeys.Signed(t, mine, id, 5, at) + testkeys.Signed(t, forger, id, 50, at))
	for size := int64(1); b.Len() < 3*64<<10; size++ {
		b.WriteString(testkeys.Signed(t, mine, "another", size, at))
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		size int64
		note string
	}{{1, testkeys.Signed(t, mine, id, 1, at)}, {9, testkeys.Signed(t, mine, id, 9, at)}, {10, testkeys.Signed(t, mine, "another", 10, at)}} {
		if _, err := write(wdir, strings.Split(strings.SplitN(n.note, "\n", 2)[0], "/")[1], n.size, at, n.note); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(wdir, FileName(id, 99, at)), []byte(testkeys.Signed(t, forger, id, 99, at)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int64{file: 5, wdir: 9} {
		s, err := trust.Last(path, id, v)
		if err != nil || s == nil || s.Size != want {
			t.Fatalf("Last(%s): %+v, %v; want size %d", path, s, err, want)
		}
	}
	if s, err := trust.Last(filepath.Join(dir, "missing"), id, v); s != nil || err != nil {
		t.Fatalf("a missing witness: %+v, %v", s, err)
	}
	p := New([]string{file, wdir, filepath.Join(dir, "missing")}, time.Minute, nil)
	defer p.Wait()
	found, err := p.Last(context.Background(), id, v)
	if err != nil || len(found) != 2 || found[0].Size != 5 || found[1].Size != 9 || found[1].Source != "witness "+wdir {
		t.Fatalf("Publisher.Last: %+v, %v", found, err)
	}
}

// TestANoteAfterATornOneIsRead: a note torn by a full disk where it could
// not be cut back (appended without the lock: a file system without
// locks, a lock held past appendWait, an older lockledger) is left in the
// witness file; the next note, appended after it, is still read as its
// ledger's, wherever the torn one was cut.
func TestANoteAfterATornOneIsRead(t *testing.T) {
	s, v, _ := testkeys.Signer(t, "ops")
	first, torn, next := testkeys.Signed(t, s, id, 1, at), testkeys.Signed(t, s, id, 2, at), testkeys.Signed(t, s, id, 3, at)
	file := filepath.Join(t.TempDir(), "witness.log")
	for cut := 1; cut < len(torn); cut++ {
		if err := os.WriteFile(file, []byte(first+torn[:cut]), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := write(file, id, 3, at, next); err != nil {
			t.Fatal(err)
		}
		if got, err := trust.Last(file, id, v); err != nil || got == nil || got.Size != 3 {
			b, _ := os.ReadFile(file)
			t.Fatalf("the note after one torn after %d bytes: Last %v, %v; the file holds %q", cut, got != nil && got.Size == 3, err, b)
		}
	}
}
