package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/proc"
)

// A lock no process holds is judged by its TTL and heartbeats alone: the
// process that took it exiting changes nothing, a heartbeat from any other
// process keeps it, and without heartbeats it goes stale, never dead.
func TestALockNoProcessHoldsIsJudgedByItsTTLOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	r := req("ci", "r1", 100)
	r.NoProcess = true
	a, err := e.l.TryAcquire(ctx, r)
	if err != nil || a.Record.PID != 0 {
		t.Fatalf("acquire with no process: %+v, %v; want pid 0", a, err)
	}
	e.probe.set(100, proc.Gone, "")
	e.probe.set(0, proc.Gone, "")
	var held *HeldError
	for range 3 {
		e.clock.Add(8 * time.Second)
		if _, err := e.l.TryAcquire(ctx, req("ci", "r2", 200)); !errors.As(err, &held) {
			t.Fatalf("with heartbeats arriving: %v, want HeldError", err)
		}
		if _, err := e.l.Heartbeat(ctx, "ci", Identity{RequestID: "r1", PID: 300}); err != nil {
			t.Fatalf("heartbeat from another process: %v", err)
		}
	}
	again, err := e.l.TryAcquire(ctx, r)
	if err != nil || !again.Already {
		t.Fatalf("the same request with no process again: %+v, %v; want already held", again, err)
	}
	e.clock.Add(11 * time.Second)
	var stale *StaleError
	if _, err := e.l.TryAcquire(ctx, req("ci", "r2", 200)); !errors.As(err, &stale) {
		t.Fatalf("past the TTL without heartbeats: %v, want StaleError (never dead)", err)
	}
}
