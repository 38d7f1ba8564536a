package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/proc"
)

// TestReleaseRuleReadsARunFromTheRecord: a holding whose lock_acquired
// records a run (AcquireRequest.Run) is not released without Force by
// another process of the same uid while the run's process lives (Denied
// names the run, the refusal is recorded), and is once that process is
// gone; a holding not recorded as a run is released plainly while its
// holder lives. Whether a holder is a run is read from the record, not
// from the holder's process.
func TestReleaseRuleReadsARunFromTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	const runner, holder = 4242, 4343
	e.probe.set(runner, proc.Alive, "100")
	e.probe.set(holder, proc.Alive, "200")
	other := func(rid string) ReleaseRequest {
		return ReleaseRequest{Lock: "job", Identity: Identity{RequestID: rid, PID: os.Getpid()}}
	}
	body := func(seq int64) string {
		t.Helper()
		var b string
		if err := pgtest.Open(t, e.l.Source()).QueryRow(`SELECT body FROM events WHERE seq = $1`, seq).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	r := req("job", "run1", runner)
	r.Run = true
	a, err := e.l.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(a.Seq); !strings.Contains(b, `"run":true`) {
		t.Fatalf("a run's lock_acquired does not record it: %s", b)
	}
	n := count(t, e.l)
	_, err = e.l.Release(ctx, other("run1"))
	var nh *NotHolderError
	if !errors.As(err, &nh) || !strings.Contains(nh.Denied, "running lockledger run (pid 4242)") {
		t.Fatalf("plain release of a running run's holding: %v, want refused naming the run", err)
	}
	if count(t, e.l) != n+1 {
		t.Fatal("the refusal is not recorded")
	}
	e.probe.set(runner, proc.Gone, "")
	if out, err := e.l.Release(ctx, other("run1")); err != nil || !out.Released {
		t.Fatalf("plain release once the run is gone: %+v, %v", out, err)
	}

	a, err = e.l.TryAcquire(ctx, req("job", "plain", holder))
	if err != nil {
		t.Fatal(err)
	}
	if b := body(a.Seq); strings.Contains(b, `"run"`) {
		t.Fatalf("a plain acquire's lock_acquired records a run: %s", b)
	}
	if out, err := e.l.Release(ctx, other("plain")); err != nil || !out.Released {
		t.Fatalf("plain release of a live holder that is no run: %+v, %v", out, err)
	}

	r = req("job", "none", 0)
	r.NoProcess, r.Run = true, true
	if _, err := e.l.TryAcquire(ctx, r); !errors.As(err, new(*events.InvalidError)) {
		t.Fatalf("a run held by no process: %v, want invalid input", err)
	}
}
