package ledger_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/replay"
)

func shared(lock, rid string, limit int64) ledger.AcquireRequest {
	return ledger.AcquireRequest{Lock: lock, Identity: as(rid), TTL: time.Minute, Shared: true, Limit: limit}
}

// foldOf replays the whole log.
func foldOf(t *testing.T, l *ledger.Ledger) *replay.State {
	t.Helper()
	rep, st, err := replay.VerifyLedger(context.Background(), pgtest.Open(t, l.Source()), l.Source(), l.Genesis())
	if err != nil || rep == nil {
		t.Fatalf("replay: %v", err)
	}
	return st
}

func sharedIDs(lk *replay.Lock) []string {
	var ids []string
	if lk != nil {
		for _, h := range lk.Shared {
			ids = append(ids, h.Record.RequestID)
		}
	}
	return ids
}

// Readers coexist and exclude a writer (flock -s / flock -x); a writer
// excludes readers.
func TestConformanceSharedHoldersCoexistAndExcludeExclusive(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a, b := f.open("host-a"), f.open("host-b")
		r1, err := a.TryAcquire(ctx, shared("db", "r1", 0))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.TryAcquire(ctx, shared("db", "r2", 0))
		if err != nil {
			t.Fatalf("second shared holder: %v", err)
		}
		if r1.Mode != events.ModeShared || r2.FencingToken <= r1.FencingToken {
			t.Errorf("shared holders: mode %q, tokens %d then %d", r1.Mode, r1.FencingToken, r2.FencingToken)
		}
		var held *ledger.HeldError
		if _, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: as("w"), TTL: time.Minute, RecordBlocked: true}); !errors.As(err, &held) || !held.SharedHeld {
			t.Fatalf("exclusive acquire under readers: got %v, want a HeldError naming shared holders", err)
		}
		if _, err := a.Heartbeat(ctx, "db", as("r1")); err != nil {
			t.Fatalf("shared heartbeat: %v", err)
		}
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: ledger.Identity{Actor: "oncall"}, Force: true}); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("release --force naming no holder of a shared lock: got %v, want invalid input", err)
		}
		st, err := b.Status(ctx, "db")
		if err != nil {
			t.Fatal(err)
		}
		if st.State != events.StateHeld || st.Mode != events.ModeShared || len(st.Shared) != 2 {
			t.Fatalf("status: %s mode %q with %d shared holders, want held shared by 2", st.State, st.Mode, len(st.Shared))
		}
		if lk := foldOf(t, a).Lock("db"); len(lk.Shared) != 2 || lk.Held {
			t.Fatalf("replay: shared %v, held %v; want r1 and r2 shared, nobody exclusive", sharedIDs(lk), lk.Held)
		}
		for _, r := range []string{"r1", "r2"} {
			if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: as(r)}); err != nil {
				t.Fatalf("release %s: %v", r, err)
			}
		}
		w, err := b.TryAcquire(ctx, ledger.AcquireRequest{Lock: "db", Identity: as("w"), TTL: time.Minute})
		if err != nil {
			t.Fatalf("exclusive after the readers left: %v", err)
		}
		if _, err := a.TryAcquire(ctx, shared("db", "r3", 0)); !errors.As(err, &held) || held.Holder.RequestID != "w" {
			t.Fatalf("shared acquire under a writer: got %v, want held by w", err)
		}
		if _, err := b.Release(ctx, ledger.ReleaseRequest{Lock: "db", Identity: as("w"), FencingToken: w.FencingToken}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryAcquire(ctx, shared("db", "r3", 0)); err != nil {
			t.Fatalf("shared after the writer left: %v", err)
		}
		if o, err := replay.Overlaps(ctx, pgtest.Open(t, a.Source())); err != nil || len(o) != 0 {
			t.Fatalf("overlaps: %v %v", o, err)
		}
		verifyOK(t, a)
		// lock_holders is a projection: verify sees it lost, project rebuilds it.
		if _, err := pgtest.Open(t, a.Source()).ExecContext(ctx, `DELETE FROM lock_holders`); err != nil {
			t.Fatal(err)
		}
		if rep, err := a.Verify(ctx); err != nil {
			t.Fatal(err)
		} else if rep.OK {
			t.Fatal("verify: a lost shared holder's row went unnoticed")
		}
		if _, err := a.Project(ctx); err != nil {
			t.Fatal(err)
		}
		if s, err := b.Status(ctx, "db"); err != nil || len(s.Shared) != 1 || s.Shared[0].Holder.RequestID != "r3" {
			t.Fatalf("status after project: %+v %v, want r3 holding shared", s, err)
		}
		verifyOK(t, a)
	})
}

