package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockledger/lockledger/events"
)

func TestReadOnlyOpenReadsAndRefusesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	want := count(t, e.l)
	ro, err := Open(ctx, e.root, ReadOnly(), WithClock(e.clock.Now), WithProcessProbe(e.probe),
		WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.ID() != e.l.ID() || ro.Genesis() != e.l.Genesis() {
		t.Fatalf("read-only open: id %s genesis %.12s, want %s %.12s", ro.ID(), ro.Genesis(), e.l.ID(), e.l.Genesis())
	}
	s, err := ro.Status(ctx, "a")
	if err != nil || s.State != events.StateHeld || s.Holder.RequestID != "r1" {
		t.Fatalf("status through a read-only open: %+v, %v; want held by r1", s, err)
	}
	writes := map[string]func() error{
		"acquire": func() error { _, err := ro.TryAcquire(ctx, req("b", "r2", 100)); return err },
		"release": func() error {
			_, err := ro.Release(ctx, ReleaseRequest{Lock: "a", Identity: Identity{RequestID: "r1", Actor: "t", PID: 100}})
			return err
		},
		"project": func() error { _, err := ro.Project(ctx); return err },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s through a read-only open: %v, want ErrReadOnly", name, err)
		}
	}
	if got := count(t, e.l); got != want {
		t.Fatalf("events after refused writes: got %d, want %d", got, want)
	}
}

func TestReadOnlyOpenCreatesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "absent")
	if _, err := Open(ctx, root, ReadOnly()); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("read-only open of a missing root: %v, want ErrNoLedger", err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read-only open created %s (%v)", root, err)
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, DBFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, empty, ReadOnly()); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("read-only open of an empty ledger.db: %v, want ErrNoLedger", err)
	}
	entries, err := os.ReadDir(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("a read-only open left %d entries in the root, want only %s", len(entries), DBFile)
	}
}

func TestReadOnlyOpenWithoutALocksDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := open(t)
	if _, err := e.l.TryAcquire(ctx, req("a", "r1", 100)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.l.LocksDir()); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, e.root, ReadOnly(), WithProcessProbe(e.probe), WithClock(e.clock.Now), WithHost(Host{ID: "host-a", BootID: "boot-1"}))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	list, err := ro.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "a" {
		t.Fatalf("list without locks/: %v, %v; want lock a from the table", list, err)
	}
	if _, err := os.Lstat(e.l.LocksDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read-only open created locks/ (%v)", err)
	}
}
