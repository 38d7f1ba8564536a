package replay_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

var fileHolder = events.Holder{RequestID: "foreign:bso:4711", Actor: "bso", HostID: "host-a", PID: 4711,
	CreatedAt: "2026-01-02T03:10:00Z", LastHeartbeatAt: "2026-01-02T03:10:00Z"}

// verifyClean runs verify on the database and on its export, and fails on
// any problem; it returns the fold.
func verifyClean(t *testing.T, g *ovlLog) *replay.State {
	t.Helper()
	ctx := context.Background()
	rep, st, err := replay.VerifyLedger(ctx, g.db, "test", events.Genesis("overlap-test"))
	if err != nil {
		t.Fatal(err)
	}
	rep.Finish()
	if len(rep.Problems) != 0 || rep.ProblemCount != 0 {
		t.Fatalf("verify: %d problems: %+v", rep.ProblemCount, rep.Problems)
	}
	var export bytes.Buffer
	if err := replay.ScanRows(ctx, g.db, replay.Filter{}, func(r *replay.Row) error {
		return replay.WriteExportLine(&export, r)
	}); err != nil {
		t.Fatal(err)
	}
	frep, err := replay.VerifyFile(&export, "export", events.Genesis("overlap-test"))
	if err != nil {
		t.Fatal(err)
	}
	if len(frep.Problems) != 0 || frep.ProblemCount != 0 || frep.LastSeq != g.seq {
		t.Fatalf("verify --file: last seq %d of %d, %d problems: %+v", frep.LastSeq, g.seq, frep.ProblemCount, frep.Problems)
	}
	return st
}

// A holder displaced by another tool's lock file is released (forced, for
// released_request_id): the lock reads free, and the ledger's next holder
// is no overlap.
func TestDisplacedReleaseFreesTheLock(t *testing.T) {
	g := newOvlLog(t)
	a := g.acquire("x", "req_a")
	rel := g.add(events.LockReleased, "x", "req_b", &events.Released{HeldDurationSeconds: 120, Result: events.ResultCancelled,
		Forced: true, ReleasedRequestID: "req_a", FencingToken: a, DisplacedBy: &fileHolder, DisplacedByFormat: "bso",
		DisplacedByPath: "/srv/app/.bso.lock"})
	st := verifyClean(t, g)
	l := st.Lock("x")
	if l == nil || l.Held || l.UpdatedSeq != rel || l.Holder == nil || l.Holder.Record.RequestID != "req_a" {
		t.Fatalf("after the displaced holder's release: %+v, want free at seq %d with req_a as the last holder", l, rel)
	}
	if st.AnomalyCount != 0 {
		t.Fatalf("anomalies: %+v", st.Anomalies)
	}
	g.acquire("x", "req_c")
	if got, err := replay.Overlaps(context.Background(), g.db); err != nil || len(got) != 0 {
		t.Fatalf("overlaps after the displaced holder's release: %v %+v", err, got)
	}
	verifyClean(t, g)
}

