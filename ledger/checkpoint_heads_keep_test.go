package ledger

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/trust"
)

// A head that could not be kept once the write commits (a FIFO or a
// directory at its spare file, a FIFO at its lock) fails the write before
// it commits: the kept head advances with every signed write, or the write
// fails; it never stands still while writes go on.
func TestAHeadThatCannotBeKeptFailsTheWrite(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	for name, plant := range map[string]func(t *testing.T, spare, lock string){
		"a FIFO at the spare": func(t *testing.T, spare, _ string) {
			os.Remove(spare)
			if err := syscall.Mkfifo(spare, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"a directory at the spare": func(t *testing.T, spare, _ string) {
			os.Remove(spare)
			if err := os.Mkdir(spare, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"a FIFO at the lock": func(t *testing.T, _, lock string) {
			os.Remove(lock)
			if err := syscall.Mkfifo(lock, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			heads := trust.Heads{Dir: t.TempDir()}
			e := open(t, WithSigner(s), WithHeads(heads.Dir))
			heads.Root = e.l.Root()
			cycle(t, e.l, "a", "r1")
			cycle(t, e.l, "a", "r2") // the spare exists after the second head
			id := e.l.ID()
			stem := filepath.Base(heads.Path(id))
			stem = stem[:len(stem)-len(".checkpoint")]
			plant(t, filepath.Join(heads.Dir, "."+stem+".spare"), filepath.Join(heads.Dir, stem+".lock"))
			before := count(t, e.l)
			_, err := e.l.TryAcquire(context.Background(), req("b", "r3", 100))
			var he *trust.HeadError
			if !errors.As(err, &he) || !errors.Is(err, trust.ErrCannotKeep) {
				t.Fatalf("a write whose head cannot be kept: %v, want a HeadError for ErrCannotKeep", err)
			}
			if n := count(t, e.l); n != before {
				t.Fatalf("%d events after the refused write, want %d", n, before)
			}
			if kept, err := heads.Last(id, v); err != nil || kept == nil || kept.Size != int64(before) {
				t.Fatalf("head kept: %+v, %v; want size %d", kept, err, before)
			}
		})
	}
}

// A copy of a root (cp -a) holds the same ledger; each keeps its own head
// in the same heads directory, so that writing to the copy leaves the
// original's writes standing, and a cut of the original is still refused.
func TestACopiedRootKeepsAHeadOfItsOwn(t *testing.T) {
	t.Parallel()
	s, v := testKey(t)
	ctx := context.Background()
	heads := trust.Heads{Dir: t.TempDir()}
	e := open(t, WithSigner(s), WithHeads(heads.Dir))
	cycle(t, e.l, "a", "r1")
	copyRoot := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", e.root, copyRoot).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	c, err := Open(ctx, copyRoot, WithClock(e.clock.Now), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}), WithSigner(s), WithHeads(heads.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.ID() != e.l.ID() {
		t.Fatalf("the copy holds ledger %s, the original %s", c.ID(), e.l.ID())
	}
	cycle(t, c, "c1", "rc1")
	cycle(t, c, "c2", "rc2")
	c.Close()
	// The original, untouched, writes on.
	cycle(t, e.l, "b", "r2")
	for root, want := range map[string]int64{e.l.Root(): 4, c.Root(): 6} {
		h := trust.Heads{Dir: heads.Dir, Root: root}
		if kept, err := h.Last(e.l.ID(), v); err != nil || kept == nil || kept.Size != want {
			t.Fatalf("head kept for %s: %+v, %v; want size %d", root, kept, err, want)
		}
	}
	// A cut of the original is still refused by its own head.
	db := pgtest.Open(t, e.l.Source())
	for _, q := range []string{`DROP TRIGGER events_no_delete`, `DROP TRIGGER tlog_hashes_no_delete`,
		`DELETE FROM events WHERE seq > 2`, `DELETE FROM tlog_hashes WHERE seq > 2`, `DELETE FROM locks WHERE lock_name = 'b'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	other, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}), WithSigner(s), WithHeads(heads.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.TryAcquire(ctx, req("d", "r3", 100))
	var ne *checkpoint.NotExtendedError
	if !errors.As(err, &ne) || ne.Earlier.Size != 4 {
		t.Fatalf("a write on the cut original: %v, want a NotExtendedError against its head of 4", err)
	}
}
