package lease

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// TestWaitersLeaveTheWriterMutexAlone: while a lock has an active holder,
// a waiter's attempts after the first are answered from the row and the
// file, without the writer mutex, so waiters cannot starve the holder's
// release. The test holds the writer mutex itself all along: the waiter
// still sees the holder on every attempt in between.
func TestWaitersLeaveTheWriterMutexAlone(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	holder, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	held := func(rid string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
	}
	if _, err := holder.TryAcquire(ctx, held("holder")); err != nil {
		t.Fatal(err)
	}
	waiter, err := ledger.Open(ctx, root, ledger.WithBusyTimeout(20*time.Millisecond), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	f, err := os.OpenFile(filepath.Join(root, ledger.WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int32
	_, err = Wait(ctx, waiter, held("waiter"), 600*time.Millisecond, func(h *ledger.HeldError, _ time.Duration) {
		if h.Holder.RequestID == "holder" {
			seen.Add(1)
		}
	})
	if !ledger.IsTransient(err) {
		t.Fatalf("last attempt with the writer mutex taken: %v, want a transient (busy) error", err)
	}
	if seen.Load() < 2 {
		t.Fatalf("the waiter saw the holder on %d attempts, want every attempt between the first and the last", seen.Load())
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	var he *ledger.HeldError
	if _, err := Wait(ctx, waiter, held("waiter"), 100*time.Millisecond, nil); !errors.As(err, &he) {
		t.Fatalf("with the writer mutex free: %v, want HeldError", err)
	}
}

// onceLive is a cancelled context whose first Err says it is not: the
// caller's signal lands between Wait's look at ctx and its attempt.
type onceLive struct {
	context.Context
	looked atomic.Bool
}

func (c *onceLive) Err() error {
	if !c.looked.Swap(true) {
		return nil
	}
	return c.Context.Err()
}

// A wait cancelled in the middle of an attempt (SIGINT while it renews
// its place or peeks) still records its acquire_blocked, as one cancelled
// between attempts does: the record is made by the last attempt, on a
// context of its own.
func TestAWaitCancelledMidAttemptIsRecorded(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, t.TempDir(), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	req := func(rid string) ledger.AcquireRequest {
		return ledger.AcquireRequest{Lock: "x", Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}, TTL: 100 * time.Second}
	}
	if _, err := l.TryAcquire(ctx, req("holder")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var held *ledger.HeldError
	if _, err := Wait(&onceLive{Context: cancelled}, l, req("waiter"), time.Minute, nil); !errors.As(err, &held) {
		t.Fatalf("a wait cancelled mid-attempt: %v, want the HeldError its last attempt records", err)
	}
	var n int
	if err := pgtest.Open(t, l.Source()).QueryRowContext(ctx, `SELECT count(*) FROM events WHERE type = 'acquire_blocked' AND json_extract(body, '$.request_id') = 'waiter'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d acquire_blocked of the waiter, want 1", n)
	}
}
