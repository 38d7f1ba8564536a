package ledger

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
)

// A writer stopped (SIGSTOP, a frozen VM) while it holds PostgreSQL's
// writer lock is, to the server, a session idle in its transaction. Another
// host's heartbeat must get through once the server has cut that session
// off (half the busy timeout), not fail with the busy timeout and lose its
// lock for as long as the stopped writer stays stopped.
func TestPostgresStoppedWriterDelaysOtherHeartbeatsOnly(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const busy = 2 * time.Second
	// The schema is made first under the default busy timeout: on a loaded
	// machine its migrations take longer than the short one under test.
	first, err := Open(ctx, t.TempDir(), WithDatabase(url), WithHost(Host{ID: "host-holder"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	open := func(host string) *Ledger {
		l, err := Open(ctx, t.TempDir(), WithDatabase(url), WithBusyTimeout(busy), WithHost(Host{ID: host}), Unsigned())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	stopped, holder := open("host-stopped"), open("host-holder")
	id := Identity{RequestID: "req_holder", Actor: "stall-test"}
	if _, err := holder.TryAcquire(ctx, AcquireRequest{Lock: "deploy", Identity: id, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	tx, err := stopped.beginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	if _, err := holder.Renew(ctx, RenewRequest{Lock: "deploy", Identity: id}); err != nil {
		t.Fatalf("heartbeat behind a stopped writer: %v (want it through once the server ends the stopped writer's transaction)", err)
	}
	if d := time.Since(start); d > busy {
		t.Errorf("heartbeat took %s behind the stopped writer, want at most the busy timeout %s", d, busy)
	}
	if err := tx.Commit(); err == nil {
		t.Error("the stopped writer's transaction committed after the server cut it off")
	}
}

// The busy timeout bounds how long other writers keep a writer out
// without getting anywhere, not its place in a queue that moves: queued
// behind another process's writes that each commit within it, for several
// busy timeouts in all, a writer waits its turn and gets through; behind a
// writer that holds the writer lock without committing, it fails with a
// transient error after one.
func TestBusyWaitLastsWhileOtherWritersGetThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	const busy = time.Second
	var err error
	// Each of the other process's writes reads its clock a few times while
	// it holds the writer lock: a tenth of the busy timeout each.
	const writes = 10
	holding := make(chan struct{}, 1)
	var slow atomic.Bool
	var other *Ledger
	clock := func() time.Time {
		if slow.Load() && !other.mu.TryLock() {
			select {
			case holding <- struct{}{}:
			default:
			}
			time.Sleep(busy / 10)
		} else if slow.Load() {
			other.mu.Unlock()
		}
		return time.Now()
	}
	other, err = Open(ctx, root, Unsigned(), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	waiter, err := Open(ctx, root, Unsigned(), WithBusyTimeout(busy))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiter.Close() })
	slow.Store(true)
	otherDone := make(chan error, 1)
	go func() {
		defer slow.Store(false)
		for i := range writes {
			if _, err := other.TryAcquire(ctx, req(fmt.Sprintf("other-%d", i), fmt.Sprintf("r-other-%d", i), 0)); err != nil {
				otherDone <- err
				return
			}
		}
		otherDone <- nil
	}()
	<-holding
	if _, err := waiter.TryAcquire(ctx, req("waiter", "r-waiter", 0)); err != nil {
		t.Fatalf("a writer queued behind writes that each got through: %v, want it through in its turn", err)
	}
	if err := <-otherDone; err != nil {
		t.Fatal(err)
	}
	unlock, err := other.lockWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := waiter.TryAcquire(ctx, req("stuck", "r-stuck", 0)); !IsTransient(err) {
		t.Fatalf("a writer behind one that holds the writer lock without committing: %v, want a transient busy error", err)
	}
}
