package witness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/trust"
)

func signer(t *testing.T, name string) (note.Signer, note.Verifier) {
	t.Helper()
	skey, _, err := checkpoint.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, checkpoint.VerifierOf(s)
}

func signed(t *testing.T, s note.Signer, ledger string, size int64) string {
	t.Helper()
	msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: checkpoint.Origin(ledger), Size: size, Root: tlog.Hash{byte(size)}, Time: at}, s)
	if err != nil {
		t.Fatal(err)
	}
	return string(msg)
}

// TestLastFindsTheLargestCheckpointOfTheLedgerSignedByTheKey: in a file
// shared with another ledger, whose notes fill more than one chunk after
// this ledger's, and in a directory; notes by another key of the same
// name, or of another ledger, are skipped.
func TestLastFindsTheLargestCheckpointOfTheLedgerSignedByTheKey(t *testing.T) {
	mine, v := signer(t, "ops")
	forger, _ := signer(t, "ops")
	dir := t.TempDir()
	file, wdir := filepath.Join(dir, "witness.log"), filepath.Join(dir, "witness.d")
	if err := os.Mkdir(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(signed(t, mine, id, 1) + signed(t, mine, id, 5) + signed(t, forger, id, 50))
	for size := int64(1); b.Len() < 3*64<<10; size++ {
		b.WriteString(signed(t, mine, "another", size))
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		size int64
		note string
	}{{1, signed(t, mine, id, 1)}, {9, signed(t, mine, id, 9)}, {10, signed(t, mine, "another", 10)}} {
		if _, err := write(wdir, strings.Split(strings.SplitN(n.note, "\n", 2)[0], "/")[1], n.size, at, n.note); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(wdir, FileName(id, 99, at)), []byte(signed(t, forger, id, 99)), 0o600); err != nil {
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