// The events that only record (a refusal, a projection, a job's leftover
// processes, and the older blocked and heartbeat_failed) verify, fold
// without anomaly and leave the holder as it was, on a held lock and on a
// lock the ledger never held; the log has one event of every type.
func TestRecordOnlyEventsVerifyAndChangeNoState(t *testing.T) {
	g := newOvlLog(t)
	a := g.acquire("x", "req_a")
	hb := g.heartbeat("x", "req_a")
	holderA := events.Holder{RequestID: "req_a", Actor: "tester", HostID: "host-a", PID: 42,
		CreatedAt: "2026-01-02T03:04:06Z", LastHeartbeatAt: "2026-01-02T03:04:07Z"}
	last := map[events.Type]int64{
		events.LockAcquired:   a,
		events.LockHeartbeat:  hb,
		events.AcquireBlocked: g.blocked("x", "req_b", "req_a"),
		events.HeartbeatFailed: g.add(events.HeartbeatFailed, "x", "req_a", &events.HeartbeatFailedPayload{
			ConsecutiveFailures: 2, Error: "database is locked"}),
		events.ActionRefused: g.add(events.ActionRefused, "x", "req_z", &events.Refused{Action: events.ActionRelease,
			Error: "not the holder", State: events.StateHeld, HeldBy: &holderA}),
		events.LockProjected: g.add(events.LockProjected, "x", "req_p", &events.Projected{
			Changes: []string{"lock file restored"}, MovedAside: "/r/locks/x.lock.corrupt-20260102T030410Z"}),
		events.JobProcesses: g.add(events.JobProcesses, "x", "req_a", &events.JobProcessesPayload{JobRequestID: "req_a",
			PIDs: []int{100, 101}, Action: events.JobKilled, Note: "left the process group"}),
		events.FenceRejected: g.add(events.FenceRejected, "x", "req_old", &events.FenceRejectedPayload{
			Fence: events.FenceFileWrite, Resource: "/srv/app/release.txt", StaleToken: a, CurrentToken: a + 1}),
	}
	// The same on a lock the ledger never held: nothing to free, nothing
	// inconsistent.
	g.add(events.ActionRefused, "y", "req_z", &events.Refused{Action: events.ActionHeartbeat, Error: "never held", State: events.StateFree})
	g.add(events.LockProjected, "y", "req_p", &events.Projected{Changes: []string{"stray lock file removed"},
		BrokenChainAccepted: true, FirstBadSeq: 2})
	g.add(events.JobProcesses, "y", "req_q", &events.JobProcessesPayload{JobRequestID: "req_q", PIDs: []int{7},
		Action: events.JobLeftRunning})
	// The ledger-wide events (no lock_name): export, verify and project
	// reading the log.
	last[events.LedgerExported] = g.add(events.LedgerExported, "", "req_e", &events.Exported{FirstSeq: 1, LastSeq: g.seq,
		Events: g.seq, Format: "jsonl", Destination: "/srv/audit.jsonl"})
	last[events.LedgerVerified] = g.add(events.LedgerVerified, "", "req_v", &events.Verified{Result: events.AuditOK,
		Events: g.seq, FirstSeq: 1, LastSeq: g.seq, HeadHash: g.prev})
	last[events.LedgerProjected] = g.add(events.LedgerProjected, "", "req_p", &events.LedgerProjectedPayload{
		Result: events.AuditOK, Events: g.seq, Locks: 2})
	last[events.LedgerPruned] = g.add(events.LedgerPruned, "", "req_pr", &events.Pruned{FirstSeq: 1, LastSeq: 2, Events: 2,
		HeadHash: g.prev, Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")})
	last[events.LedgerUnpruned] = g.add(events.LedgerUnpruned, "", "req_up", &events.Pruned{FirstSeq: 1, LastSeq: 2, Events: 2,
		HeadHash: g.prev, Note: events.PruneNote("abababababababababababababababababababababababababababababababab", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd")})
	last[events.SignerAdded] = g.add(events.SignerAdded, "", "req_sa", &events.Signer{Key: "ops+01020304+AQID", Role: events.RoleOwner, Statement: "s"})
	last[events.SignerRemoved] = g.add(events.SignerRemoved, "", "req_sr", &events.Signer{Key: "ops+01020304+AQID", Role: events.RoleOwner, Statement: "s"})
	last[events.LockStolen] = g.steal("x", "req_r", "req_a", events.ReasonReclaimed)
	last[events.LockReleased] = g.add(events.LockReleased, "x", "req_r", &events.Released{HeldDurationSeconds: 1,
		Result: events.ResultSuccess, FencingToken: last[events.LockStolen]})
	for _, typ := range events.Types {
		if last[typ] == 0 {
			t.Fatalf("the log has no %s event: add one", typ)
		}
	}

	// Replayed up to just before the steal, x is still req_a's, renewed by
	// its heartbeat and by nothing since.
	st := replay.NewState()
	if err := replay.Scan(context.Background(), g.db, replay.Filter{ToSeq: last[events.LockStolen] - 1}, func(ev *replay.Event) error {
		st.Apply(ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	x, y := st.Lock("x"), st.Lock("y")
	if !x.Held || x.Holder.Record.RequestID != "req_a" || x.UpdatedSeq != hb {
		t.Fatalf("x: held %v by %+v updated at %d, want req_a's since the heartbeat at %d", x.Held, x.Holder, x.UpdatedSeq, hb)
	}
	if y == nil || y.Held || y.Holder != nil || y.UpdatedSeq != 0 || y.Last.Type != events.JobProcesses {
		t.Fatalf("y: %+v, want never held, last event job_processes", y)
	}
	if st.AnomalyCount != 0 {
		t.Fatalf("anomalies: %+v", st.Anomalies)
	}
	// The ledger-wide events made no lock of their own.
	if st.Len() != 2 || st.Lock("") != nil {
		t.Fatalf("locks after the ledger-wide events: %d (%+v), want x and y only", st.Len(), st.Locks())
	}

	st = verifyClean(t, g)
	if x := st.Lock("x"); x.Held || x.UpdatedSeq != last[events.LockReleased] {
		t.Fatalf("x at the end: %+v", x)
	}
	// Each new type decodes to its fields.
	seen := map[events.Type]bool{}
	if err := replay.Scan(context.Background(), g.db, replay.Filter{Types: []events.Type{events.ActionRefused,
		events.LockProjected, events.JobProcesses}}, func(ev *replay.Event) error {
		seen[ev.Type] = true
		switch ev.Type {
		case events.ActionRefused:
			if ev.Action == "" || ev.Error == "" || ev.State == "" {
				t.Errorf("action_refused decoded as %+v", ev)
			}
		case events.LockProjected:
			if len(ev.Changes) != 1 || ev.LockName == "y" && (!ev.BrokenChainAccepted || ev.FirstBadSeq != 2) ||
				ev.LockName == "x" && ev.MovedAside == "" {
				t.Errorf("lock_projected decoded as %+v", ev)
			}
		case events.JobProcesses:
			if ev.JobRequestID == "" || len(ev.PIDs) == 0 || ev.Action == "" {
				t.Errorf("job_processes decoded as %+v", ev)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("types scanned: %v", seen)
	}
}
