package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAHeadAsideIsPutBackOnlyOnceItsRunIsGone: a head Drop moved aside
// stays aside while its run holds it, whoever looks at the heads (a reader
// of the same process too); once the run is gone without settling it (its
// file closed, as a kill closes it), the next look puts it back.
func TestAHeadAsideIsPutBackOnlyOnceItsRunIsGone(t *testing.T) {
	h := Heads{Dir: t.TempDir(), Root: "/srv/root"}
	const id = "0ed45c8f76393ef83edb5837f483c44b"
	want := []byte("a signed head\n")
	if err := os.WriteFile(h.Path(id), want, 0o600); err != nil {
		t.Fatal(err)
	}
	dropped, err := h.DropAll(id)
	if err != nil || len(dropped) != 1 {
		t.Fatalf("DropAll: %v, %d dropped", err, len(dropped))
	}
	if p := h.Kept(id); p != "" {
		t.Fatalf("a look while the run goes on put the head back: %s", p)
	}
	dropped[0].f.Close() // the run is gone
	if p := h.Kept(id); p != h.Path(id) {
		t.Fatalf("the head of a run gone is not put back: Kept %q", p)
	}
	if b, err := os.ReadFile(h.Path(id)); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("the head put back: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(h.Dir, ".*.dropped")); len(left) > 0 {
		t.Fatalf("left aside: %v", left)
	}
}

// TestASecondDropWhileTheFirstRunHoldsTheHeadIsRefused: a second run that
// moves the heads aside while the first still holds its head aside is
// told another run is going on, not that there is no head: it would go on
// unguarded, and the first run, failing, puts back a head of the old log
// under the second's recorded rollback.
func TestASecondDropWhileTheFirstRunHoldsTheHeadIsRefused(t *testing.T) {
	h := Heads{Dir: t.TempDir(), Root: "/srv/root"}
	const id = "0ed45c8f76393ef83edb5837f483c44b"
	if err := os.WriteFile(h.Path(id), []byte("a signed head\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := h.DropAll(id)
	if err != nil || len(first) != 1 {
		t.Fatalf("DropAll: %v, %d dropped", err, len(first))
	}
	second, err := Drop(h.Path(id)) // its own open file: flock tells them apart
	if err == nil {
		t.Fatalf("a second Drop while the first run holds the head aside: %v, no error", second)
	}
	if err := first[0].Settle(false); err != nil {
		t.Fatal(err)
	}
	if p := h.Kept(id); p != h.Path(id) {
		t.Fatalf("the head the first run put back: Kept %q", p)
	}
}

// Drop says another run is going on only when a run holds the head (a
// real flock of it, EWOULDBLOCK); any other failure of the flock, as a
// file system without flock gives (ENOLCK, EOPNOTSUPP, ENOSYS) or a bad
// descriptor (EBADF), is named as what it is and wraps the error.
func TestDropSaysAnotherRunOnlyWhenOneHoldsTheHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "head.checkpoint")
	if err := os.WriteFile(path, []byte("a signed head\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := unix.Flock(int(run.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	const another = "another run is going on"
	if d, err := Drop(path); d != nil || !errors.Is(err, unix.EWOULDBLOCK) || !strings.Contains(err.Error(), another) {
		t.Fatalf("Drop of a head a run holds: %v, %v; want it refused naming another run", d, err)
	}
	for _, errno := range []unix.Errno{unix.ENOLCK, unix.EOPNOTSUPP, unix.ENOSYS, unix.EBADF, unix.EINVAL} {
		err := dropLockError(path, errno)
		if !errors.Is(err, errno) || strings.Contains(err.Error(), another) || !strings.Contains(err.Error(), errno.Error()) {
			t.Errorf("flock failed with %v: %q; want it named as that, not as another run", errno, err)
		}
	}
	if err := dropLockError(path, unix.EAGAIN); !strings.Contains(err.Error(), another) {
		t.Errorf("flock failed with EAGAIN: %q; want another run", err)
	}
}

// Every look at the heads right after a killed run left a head aside finds
// the head, while another look puts it back: one that met the other's
// flock took the head for held by a live run and found none.
func TestLooksAtAHeadAsideAllFindIt(t *testing.T) {
	h := Heads{Dir: t.TempDir(), Root: "/srv/root"}
	const id = "0ed45c8f76393ef83edb5837f483c44b"
	missed := 0
	for round := 0; round < 2000; round++ {
		if err := os.WriteFile(droppedPath(h.Path(id)), []byte("a signed head\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if h.Kept(id) == "" {
					mu.Lock()
					missed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := os.Remove(h.Path(id)); err != nil {
			t.Fatal(err)
		}
	}
	if missed > 0 {
		t.Fatalf("%d looks of 8000 found no head while another put it back", missed)
	}
}
