package ledger_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

// queuedIDs is lock's queue as request ids, next first.
func queuedIDs(t *testing.T, l *ledger.Ledger, lock string) []string {
	t.Helper()
	q, err := l.Queue(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, w := range q {
		if w.Position != i+1 {
			t.Errorf("waiter %s at index %d has position %d", w.RequestID, i, w.Position)
		}
		ids = append(ids, w.RequestID)
	}
	return ids
}

// waitFor is a waiting caller's attempt (not its last): it queues.
func waitFor(lock string, id ledger.Identity) ledger.AcquireRequest {
	return ledger.AcquireRequest{Lock: lock, Identity: id, TTL: time.Minute, Waiting: true, WaitLeft: time.Minute}
}

// A free lock goes to the waiter queued first, whoever asks first once it
// is free; a caller that does not wait is refused it while waiters are
// queued; a waiter leaves the queue when it gets the lock, gives up, or
// its process dies, and one on another host stays until its wait ends.
func TestConformanceWaitersAreServedInArrivalOrder(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a, b := f.open("host-a"), f.open("host-b")
		if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("holder"), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		// A waiter whose process is killed while it waits.
		doomed := exec.Command("sleep", "600")
		if err := doomed.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { doomed.Process.Kill(); doomed.Wait() })
		dead := as("w-killed")
		dead.PID = doomed.Process.Pid

		order := []struct {
			l  *ledger.Ledger
			id ledger.Identity
		}{{a, as("w1")}, {b, as("w2")}, {a, dead}, {b, as("w3")}, {a, as("w4")}}
		for _, w := range order {
			for range 2 { // a second refused attempt queues nobody twice
				_, err := w.l.TryAcquire(ctx, waitFor("q", w.id))
				var held *ledger.HeldError
				if !errors.As(err, &held) || held.Holder.RequestID != "holder" {
					t.Fatalf("%s while the lock is held: got %v, want held by holder", w.id.RequestID, err)
				}
			}
		}
		want := []string{"w1", "w2", "w-killed", "w3", "w4"}
		if got := queuedIDs(t, a, "q"); !slices.Equal(got, want) {
			t.Fatalf("queue: got %v, want %v", got, want)
		}
		if got := queuedIDs(t, b, "q"); !slices.Equal(got, want) {
			t.Fatalf("queue seen from host-b: got %v, want %v", got, want)
		}
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "q", Identity: as("holder")}); err != nil {
			t.Fatal(err)
		}

		// Free, but w1 is queued first: neither a later waiter nor a caller
		// that does not wait gets it.
		_, err := b.TryAcquire(ctx, waitFor("q", as("w3")))
		var held *ledger.HeldError
		if !errors.As(err, &held) || len(held.Queue) != 3 || held.Queue[0].RequestID != "w1" {
			t.Fatalf("w3 on the free lock: got %v, want held by the 3 waiters queued before it", err)
		}
		_, err = a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("impatient"), RecordBlocked: true})
		if !errors.Is(err, ledger.ErrHeld) || !errors.As(err, &held) || len(held.Queue) != 5 {
			t.Fatalf("a caller that does not wait: got %v, want held by the queue of 5", err)
		}
		if got := queuedIDs(t, a, "q"); !slices.Equal(got, want) {
			t.Fatalf("queue after refusals: got %v, want %v", got, want)
		}
		acq, err := a.TryAcquire(ctx, waitFor("q", as("w1")))
		if err != nil {
			t.Fatalf("w1, the head of the queue: %v", err)
		}

		// w2 gives up (its last attempt records it); w-killed dies.
		if _, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("w2"), TTL: time.Minute,
			Waiting: true, RecordBlocked: true, Waited: time.Second}); !errors.Is(err, ledger.ErrHeld) {
			t.Fatalf("w2 giving up: got %v, want held", err)
		}
		if err := doomed.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		doomed.Wait()
		wantA := []string{"w3", "w4"}
		if got := queuedIDs(t, a, "q"); !slices.Equal(got, wantA) {
			t.Fatalf("queue on host-a after w1 got the lock, w2 gave up and w-killed died: got %v, want %v", got, wantA)
		}
		if f.url != "" {
			// Another host cannot tell that w-killed's process is gone:
			// it stays there until its wait ends.
			wantB := []string{"w-killed", "w3", "w4"}
			if got := queuedIDs(t, b, "q"); !slices.Equal(got, wantB) {
				t.Fatalf("queue on host-b: got %v, want %v", got, wantB)
			}
		}

		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "q", Identity: acq.Identity()}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryAcquire(ctx, waitFor("q", as("w4"))); !errors.As(err, &held) || held.Queue[0].RequestID != "w3" {
			t.Fatalf("w4 behind w3: got %v", err)
		}
		if _, err := a.TryAcquire(ctx, waitFor("q", as("w3"))); err != nil {
			t.Fatalf("w3, next after the killed waiter: %v", err)
		}

		// The log says all of it: each waiter queued once. A renewal of a
		// place (queued_seq), which a waiter's attempt records once it has
		// waited a sixth of events.WaiterTTL, as on a slow machine, is not
		// a second place.
		queued := map[string]int{}
		if err := replay.Scan(ctx, pgtest.Open(t, a.Source()), replay.Filter{}, func(ev *replay.Event) error {
			if ev.Type == events.AcquireBlocked && ev.Until != "" && ev.QueuedSeq == 0 {
				queued[ev.RequestID]++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range want {
			if queued[id] != 1 {
				t.Errorf("%s queued %d times, want once", id, queued[id])
			}
		}
		verifyOK(t, a)
	})
}

// A waiter whose wait has ended has left the queue.
func TestConformanceQueuedWaiterLeavesWhenItsWaitEnds(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a := f.open("host-a")
		if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("holder"), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		short := waitFor("q", as("short"))
		short.WaitLeft = 2 * time.Second
		asked := time.Now()
		if _, err := a.TryAcquire(ctx, short); !errors.Is(err, ledger.ErrHeld) {
			t.Fatalf("got %v, want held", err)
		}
		// Queued until its wait ends: a read begun before then finds it (on
		// a machine slow enough to begin it later, its leaving is the test).
		if got := queuedIDs(t, a, "q"); time.Since(asked) < short.WaitLeft && !slices.Equal(got, []string{"short"}) {
			t.Fatalf("queue: got %v, want [short]", got)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(queuedIDs(t, a, "q")) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the waiter is still queued 30s after its wait of 1s ended")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "q", Identity: as("holder")}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "q", Identity: as("later")}); err != nil {
			t.Fatalf("after the queue emptied: %v", err)
		}
	})
}
