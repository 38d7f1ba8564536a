package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/lockledger/lockledger/events"
)

func TestReleaseOutcomeSaysWhetherAnythingWasReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	rel := ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r1", Actor: "t", PID: 100}}
	first, err := e.l.Release(ctx, rel)
	if err != nil || !first.Released || first.Seq != 2 || first.Result != events.ResultSuccess || first.Forced {
		t.Fatalf("first release: %+v, %v; want released at seq 2, success", first, err)
	}
	n := count(t, e.l)
	again, err := e.l.Release(ctx, rel)
	if err != nil || again.Released || again.ReleasedSeq != 2 || again.State != events.StateFree || again.Holder != nil {
		t.Fatalf("second release: %+v, %v; want nothing released, released at seq 2, free", again, err)
	}
	if _, err := e.l.TryAcquire(ctx, req("a", "r2", 200)); err != nil {
		t.Fatal(err)
	}
	again, err = e.l.Release(ctx, rel)
	if err != nil || again.Released || again.State != events.StateHeld || again.Holder == nil || again.Holder.RequestID != "r2" {
		t.Fatalf("second release while r2 holds it: %+v, %v; want nothing released, held by r2", again, err)
	}
	if got := count(t, e.l); got != n+1 {
		t.Fatalf("second releases wrote %d events, want none (besides r2's acquire)", got-n-1)
	}
	forced, err := e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{Actor: "oncall", PID: 300}, Force: true})
	if err != nil || !forced.Released || !forced.Forced || forced.ReleasedRequestID != "r2" {
		t.Fatalf("forced release: %+v, %v; want r2's lock released, forced", forced, err)
	}
	// r2's lock was taken from it: its release is refused as lost.
	_, err = e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r2", Actor: "t", PID: 200}})
	var nh *NotHolderError
	if !errors.As(err, &nh) || !errors.Is(err, ErrLost) || nh.ReleasedSeq != 0 {
		t.Fatalf("release by r2 after a forced release: %v, want lost", err)
	}
}

func TestReleaseResultDefaultsToFailureForANonZeroExitCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	for i, c := range []struct {
		result string
		code   int
		want   string
	}{{"", 3, events.ResultFailure}, {"", 0, events.ResultSuccess}, {events.ResultSuccess, 3, events.ResultSuccess}} {
		rid := []string{"r1", "r2", "r3"}[i]
		if _, err := e.l.TryAcquire(ctx, req("a", rid, 100)); err != nil {
			t.Fatal(err)
		}
		code := c.code
		out, err := e.l.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: rid, Actor: "t", PID: 100},
			Result: c.result, ExitCode: &code})
		if err != nil || out.Result != c.want {
			t.Fatalf("result %q with exit code %d: %+v, %v; want %s", c.result, c.code, out, err, c.want)
		}
	}
}
