package eventfmt

import (
	"strings"
	"testing"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/replay"
)

// TestDetailsAndColourOfEveryEventType: every event type has its detail
// text and its colour in the timeline table; the refusals, projections,
// leftover job processes and a displaced holder's release say what happened.
func TestDetailsAndColourOfEveryEventType(t *testing.T) {
	holder := &events.Holder{RequestID: "req_old", Actor: "alice", HostID: "vm", PID: 17409,
		CreatedAt: "2026-11-22T23:07:24Z", LastHeartbeatAt: "2026-11-22T23:07:25Z"}
	foreign := &events.Holder{RequestID: "foreign:bso", Actor: "bso", HostID: "vm", PID: 4711}
	code := 3
	cases := []struct {
		ev     replay.Event
		want   []string
		colour string
	}{
		{replay.Event{FencingToken: 1, TTLSeconds: 60}, []string{"token 1, ttl 60s"}, ansiGreen},
		{replay.Event{}, []string{"renewed"}, AnsiDim},
		{replay.Event{Reason: events.ReasonReclaimed, PreviousLock: &events.Record{RequestID: "req_a", PID: 7}},
			[]string{"reason reclaimed, from req_a"}, AnsiMagenta},
		{replay.Event{Result: events.ResultSuccess}, []string{"result success"}, ansiGreen},
		{replay.Event{ConsecutiveFailures: 3, Error: "busy"}, []string{`3 consecutive failures, error "busy"`}, ansiRed},
		{replay.Event{State: events.StateHeld, HeldBy: holder}, []string{"state held, held by req_old (alice"}, ansiYellow},
		{replay.Event{Action: events.ActionRelease, Error: "not the holder", State: events.StateHeld, HeldBy: holder},
			[]string{`REFUSED release, state held, held by req_old (alice, pid 17409@vm, since 2026-11-22T23:07:24Z), error "not the holder"`}, ansiYellow},
		{replay.Event{Changes: []string{"lock file restored", "locks row rewritten"}, MovedAside: "/r/locks/x.lock.corrupt-1",
			BrokenChainAccepted: true, FirstBadSeq: 7},
			[]string{"BROKEN CHAIN accepted (first bad seq 7), lock file restored; locks row rewritten, moved aside to /r/locks/x.lock.corrupt-1"}, AnsiMagenta},
		{replay.Event{JobRequestID: "req_job", PIDs: []int{11, 12}, Action: events.JobKilled, Note: "left the process group"},
			[]string{`job req_job: 2 processes killed, pids 11 12, note "left the process group"`}, ansiRed},
		{replay.Event{Since: "2026-11-22T00:00:00.000000000Z", FirstSeq: 3, LastSeq: 9, Events: 7, Format: "csv",
			Destination: "/srv/audit.csv"},
			[]string{"exported 7 events (seq 3-9), since 2026-11-22T00:00:00.000000000Z, as csv to /srv/audit.csv"}, AnsiDim},
		{replay.Event{Result: events.AuditFailed, Problems: 2, FirstBadSeq: 4, Events: 9, FirstSeq: 1, LastSeq: 9,
			HeadHash: "ab12", File: "/tmp/x.jsonl"},
			[]string{"FAILED: 2 problems, first bad seq 4, 9 events checked (seq 1-9), head ab12, export file /tmp/x.jsonl"}, ansiRed},
		{replay.Event{Result: events.AuditOK, Events: 12, Locks: 3, RowsChanged: 1, FilesChanged: 2},
			[]string{"12 events replayed, 3 locks, 1 row and 2 files changed"}, AnsiDim},
		{replay.Event{FirstSeq: 1, LastSeq: 9, Events: 9, File: "/srv/a.jsonl", Note: events.PruneNote(strings.Repeat("ab", 32), strings.Repeat("cd", 32))},
			[]string{"pruned 9 events (seq 1-9) from the live store, archive sha256 " + strings.Repeat("ab", 32) + ", archive file /srv/a.jsonl"}, AnsiMagenta},
		{replay.Event{FirstSeq: 1, LastSeq: 9, Events: 9, File: "/srv/a.jsonl", Note: events.PruneNote(strings.Repeat("ab", 32), strings.Repeat("cd", 32))},
			[]string{"put 9 events (seq 1-9) back into the live store, archive sha256 " + strings.Repeat("ab", 32) + ", archive file /srv/a.jsonl"}, AnsiMagenta},
		{replay.Event{Fence: events.FenceFileWrite, Resource: "/srv/app/release.txt", StaleToken: 4, CurrentToken: 6},
			[]string{"REFUSED write to file /srv/app/release.txt: token 4, below 6"}, ansiRed},
		{replay.Event{Key: "ops+01020304+AQID", Role: "host"}, []string{"signer ops+01020304+AQID added as host"}, AnsiMagenta},
		{replay.Event{Key: "ops+01020304+AQID", Role: "host"}, []string{"signer ops+01020304+AQID removed (was host)"}, AnsiMagenta},
	}
	for i, typ := range events.Types {
		if i >= len(cases) {
			t.Fatalf("no case for %s", typ)
		}
		c := cases[i]
		c.ev.Type = typ
		got := Details(&c.ev)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: details %q lack %q", typ, got, w)
			}
		}
		if col := EventColor(&c.ev); col != c.colour {
			t.Errorf("%s: colour %q, want %q", typ, col, c.colour)
		}
	}

	// A release of a holder displaced by another tool's lock file names it.
	rel := replay.Event{Result: events.ResultCancelled, Forced: true, ReleasedRequestID: "req_old", ExitCode: &code,
		DisplacedBy: foreign, DisplacedByFormat: "bso", DisplacedByPath: "/srv/app/.bso.lock"}
	rel.Type = events.LockReleased
	if got, want := Details(&rel), "FORCED, released req_old, DISPLACED by foreign:bso (bso, pid 4711@vm) via bso file /srv/app/.bso.lock"; !strings.Contains(got, want) {
		t.Errorf("displaced release: %q lacks %q", got, want)
	}
	if EventColor(&rel) != ansiRed {
		t.Errorf("displaced release is not red")
	}
	// Processes left running are a warning, not a kill; a long pid list is cut.
	left := replay.Event{JobRequestID: "r", PIDs: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Action: events.JobLeftRunning}
	left.Type = events.JobProcesses
	if got, want := Details(&left), "job r: 10 processes left running, pids 1 2 3 4 5 6 7 8 and 2 more"; got != want {
		t.Errorf("left running: %q, want %q", got, want)
	}
	if EventColor(&left) != ansiYellow {
		t.Errorf("left running: colour %q", EventColor(&left))
	}
	// A refused project and one forced through a damaged log say so.
	refused := replay.Event{Result: events.AuditRefused, Problems: 1, FirstBadSeq: 7, Events: 12, Locks: 3}
	refused.Type = events.LedgerProjected
	if got, want := Details(&refused), "REFUSED: damaged log (1 problem, first bad seq 7), 12 events replayed, 3 locks"; got != want ||
		EventColor(&refused) != ansiRed {
		t.Errorf("refused project: %q (colour %q), want %q in red", got, EventColor(&refused), want)
	}
	forced := replay.Event{Result: events.AuditOK, BrokenChainAccepted: true, FirstBadSeq: 7, Events: 1, Locks: 1}
	forced.Type = events.LedgerProjected
	if got, want := Details(&forced), "BROKEN CHAIN accepted (first bad seq 7), 1 event replayed, 1 lock, no change"; got != want ||
		EventColor(&forced) != AnsiMagenta {
		t.Errorf("forced project: %q (colour %q), want %q in magenta", got, EventColor(&forced), want)
	}
	ok := replay.Event{Result: events.AuditOK, Events: 0}
	ok.Type = events.LedgerVerified
	if got, want := Details(&ok), "OK, 0 events checked"; got != want {
		t.Errorf("verify of an empty ledger: %q, want %q", got, want)
	}
	one := replay.Event{JobRequestID: "r", PIDs: []int{5}, Action: events.JobTerminated}
	one.Type = events.JobProcesses
	if got, want := Details(&one), "job r: 1 process terminated, pids 5"; got != want {
		t.Errorf("terminated: %q, want %q", got, want)
	}
	failed := replay.Event{ConsecutiveFailures: 1, Error: "busy"}
	failed.Type = events.HeartbeatFailed
	if got, want := Details(&failed), `1 consecutive failure, error "busy"`; got != want {
		t.Errorf("one heartbeat failure: %q, want %q", got, want)
	}
}

// TestDetailsOfAnUnreadableFileNameTheFile: acquire_blocked and
// action_refused caused by an unreadable lock file say what the file is,
// never a holder.
func TestDetailsOfAnUnreadableFileNameTheFile(t *testing.T) {
	u := &events.UnreadableFile{Path: "/r/locks/deploy.lock", SizeBytes: 37, Modified: "2026-03-04T05:06:07Z"}
	for _, ev := range []replay.Event{
		{Envelope: events.Envelope{Type: events.AcquireBlocked}, State: events.StateHeld, UnreadableFile: u, Foreign: true},
		{Envelope: events.Envelope{Type: events.ActionRefused}, Action: events.ActionSteal, Error: "refused", State: events.StateHeld,
			UnreadableFile: u},
	} {
		got := Details(&ev)
		if want := "state held, held by an unreadable lock file at /r/locks/deploy.lock (37 bytes, modified 2026-03-04T05:06:07Z)"; !strings.Contains(got, want) ||
			strings.Count(got, "held by") != 1 {
			t.Errorf("%s: details %q, want %q once", ev.Type, got, want)
		}
	}
}
