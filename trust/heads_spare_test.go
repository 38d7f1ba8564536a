package trust

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/testkeys"
)

// Heads replaces the head by swapping it with its spare file: after the
// first two heads no file is made or freed, and the head read is always
// the last one stored.
func TestHeadsSwapsTheHeadWithItsSpare(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the swap is renameat2's")
	}
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	inodes := func() map[uint64]bool {
		out := map[uint64]bool{}
		for _, n := range []string{id + ".checkpoint", "." + id + ".spare"} {
			fi, err := os.Stat(filepath.Join(h.Dir, n))
			if err != nil {
				t.Fatal(err)
			}
			out[fi.Sys().(*syscall.Stat_t).Ino] = true
		}
		return out
	}
	var first map[uint64]bool
	for size := int64(1); size <= 6; size++ {
		if _, err := h.Store(id, size, testkeys.Signed(t, mine, id, size, at), v); err != nil {
			t.Fatal(err)
		}
		if last, err := h.Last(id, v); err != nil || last == nil || last.Size != size {
			t.Fatalf("after storing %d: %+v, %v", size, last, err)
		}
		if size == 2 {
			first = inodes()
		}
		if size > 2 {
			for ino := range inodes() {
				if !first[ino] {
					t.Fatalf("head %d made a new file (inode %d, had %v)", size, ino, first)
				}
			}
		}
	}
}

// A spare that is a symlink is never followed: the head is not stored
// and the file it points at is unchanged.
func TestHeadsRefusesASymlinkedSpare(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(h.Dir, "."+id+".spare")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store(id, 1, testkeys.Signed(t, mine, id, 1, at), v); err == nil {
		t.Fatal("a head was stored through a symlinked spare")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
}
