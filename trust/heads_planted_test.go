package trust

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testkeys"
	"golang.org/x/sys/unix"
)

// A FIFO planted at the head's lock file (a restored backup, a mistake)
// fails the store of a head; it does not block a reader of the head,
// which a writer is inside its write transaction, nor a writer keeping
// one.
func TestHeadsDoNotBlockOnAFIFOLock(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	if err := unix.Mkfifo(h.lockPath(id), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := h.Last(id, v)
		done <- err
		_, err = h.Store(id, 1, testkeys.Signed(t, mine, id, 1, at), v)
		done <- err
	}()
	for i, want := range []string{"read", "store"} {
		select {
		case err := <-done:
			if i == 1 && err == nil {
				t.Error("a head was stored under a FIFO for a lock")
			}
			if i == 0 && err != nil {
				t.Errorf("reading the head: %v, want no head and no error (the lock is not the reader's)", err)
			}
		case <-time.After(10 * time.Second):
			// Let the blocked open go, so that the goroutine ends.
			w, err := os.OpenFile(h.lockPath(id), os.O_WRONLY|unix.O_NONBLOCK, 0)
			if err == nil {
				w.Close()
			}
			t.Fatalf("the %s of the head blocked on a FIFO at its lock file", want)
		}
	}
}

// A symlink at the head's path (made by the trust store's owner) is
// replaced by the head, as a rename replaces it: it is never swapped into
// the spare's place, where it would fail every later head.
func TestHeadsReplacesASymlinkAtTheHeadAndGoesOnStoring(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(elsewhere, []byte(testkeys.Signed(t, mine, id, 1, at)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, h.Path(id)); err != nil {
		t.Fatal(err)
	}
	for size := int64(2); size <= 4; size++ {
		if _, err := h.Store(id, size, testkeys.Signed(t, mine, id, size, at), v); err != nil {
			t.Fatalf("storing head %d: %v", size, err)
		}
	}
	if last, err := h.Last(id, v); err != nil || last == nil || last.Size != 4 {
		t.Fatalf("Last: %+v, %v; want size 4", last, err)
	}
	if fi, err := os.Lstat(h.Path(id)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the head is not a regular file: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != testkeys.Signed(t, mine, id, 1, at) {
		t.Fatalf("the symlink's target was written: %q", b)
	}
}

// The spare is written in place: a spare with a second name (a hard link
// a backup of the trust directory made, cp -al or rsync --link-dest, or
// the head itself) must not have that other file rewritten.
func TestHeadsNeverRewritesAFileLinkedToTheSpare(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	for size := int64(1); size <= 2; size++ {
		if _, err := h.Store(id, size, testkeys.Signed(t, mine, id, size, at), v); err != nil {
			t.Fatal(err)
		}
	}
	spare := filepath.Join(h.Dir, "."+id+".spare")
	backup := filepath.Join(h.Dir, "backup")
	if err := os.Link(spare, backup); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store(id, 3, testkeys.Signed(t, mine, id, 3, at), v); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(backup); string(after) != string(before) {
		t.Fatalf("a file linked to the spare was rewritten: %q, was %q", after, before)
	}

	// The spare the head's own second name: the head is never written in place.
	if err := os.Remove(spare); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(h.Path(id), spare); err != nil {
		t.Fatal(err)
	}
	head3, _ := os.ReadFile(h.Path(id))
	var st unix.Stat_t
	if err := unix.Stat(h.Path(id), &st); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store(id, 4, testkeys.Signed(t, mine, id, 4, at), v); err != nil {
		t.Fatal(err)
	}
	if last, err := h.Last(id, v); err != nil || last == nil || last.Size != 4 {
		t.Fatalf("Last: %+v, %v; want size 4", last, err)
	}
	f, err := os.Open(spare)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &now); err != nil {
		t.Fatal(err)
	}
	if now.Ino == st.Ino {
		if b, _ := os.ReadFile(spare); string(b) != string(head3) {
			t.Fatalf("the old head's inode was written in place: %q, was %q", b, head3)
		}
	}
}
