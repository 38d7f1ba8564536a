package lockfile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/lockfile"
)

func TestMutexExcludesAnotherOpen(t *testing.T) {
	ctx := context.Background()
	d, _ := openRoot(t)
	a, err := d.OpenMutex()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := d.OpenMutex()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	unlock, err := a.Lock(ctx, time.Second, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, 20*time.Millisecond, time.Millisecond); !errors.Is(err, lockfile.ErrBusy) {
		t.Fatalf("Lock while another open holds it: %v, want ErrBusy", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Lock(cctx, time.Minute, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: %v", err)
	}
	unlock()
	unlockB, err := b.Lock(ctx, time.Second, time.Millisecond)
	if err != nil {
		t.Fatalf("Lock once released: %v", err)
	}
	unlockB()
}

func TestMarker(t *testing.T) {
	d, _ := openRoot(t)
	if m, err := d.Marker(); err != nil || m != "" {
		t.Fatalf("Marker before writer.flock exists: %q, %v", m, err)
	}
	mu, err := d.OpenMutex()
	if err != nil {
		t.Fatal(err)
	}
	defer mu.Close()
	if err := mu.SetMarker("ledger-1"); err != nil {
		t.Fatal(err)
	}
	if err := mu.SetMarker("ledger-2"); err != nil {
		t.Fatal(err)
	}
	for what, read := range map[string]func() (string, error){"Mutex.Marker": mu.Marker, "Dir.Marker": d.Marker} {
		if m, err := read(); err != nil || m != "ledger-2" {
			t.Errorf("%s: %q, %v; want ledger-2", what, m, err)
		}
	}
}

func TestWatchWakesOnTheLocksFile(t *testing.T) {
	d, _ := openRoot(t)
	w := d.Watch("a")
	defer w.Close()
	j, err := d.Place("a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	start := time.Now()
	w.Wait(context.Background(), 10*time.Second)
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Wait took %s after the lock file appeared", waited)
	}
}
