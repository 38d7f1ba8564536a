package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/ledger"
)

func acquireAs(ctx context.Context, l *ledger.Ledger, lock string) error {
	_, err := l.TryAcquire(ctx, ledger.AcquireRequest{Lock: lock,
		Identity: ledger.Identity{RequestID: "req_" + lock, Actor: "t", PID: os.Getpid()}})
	return err
}

// emptyDir fails the test where dir holds anything.
func emptyDir(t *testing.T, dir, what string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s: %s holds %s", what, dir, strings.Join(names, ", "))
	}
}

// TestASwappedLocksDirectoryNeverRedirectsALockFile: a member of a group
// root replaced ROOT/locks by a symlink to a directory elsewhere while
// root's process had the ledger open, and root's next acquire created
// v7.lock (and its journal) in that directory, which the member could not
// otherwise write. The locks directory is opened once; every lock file is
// written relative to it, and a write first makes sure that ROOT/locks
// still is that directory.
func TestASwappedLocksDirectoryNeverRedirectsALockFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	elsewhere := t.TempDir()
	locks := filepath.Join(root, ledger.LocksDir)
	moved := locks + ".real"

	l, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := acquireAs(ctx, l, "v6"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(locks, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, locks); err != nil {
		t.Fatal(err)
	}

	err = acquireAs(ctx, l, "v7")
	emptyDir(t, elsewhere, "acquire through a ledger opened before locks/ became a symlink")
	switch {
	case err == nil:
		if _, serr := os.Lstat(filepath.Join(moved, "v7.lock")); serr != nil {
			t.Fatalf("acquire succeeded but v7.lock is not in the directory the ledger opened: %v", serr)
		}
	case !errors.Is(err, ledger.ErrUnsafePath) || !strings.Contains(err.Error(), locks):
		t.Fatalf("acquire with locks/ swapped for a symlink: %v; want an unsafe path error naming %s", err, locks)
	}

	// A new open (each CLI command is one) refuses the symlink outright.
	l2, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err == nil {
		err = acquireAs(ctx, l2, "v8")
		l2.Close()
	}
	emptyDir(t, elsewhere, "open and acquire with locks/ a symlink")
	if !errors.Is(err, ledger.ErrUnsafePath) || !strings.Contains(err.Error(), locks) {
		t.Fatalf("open and acquire with locks/ a symlink: %v; want an unsafe path error naming %s", err, locks)
	}

	// Put back, the directory is the ledger's again.
	if err := os.Remove(locks); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, locks); err != nil {
		t.Fatal(err)
	}
	if err := acquireAs(ctx, l, "v9"); err != nil {
		t.Fatalf("acquire once locks/ is back: %v", err)
	}
	for _, name := range []string{"v6", "v9"} {
		if _, err := os.Lstat(filepath.Join(locks, name+".lock")); err != nil {
			t.Errorf("%s.lock: %v", name, err)
		}
	}
}

// TestLocksFlippingToASymlinkDuringAcquires: the same swap made over and
// over while acquires run, as the member did, each acquire through a new
// open as the CLI makes them. Acquires may fail; none writes elsewhere.
func TestLocksFlippingToASymlinkDuringAcquires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	elsewhere := t.TempDir()
	locks := filepath.Join(root, ledger.LocksDir)
	moved := locks + ".real"
	l, err := ledger.Open(ctx, root, ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()

	stop := make(chan struct{})
	flipped := make(chan int, 1)
	go func() {
		// An open may create locks/ anew while it is moved away: that one
		// is dropped, so that the real one can come back.
		n := 0
		for {
			select {
			case <-stop:
				flipped <- n
				return
			default:
			}
			if os.Rename(locks, moved) != nil {
				continue
			}
			if os.Symlink(elsewhere, locks) == nil {
				n++
			}
			for os.Rename(moved, locks) != nil {
				_ = os.RemoveAll(locks) // retried while an open writes into it
			}
		}
	}()
	ok := 0
	for i := range 300 {
		l, err := ledger.Open(ctx, root, ledger.Unsigned())
		if err != nil {
			continue
		}
		if acquireAs(ctx, l, fmt.Sprintf("v%d", i)) == nil {
			ok++
		}
		l.Close()
	}
	close(stop)
	flips := <-flipped
	t.Logf("%d flips; %d of 300 acquires succeeded", flips, ok)
	if flips < 10 {
		t.Fatalf("locks/ became a symlink only %d times during the acquires", flips)
	}
	emptyDir(t, elsewhere, "acquires while locks/ flipped between a directory and a symlink")
}
