package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/testclock"
	"github.com/lockledger/lockledger/migrations"
)

// probe answers liveness from a table; unknown pids are alive with start "1".
type probe struct {
	mu    sync.Mutex
	state map[int]proc.Liveness
	start map[int]string
}

func (p *probe) Probe(pid int) (proc.Liveness, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.state[pid]; ok {
		return s, p.start[pid]
	}
	return proc.Alive, "1"
}

func (p *probe) set(pid int, l proc.Liveness, start string) {
	p.mu.Lock()
	p.state[pid], p.start[pid] = l, start
	p.mu.Unlock()
}

type env struct {
	l     *Ledger
	clock *testclock.Clock
	probe *probe
	root  string
}

func open(t *testing.T, opts ...Option) *env {
	t.Helper()
	e := &env{clock: testclock.New(time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)),
		probe: &probe{state: map[int]proc.Liveness{}, start: map[int]string{}}, root: t.TempDir()}
	base := []Option{WithClock(e.clock.Now), WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-1"}), Unsigned()}
	l, err := Open(context.Background(), e.root, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e.l = l
	return e
}

func req(lock, rid string, pid int) AcquireRequest {
	return AcquireRequest{Lock: lock, Identity: Identity{RequestID: rid, Actor: "t", PID: pid}, TTL: 10 * time.Second}
}

func count(t *testing.T, l *Ledger) int {
	t.Helper()
	var n int
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStateRulesByClockAndProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(10 * time.Second) // exactly ttl: still held (stale is strictly older)
	var held *HeldError
	if _, err := e.l.TryAcquire(ctx, req("a", "r2", 200)); !errors.As(err, &held) || held.Holder.RequestID != "r1" {
		t.Fatalf("at ttl: got %v, want HeldError by r1", err)
	}
	e.clock.Add(time.Second)
	var stale *StaleError
	if _, err := e.l.TryAcquire(ctx, req("a", "r2", 200)); !errors.As(err, &stale) || !errors.Is(err, ErrStale) {
		t.Fatalf("past ttl: got %v, want StaleError", err)
	}
	forced := req("a", "r2", 200)
	forced.Force = true
	a, err := e.l.TryAcquire(ctx, forced)
	if err != nil || !a.Stolen || a.Reason != events.ReasonStaleForced || a.Previous.RequestID != "r1" {
		t.Fatalf("force on stale: %+v, %v", a, err)
	}
	// Heartbeats keep a lock: r1 lost it and is told so.
	if _, err := e.l.Heartbeat(ctx, "a", Identity{RequestID: "r1", Actor: "t", PID: 100}); !errors.Is(err, ErrLost) {
		t.Fatalf("heartbeat by the old holder: %v, want ErrLost", err)
	}
	for i := 0; i < 5; i++ {
		e.clock.Add(8 * time.Second)
		if _, err := e.l.Heartbeat(ctx, "a", Identity{RequestID: "r2", Actor: "t", PID: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := e.l.TryAcquire(ctx, forced); err != nil || !a.Already {
		t.Fatalf("same request acquiring again: %+v %v, want Already", a, err)
	}
}

func TestDeadHolderRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	take := func(lock string, pid int) {
		t.Helper()
		if _, err := e.l.TryAcquire(ctx, req(lock, "holder-"+lock, pid)); err != nil {
			t.Fatal(err)
		}
	}
	take("gone", 101)
	e.probe.set(101, proc.Gone, "")
	if a, err := e.l.TryAcquire(ctx, req("gone", "n1", 500)); err != nil || a.Reason != events.ReasonHolderDead {
		t.Fatalf("ESRCH holder: %+v %v, want holder_dead", a, err)
	}

	e.probe.set(102, proc.Alive, "1")
	take("reused", 102)
	e.probe.set(102, proc.Alive, "999") // same pid, later start: another process
	if a, err := e.l.TryAcquire(ctx, req("reused", "n2", 500)); err != nil || a.Reason != events.ReasonHolderDead {
		t.Fatalf("reused pid: %+v %v, want holder_dead", a, err)
	}

	take("eperm", 103)
	e.probe.set(103, proc.Alive, "1") // EPERM answers Alive
	if _, err := e.l.TryAcquire(ctx, req("eperm", "n3", 500)); !errors.Is(err, ErrHeld) {
		t.Fatalf("live holder: %v, want ErrHeld", err)
	}

	// Another host's holder is never judged by pid.
	other, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe), WithHost(Host{ID: "host-b", BootID: "boot-9"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.TryAcquire(ctx, req("remote", "far", 104)); err != nil {
		t.Fatal(err)
	}
	e.probe.set(104, proc.Gone, "")
	if _, err := e.l.TryAcquire(ctx, req("remote", "n4", 500)); !errors.Is(err, ErrHeld) {
		t.Fatalf("holder on another host with our pid gone: %v, want ErrHeld", err)
	}

	// A reboot of this host kills every local holder.
	take("boot", 105)
	rebooted, err := Open(ctx, e.root, WithClock(e.clock.Now), WithProcessProbe(e.probe), WithHost(Host{ID: "host-a", BootID: "boot-2"}), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer rebooted.Close()
	if a, err := rebooted.TryAcquire(ctx, req("boot", "n5", 500)); err != nil || a.Reason != events.ReasonHolderDead {
		t.Fatalf("after reboot: %+v %v, want holder_dead", a, err)
	}
}

func TestCrashBetweenFileAndCommitIsUndone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	// A writer died after linking its lock file, before its commit.
	var a *Acquisition
	ghost := events.Record{LockVersion: "v1", LockName: "job", RequestID: "ghost", Actor: "t", HostID: "host-a", PID: 100,
		CreatedAt: "2026-01-02T10:00:00Z", LastHeartbeatAt: "2026-01-02T10:00:00Z", TTLSeconds: 10}
	j, err := e.l.files.Place("job", ghost.File())
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if s, _ := e.l.Status(ctx, "job"); s.State != events.StateFree {
		// readers see the journal too: an uncommitted file is not a holder
		t.Logf("status during the crash window: %s", s.State)
	}
	a, err = e.l.TryAcquire(ctx, req("job", "real", 200))
	if err != nil || a.Stolen {
		t.Fatalf("acquire after a crashed writer: %+v %v, want a plain acquire", a, err)
	}
	if _, err := os.Stat(e.l.files.JournalPath("job")); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
	data, _ := os.ReadFile(e.l.LockPath("job"))
	rec, err := ParseLockFile(data)
	if err != nil || rec.RequestID != "real" {
		t.Fatalf("lock file after recovery: %v %s", err, data)
	}
}

func TestCrashAfterCommitIsFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	a, err := e.l.TryAcquire(ctx, req("job", "r1", 100))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(e.l.LockPath("job"))
	// The file vanished after the commit (crash before the link, or an operator's rm).
	if err := os.Remove(e.l.LockPath("job")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.TryAcquire(ctx, req("job", "r2", 200)); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire while the ledger holds it: %v", err)
	}
	got, err := os.ReadFile(e.l.LockPath("job"))
	if err != nil || string(got) != string(want) {
		t.Fatalf("lock file not restored from the ledger: %v\n%s", err, got)
	}
	// Released, but the file removal never happened: the leftover is ours, not foreign.
	if _, err := e.l.Release(ctx, ReleaseRequest{Lock: "job", Identity: Identity{RequestID: a.RequestID, Actor: "t", PID: 100}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.l.LockPath("job"), want, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := e.l.TryAcquire(ctx, req("job", "r3", 300)); err != nil || b.Stolen {
		t.Fatalf("acquire over our own leftover file: %+v %v", b, err)
	}
}

func TestConcurrentOpensOfAFreshRoot(t *testing.T) {
	t.Parallel()
	// The opens queue for the writer lock, the last behind all the others'
	// migrations: a busy timeout of thirty-two opens of a fresh root as
	// long as one takes on this machine now, or the default if longer.
	began := time.Now()
	pace, err := Open(context.Background(), filepath.Join(t.TempDir(), "pace"), Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	if err := pace.Close(); err != nil {
		t.Fatal(err)
	}
	busy := max(DefaultBusyTimeout, 32*time.Since(began))
	root := filepath.Join(t.TempDir(), "fresh")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	ids := make(chan string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Open(context.Background(), root, Unsigned(), WithBusyTimeout(busy))
			if err != nil {
				errs <- err
				return
			}
			ids <- l.ID()
			errs <- l.Close()
		}()
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	first := <-ids
	for id := range ids {
		if id != first {
			t.Fatalf("ledger ids differ: %s vs %s", id, first)
		}
	}
	l, err := Open(context.Background(), root, Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var n int
	all, _ := migrations.All()
	if err := pgtest.Open(t, l.Source()).QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(all) {
		t.Fatalf("schema_migrations rows: %d %v, want %d (each migration once)", n, err, len(all))
	}
}

func TestSchemaRefusesABadEventBeforeAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	n := count(t, e.l)
	err := e.l.RecordHeartbeatFailure(ctx, "a", Identity{RequestID: "r1", Actor: "t", PID: 100}, 0, "x", false)
	if err == nil {
		t.Fatal("consecutive_failures 0 violates the schema; append must refuse")
	}
	if count(t, e.l) != n {
		t.Fatal("an invalid event was stored")
	}
}