// A semaphore: at most Limit holders; a different limit is invalid input;
// a dead holder's slot is taken over; steal takes the stalest slot.
func TestConformanceSemaphore(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a := f.open("host-a")
		// A holder whose process then exits: its slot is dead.
		acquireForADeadProcess(t, a, shared("pool", "s0", 3))
		for _, r := range []string{"s1", "s2"} {
			if _, err := a.TryAcquire(ctx, shared("pool", r, 3)); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
		}
		var inv *events.InvalidError
		if _, err := a.TryAcquire(ctx, shared("pool", "s9", 2)); !errors.As(err, &inv) || inv.Field != "limit" {
			t.Fatalf("acquire with another limit: got %v, want invalid limit", err)
		}
		if _, err := a.TryAcquire(ctx, shared("pool", "s9", 0)); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("plain shared acquire of a semaphore: got %v, want invalid limit", err)
		}
		s3, err := a.TryAcquire(ctx, shared("pool", "s3", 3))
		if err != nil || !s3.Stolen || s3.Reason != events.ReasonHolderDead || s3.Previous.RequestID != "s0" {
			t.Fatalf("acquire of a full semaphore with a dead slot: %+v %v, want s0's slot taken (holder_dead)", s3, err)
		}
		var held *ledger.HeldError
		if _, err := a.TryAcquire(ctx, shared("pool", "s4", 3)); !errors.As(err, &held) || held.Limit != 3 {
			t.Fatalf("fourth live holder: got %v, want a HeldError of a full semaphore", err)
		}
		// s1 is the stalest once the others beat.
		for _, r := range []string{"s2", "s3"} {
			if _, err := a.Heartbeat(ctx, "pool", as(r)); err != nil {
				t.Fatal(err)
			}
		}
		refused := ledger.StealRequest{AcquireRequest: shared("pool", "s5", 3), Note: "need a slot"}
		if _, err := a.Steal(ctx, refused); !errors.As(err, &held) {
			t.Fatalf("steal of a live slot without active: got %v, want refused", err)
		}
		refused.Active = true
		got, err := a.Steal(ctx, refused)
		if err != nil || got.Reason != events.ReasonForcedActive || got.Previous.RequestID != "s1" {
			t.Fatalf("steal --active: %+v %v, want the stalest slot (s1)", got, err)
		}
		if _, err := a.Heartbeat(ctx, "pool", as("s1")); !errors.Is(err, ledger.ErrLost) {
			t.Errorf("heartbeat of the robbed slot: got %v, want ErrLost", err)
		}
		if lk := foldOf(t, a).Lock("pool"); len(lk.Shared) != 3 || lk.Limit != 3 {
			t.Fatalf("replay: shared %v limit %d, want s2 s3 s5 of 3", sharedIDs(lk), lk.Limit)
		}
		for _, r := range []string{"s2", "s3", "s5"} {
			if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "pool", Identity: as(r)}); err != nil {
				t.Fatal(err)
			}
		}
		// Free again: a new limit may be chosen.
		if _, err := a.TryAcquire(ctx, shared("pool", "n1", 5)); err != nil {
			t.Fatalf("new limit on a free lock: %v", err)
		}
		if o, err := replay.Overlaps(ctx, pgtest.Open(t, a.Source())); err != nil || len(o) != 0 {
			t.Fatalf("overlaps: %v %v", o, err)
		}
		verifyOK(t, a)
	})
}

