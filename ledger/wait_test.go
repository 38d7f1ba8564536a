package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitersLeaveTheWriterMutexAlone: while a lock has an active holder,
// a waiter's attempts after the first are answered from the row and the
// file, without the writer mutex, so waiters cannot starve the holder's
// release. The test holds the writer mutex itself all along: the waiter
// still sees the holder on every attempt in between.
func TestWaitersLeaveTheWriterMutexAlone(t *testing.T) {
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("x", "holder", 100)); err != nil {
		t.Fatal(err)
	}
	waiter, err := Open(ctx, e.root, WithBusyTimeout(20*time.Millisecond), WithClock(e.clock.Now),
		WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	f, err := os.OpenFile(filepath.Join(e.root, WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var held atomic.Int32
	_, err = waiter.AcquireWait(ctx, req("x", "waiter", 100), 600*time.Millisecond, func(h *HeldError, _ time.Duration) {
		if h.Holder.RequestID == "holder" {
			held.Add(1)
		}
	})
	if !IsTransient(err) {
		t.Fatalf("last attempt with the writer mutex taken: %v, want a transient (busy) error", err)
	}
	if held.Load() < 2 {
		t.Fatalf("the waiter saw the holder on %d attempts, want every attempt between the first and the last", held.Load())
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	var he *HeldError
	if _, err := waiter.AcquireWait(ctx, req("x", "waiter", 100), 100*time.Millisecond, nil); !errors.As(err, &he) {
		t.Fatalf("with the writer mutex free: %v, want HeldError", err)
	}
}
