package ledger_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/verify"
)

// projLedger has locks a (held by alice), b (released by bob) and c (never
// the ledger's), at scripted instants.
func projLedger(t *testing.T) (*ledger.Ledger, string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	c := testclock.New(time.Date(2025, 3, 14, 10, 0, 0, 0, time.UTC))
	l, err := ledger.Open(ctx, root, ledger.WithClock(c.Now), ledger.WithHost(ledger.Host{ID: "host-a", BootID: "boot-1"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	pid := os.Getpid()
	acq := func(lock, actor, rid string) {
		t.Helper()
		if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock, TTL: time.Minute, Intent: "deploy",
			Metadata: map[string]string{"ticket": "INC-1"},
			Identity: ledger.Identity{RequestID: rid, Actor: actor, PID: pid}}); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Second)
	}
	acq("a", "alice", "req-a")
	acq("b", "bob", "req-b")
	if _, err := l.Heartbeat(ctx, "a", ledger.Identity{RequestID: "req-a", PID: pid}); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Second)
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "b", Identity: ledger.Identity{RequestID: "req-b", PID: pid}}); err != nil {
		t.Fatal(err)
	}
	return l, root
}

func verifyAll(t *testing.T, l *ledger.Ledger) *verify.Report {
	t.Helper()
	rep, err := l.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func kinds(rep *verify.Report) map[string]verify.Kind {
	out := map[string]verify.Kind{}
	for _, p := range rep.Problems {
		if _, seen := out[p.Lock]; !seen {
			out[p.Lock] = p.Kind
		}
	}
	return out
}

func TestProjectRestoresADeletedLockFile(t *testing.T) {
	t.Parallel()
	l, _ := projLedger(t)
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("fresh ledger: %+v", rep.Problems)
	}
	want, err := os.ReadFile(l.LockPath("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.LockPath("a")); err != nil {
		t.Fatal(err)
	}
	rep := verifyAll(t, l)
	if rep.OK || rep.FirstBad.Kind != verify.KindLockFileMissing || rep.FirstBad.Lock != "a" {
		t.Fatalf("deleted lock file: %+v", rep.Problems)
	}
	pr, err := l.Project(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Rows) != 0 || len(pr.Files) != 1 || pr.Files[0].Lock != "a" || pr.Files[0].Action != "placed" {
		t.Fatalf("project: %+v", pr)
	}
	got, err := os.ReadFile(l.LockPath("a"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored file %q (%v), want %q", got, err, want)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("after project: %+v", rep.Problems)
	}
}

func TestProjectRebuildsTheTableAndLeavesForeignFilesAlone(t *testing.T) {
	t.Parallel()
	l, root := projLedger(t)
	ctx := context.Background()
	db := pgtest.Open(t, l.Source())
	snapshot := func() string {
		var s string
		if err := db.QueryRow(`SELECT (SELECT group_concat(lock_name || request_id || updated_seq || hex(file), '|')
			FROM (SELECT * FROM locks ORDER BY lock_name)) || '/' || (SELECT group_concat(lock_name || request_id || exclusive || heartbeat_at || updated_seq, '|')
			FROM (SELECT * FROM lock_holders ORDER BY lock_name, request_id))`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	bFile := func() []byte {
		var b []byte
		if err := db.QueryRow(`SELECT file FROM locks WHERE lock_name = 'b'`).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}()
	// Damage the table (it has no triggers) and the files.
	for _, q := range []string{
		`UPDATE lock_holders SET heartbeat_at = '2020-01-01T00:00:00.000000000Z' WHERE lock_name = 'a'`,
		// b, free, gets an exclusive holder no event gave it.
		`INSERT INTO lock_holders (lock_name, request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
			created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets)
			SELECT 'b', request_id, actor, intent, intent_version, host_id, pid, pid_start, boot_id,
			created_at, heartbeat_at, ttl_seconds, metadata, fencing_token, slot_limit, updated_seq, pid_ns, exclusive, targets
			FROM lock_holders WHERE lock_name = 'a'`,
		`INSERT INTO locks (lock_name, request_id, host_id, fencing_token, updated_seq, file, targets)
			SELECT 'ghost', request_id, host_id, fencing_token, updated_seq, file, targets FROM locks WHERE lock_name = 'a'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	foreign := events.Record{LockVersion: "v1", LockName: "c", RequestID: "cron-7", Actor: "cron", HostID: "host-b", PID: 7,
		CreatedAt: "2025-03-14T09:00:00Z", LastHeartbeatAt: "2025-03-14T09:00:00Z", TTLSeconds: 60}
	if err := os.WriteFile(filepath.Join(root, "locks", "c.lock"), foreign.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verifyAll(t, l)
	got := kinds(rep)
	if got["a"] != verify.KindProjectionDrift || got["b"] != verify.KindProjectionDrift || got["ghost"] != verify.KindProjectionDrift {
		t.Fatalf("drift not found: %+v", rep.Problems)
	}
	if len(rep.Foreign) != 1 || rep.Foreign[0].Lock != "c" {
		t.Fatalf("foreign file: %+v", rep.Foreign)
	}

	pr, err := l.Project(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, c := range pr.Rows {
		actions[c.Lock] = c.Action
	}
	if actions["a"] != "updated" || actions["b"] != "deleted" || actions["ghost"] != "deleted" || len(pr.Foreign) != 1 {
		t.Fatalf("project: %+v", pr)
	}
	if after := snapshot(); after != before {
		t.Fatalf("table after project:\n%s\nwant\n%s", after, before)
	}
	if _, err := os.Stat(filepath.Join(root, "locks", "c.lock")); err != nil {
		t.Fatalf("foreign file touched: %v", err)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("after project: %+v", rep.Problems)
	}

	// A leftover file of the ledger's at a free lock is extra, and removed.
	if err := os.WriteFile(l.LockPath("b"), bFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := verifyAll(t, l); rep.OK || kinds(rep)["b"] != verify.KindLockFileExtra {
		t.Fatalf("leftover: %+v", rep.Problems)
	}
	if pr, err := l.Project(ctx); err != nil || len(pr.Files) != 1 || pr.Files[0].Action != "removed" {
		t.Fatalf("project leftover: %+v %v", pr, err)
	}
	if _, err := os.Stat(l.LockPath("b")); !os.IsNotExist(err) {
		t.Fatalf("leftover still there: %v", err)
	}
}

func TestVerifyNamesAForeignFileAtAHeldLock(t *testing.T) {
	t.Parallel()
	l, _ := projLedger(t)
	stranger := events.Record{LockVersion: "v1", LockName: "a", RequestID: "cron-9", Actor: "cron", HostID: "host-b", PID: 9,
		CreatedAt: "2025-03-14T09:00:00Z", LastHeartbeatAt: "2025-03-14T09:00:00Z", TTLSeconds: 60}
	if err := os.WriteFile(l.LockPath("a"), stranger.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verifyAll(t, l)
	if rep.OK || kinds(rep)["a"] != verify.KindForeignAtHeld {
		t.Fatalf("interloper: %+v", rep.Problems)
	}
	pr, err := l.Project(context.Background())
	if err != nil || len(pr.Interlopers) != 1 || len(pr.Files) != 0 {
		t.Fatalf("project with an interloper: %+v %v", pr, err)
	}
	// A changed copy of the holder's own file is "different", and replaced.
	var file []byte
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT file FROM locks WHERE lock_name = 'a'`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.LockPath("a"), bytes.Replace(file, []byte(`"intent": "deploy"`), []byte(`"intent": "hack"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := verifyAll(t, l); rep.OK || kinds(rep)["a"] != verify.KindLockFileDifferent {
		t.Fatalf("different: %+v", rep.Problems)
	}
	if pr, err := l.Project(context.Background()); err != nil || len(pr.Files) != 1 || pr.Files[0].Action != "replaced" {
		t.Fatalf("project different: %+v %v", pr, err)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("after project: %+v", rep.Problems)
	}
}

// TestProjectRestoresATargetFile: the extra lock files a holding projects
// in other tools' formats are checked and rebuilt like the primary one.
func TestProjectRestoresATargetFile(t *testing.T) {
	t.Parallel()
	l, _ := projLedger(t)
	ctx := context.Background()
	ext := filepath.Join(t.TempDir(), "deploy.lock")
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "t", TTL: time.Minute,
		Identity: ledger.Identity{RequestID: "req-t", Actor: "tina", PID: os.Getpid()},
		Targets:  []events.Target{{Format: "tower-fleet", Path: ext}}}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(ext)
	if err != nil {
		t.Fatal(err)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("with a target: %+v", rep.Problems)
	}
	if err := os.Remove(ext); err != nil {
		t.Fatal(err)
	}
	if rep := verifyAll(t, l); rep.OK || kinds(rep)["t"] != verify.KindLockFileMissing {
		t.Fatalf("deleted target: %+v", rep.Problems)
	}
	pr, err := l.Project(ctx)
	if err != nil || len(pr.Files) != 1 || pr.Files[0].Action != "placed" || pr.Files[0].Detail != ext {
		t.Fatalf("project: %+v %v", pr, err)
	}
	if got, err := os.ReadFile(ext); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored target %q (%v), want %q", got, err, want)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("after project: %+v", rep.Problems)
	}
	// Released: a copy of the holder's target file left behind is extra.
	if _, err := l.Release(ctx, ledger.ReleaseRequest{Lock: "t", Identity: ledger.Identity{RequestID: "req-t", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ext); !os.IsNotExist(err) {
		t.Fatalf("release left the target: %v", err)
	}
	if err := os.WriteFile(ext, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := verifyAll(t, l); rep.OK || kinds(rep)["t"] != verify.KindLockFileExtra {
		t.Fatalf("leftover target: %+v", rep.Problems)
	}
	if pr, err := l.Project(ctx); err != nil || len(pr.Files) != 1 || pr.Files[0].Action != "removed" {
		t.Fatalf("project leftover target: %+v %v", pr, err)
	}
}

// TestProjectNeverOverwritesAFileWhereItKeepsAnother: the name an
// unreadable lock file is kept under may be taken (two in the same second,
// or a file someone put there): project picks the next free name and
// leaves the existing file as it was.
func TestProjectNeverOverwritesAFileWhereItKeepsAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)
	l, err := ledger.Open(ctx, t.TempDir(), ledger.WithClock(testclock.New(now).Now), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: "a", Identity: ledger.Identity{RequestID: "req-a", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(l.LockPath("a"))
	if err != nil {
		t.Fatal(err)
	}
	taken := l.LockPath("a") + ".corrupt-20261123T113000Z"
	for _, f := range []struct {
		path string
		data string
	}{{taken, "someone else's"}, {l.LockPath("a"), "garbage"}} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pr, err := l.Project(ctx)
	if err != nil || len(pr.Recorded) != 1 {
		t.Fatalf("project: %+v %v", pr, err)
	}
	if got, err := os.ReadFile(taken); err != nil || string(got) != "someone else's" {
		t.Fatalf("%s was overwritten: %q (%v)", taken, got, err)
	}
	if got, err := os.ReadFile(taken + "-2"); err != nil || string(got) != "garbage" {
		t.Fatalf("kept aside as %s-2: %q (%v)", taken, got, err)
	}
	if got, err := os.ReadFile(l.LockPath("a")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("lock file after project: %q (%v)", got, err)
	}
	if rep := verifyAll(t, l); !rep.OK {
		t.Fatalf("after project: %+v", rep.Problems)
	}
}