// An exclusive acquirer takes over shared holders that are all dead, one
// lock_stolen each; a dead exclusive holder is taken over by a reader.
func TestConformanceExclusiveTakesOverDeadReaders(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a := f.open("host-a")
		dead := func(r ledger.AcquireRequest) { acquireForADeadProcess(t, a, r) }
		dead(shared("m", "r1", 0))
		dead(shared("m", "r2", 0))
		w, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "m", Identity: as("w"), TTL: time.Minute})
		if err != nil || !w.Stolen || w.Reason != events.ReasonHolderDead {
			t.Fatalf("exclusive over dead readers: %+v %v", w, err)
		}
		st := foldOf(t, a)
		if lk := st.Lock("m"); !lk.Held || lk.Holder.Token != w.FencingToken || len(lk.Shared) != 0 {
			t.Fatalf("replay: held %v token %v shared %v", lk.Held, lk.Holder, sharedIDs(lk))
		}
		if _, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "m", Identity: as("w")}); err != nil {
			t.Fatal(err)
		}
		dead(ledger.AcquireRequest{Lock: "m", Identity: as("w2"), TTL: time.Minute})
		r3, err := a.TryAcquire(ctx, shared("m", "r3", 0))
		if err != nil || !r3.Stolen || r3.Previous.RequestID != "w2" {
			t.Fatalf("reader over a dead writer: %+v %v", r3, err)
		}
		if lk := foldOf(t, a).Lock("m"); lk.Held || len(lk.Shared) != 1 {
			t.Fatalf("replay: held %v shared %v, want r3 alone", lk.Held, sharedIDs(lk))
		}
		verifyOK(t, a)
	})
}

// TestExclusiveOverDeadReadersKeepsWhatItAskedFor: an exclusive
// acquisition that takes a lock over from shared holders records what any
// acquisition records of its holding: the release secret it asked for
// (returned, and its SHA-256 in lock_stolen, so that the secret releases
// it), that its holder is a run, and the uid that acquired the holding it
// took (held_by).
func TestExclusiveOverDeadReadersKeepsWhatItAskedFor(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		ctx := context.Background()
		a := f.open("host-a")
		acquireForADeadProcess(t, a, shared("m", "r1", 0))
		w, err := a.TryAcquire(ctx, ledger.AcquireRequest{Lock: "m", Identity: as("w"), TTL: time.Minute, ReleaseSecret: true, Run: true})
		if err != nil || !w.Stolen {
			t.Fatalf("exclusive over a dead reader: %+v %v", w, err)
		}
		if w.ReleaseSecret == "" {
			t.Fatal("no release secret returned, though one was asked for")
		}
		ev, err := a.AcquisitionBefore(ctx, "m", "w", w.Seq+1)
		if err != nil || ev == nil || ev.Stolen == nil {
			t.Fatalf("the lock_stolen of w: %+v %v", ev, err)
		}
		if ev.Acquired.ReleaseSecretSHA256 == "" || !ev.Acquired.Run {
			t.Fatalf("lock_stolen records release_secret_sha256 %q, run %v: want the secret's sum and run", ev.Acquired.ReleaseSecretSHA256, ev.Acquired.Run)
		}
		if h := ev.Stolen.HeldBy; h == nil || h.UID == nil {
			t.Fatalf("lock_stolen's held_by %+v: want the uid that acquired the reader's holding", h)
		}
		out, err := a.Release(ctx, ledger.ReleaseRequest{Lock: "m", Identity: ledger.Identity{RequestID: "w", Actor: "someone-else", PID: 1}, Secret: w.ReleaseSecret})
		if err != nil || !out.Released {
			t.Fatalf("release with the secret: %+v %v", out, err)
		}
		verifyOK(t, a)
	})
}

// acquireForADeadProcess acquires r for a process that then exits, so that
// its holding is dead.
func acquireForADeadProcess(t *testing.T, l *ledger.Ledger, r ledger.AcquireRequest) {
	t.Helper()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	r.PID = child.Process.Pid
	if _, err := l.TryAcquire(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	child.Process.Kill()
	child.Wait()
}
