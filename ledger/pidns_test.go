package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/proc"
)

func pidNS(n int64) *int64 { return &n }

// A pid names a process only in its PID namespace: a holder recorded in
// another one (or in one not known) is not probed, whatever the probe says
// of its pid, and goes stale by its TTL only. A holding recorded without a
// namespace (written before namespaces were recorded, or on a system
// without them) is probed by its pid.
func TestAHolderInAnotherPIDNamespaceIsNeverJudgedDeadByItsPID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name           string
		holder, prober *int64
		dead           bool
	}{
		{"another namespace", pidNS(4026531836), pidNS(4026532000), false},
		{"holder's namespace unknown", pidNS(0), pidNS(0), false},
		{"prober's namespace unknown", pidNS(4026531836), pidNS(0), false},
		{"prober on a system without namespaces", pidNS(4026531836), nil, false},
		{"the same namespace", pidNS(4026531836), pidNS(4026531836), true},
		{"recorded without a namespace", nil, pidNS(4026531836), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := open(t, WithHost(Host{ID: "host-a", BootID: "boot-1", PIDNS: c.holder}))
			if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
				t.Fatal(err)
			}
			e.probe.set(100, proc.Gone, "")
			other, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe),
				WithHost(Host{ID: "host-a", BootID: "boot-1", PIDNS: c.prober}), Unsigned())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			s, err := other.Status(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			a, err := other.TryAcquire(ctx, req("a", "r2", 200))
			if c.dead {
				if err != nil || !a.Stolen || a.Reason != events.ReasonHolderDead || s.State != events.StateDead {
					t.Fatalf("status %s; acquire %+v, %v; want the dead holder taken over", s.State, a, err)
				}
				return
			}
			var held *HeldError
			if !errors.As(err, &held) || s.State != events.StateHeld || s.Unprobed != proc.UnprobedOtherPIDNS {
				t.Fatalf("status %s (unprobed %q); acquire %v; want held, not probed", s.State, s.Unprobed, err)
			}
		})
	}
}
