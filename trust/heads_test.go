package trust

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/testkeys"
)

const id = "0123456789abcdef"

var at = time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)

func TestHeadsKeepsOnlyTheLargestHeadSignedByTheKey(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	for _, c := range []struct {
		size int64
		kept bool
	}{{3, true}, {5, true}, {4, false}, {5, true}, {9, true}} {
		where, err := h.Store(id, c.size, testkeys.Signed(t, mine, id, c.size, at), v)
		if err != nil || (where != "") != c.kept {
			t.Fatalf("Store(%d): %q, %v; want kept %v", c.size, where, err, c.kept)
		}
	}
	last, err := h.Last(id, v)
	if err != nil || last == nil || last.Size != 9 {
		t.Fatalf("Last: %+v, %v; want size 9", last, err)
	}
	if _, err := h.Store("../escape", 1, testkeys.Signed(t, mine, "../escape", 1, at), v); err == nil {
		t.Fatal("a ledger id naming another directory was stored")
	}
	ents, err := os.ReadDir(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != id+".checkpoint" && e.Name() != id+".lock" && e.Name() != "."+id+".spare" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A process stopped inside Store (SIGSTOP, a frozen VM) holds the head's
// lock. A writer reads the head inside its write transaction, so the read
// must not wait for it; a second Store waits a bounded time and fails,
// leaving the head it found.
func TestHeadsStoppedStoreHoldsUpNoReader(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	if _, err := h.Store(id, 3, testkeys.Signed(t, mine, id, 3, at), v); err != nil {
		t.Fatal(err)
	}
	stopped, err := os.OpenFile(h.lockPath(id), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close()
	if err := unix.Flock(int(stopped.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		last, err := h.Last(id, v)
		if err == nil && (last == nil || last.Size != 3) {
			err = fmt.Errorf("read %+v, want the head of size 3", last)
		}
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * storeWait):
		stopped.Close() // let the reader go, so that it ends
		<-read
		t.Fatal("reading the head waited for a stopped Store's lock")
	}
	if _, err := h.Store(id, 4, testkeys.Signed(t, mine, id, 4, at), v); err == nil {
		t.Fatal("a head was stored under another process's lock")
	}
	if last, err := h.Last(id, v); err != nil || last.Size != 3 {
		t.Fatalf("after the refused store: %+v %v, want the head of size 3", last, err)
	}
}
