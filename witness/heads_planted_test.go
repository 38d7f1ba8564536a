package witness

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A FIFO planted at the head's lock file (a restored backup, a mistake)
// fails the read of the head; it does not block the reader, which a
// writer is inside its write transaction.
func TestHeadsLastDoesNotBlockOnAFIFOLock(t *testing.T) {
	mine, v := signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	if err := unix.Mkfifo(h.lockPath(id), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.Last(id, v)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO at the lock file was taken for a lock")
		}
	case <-time.After(10 * time.Second):
		// Let the blocked open go, so that the goroutine ends.
		w, err := os.OpenFile(h.lockPath(id), os.O_WRONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			w.Close()
		}
		<-done
		t.Fatal("reading the head blocked on a FIFO at its lock file")
	}
	if _, err := h.Store(id, 1, signed(t, mine, id, 1), v); err == nil {
		t.Error("a head was stored under a FIFO for a lock")
	}
}
