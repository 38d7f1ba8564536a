package lockfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/lockfile"
)

func TestPinRoundTripsAndRefusesGarbage(t *testing.T) {
	d, root := openRoot(t)
	if _, ok, err := d.ReadPin(); ok || err != nil {
		t.Fatalf("a root without a pin: ok %v, err %v", ok, err)
	}
	for _, want := range []lockfile.Pin{{LedgerID: "ab12", Seq: 0}, {LedgerID: "ab12", Seq: 13, Hash: strings.Repeat("cd", 32)}} {
		if err := d.WritePin(want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := d.ReadPin()
		if err != nil || !ok || got != want {
			t.Fatalf("ReadPin after WritePin(%+v): %+v, %v, %v", want, got, ok, err)
		}
	}
	path := filepath.Join(root, lockfile.PinName)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the pin file: %v, %v; want mode 0600", fi, err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+lockfile.PinName) {
			t.Errorf("a temporary pin file was left: %s", e.Name())
		}
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.ReadPin(); ok || err != nil {
		t.Fatalf("an empty pin: ok %v, err %v; want none", ok, err)
	}
	for _, bad := range []string{"ab12\n", "ab12 x -\n", "ab12 5 -\n", "ab12 0 cd\n", "ab12 -1 -\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.ReadPin(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("pin %q: got %v, want an error naming the file", bad, err)
		}
	}
}

// TestPinThatIsNoFileIsNamedSo: a FIFO or a directory at the pin is
// refused saying what it is, without blocking on the FIFO, as at a lock
// file; it failed before as "read …: read …: illegal seek".
func TestPinThatIsNoFileIsNamedSo(t *testing.T) {
	d, root := openRoot(t)
	path := filepath.Join(root, lockfile.PinName)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := d.ReadPin()
	var unsafe *lockfile.UnsafePathError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), path+": is not a regular file (a named pipe)") {
		t.Fatalf("a FIFO at the pin: %v, want it named as a named pipe", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ReadPin(); !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "is not a regular file (a directory)") {
		t.Fatalf("a directory at the pin: %v, want it named as a directory", err)
	}
}

// TestMutexThatIsNoFileIsNamedSo: a FIFO at writer.flock is refused by
// the writer saying what it is; it failed before as "read …: read …:
// illegal seek", once the writer read the ledger id it records.
func TestMutexThatIsNoFileIsNamedSo(t *testing.T) {
	d, root := openRoot(t)
	path := filepath.Join(root, lockfile.MutexName)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := d.OpenMutex()
	if err == nil {
		_, err = m.Marker()
		m.Close()
	}
	var unsafe *lockfile.UnsafePathError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), path+": is not a regular file (a named pipe)") {
		t.Fatalf("a FIFO at the writer mutex: %v, want it named as a named pipe", err)
	}
}

// TestLockPinExcludesAnotherAndNotTheWriterMutex: the pin's lock keeps a
// second advance of the pin (another descriptor, as another process has)
// out until it is let go, and is had while the writer mutex is held (a
// writer stopped in its commit), so that no exit waits for that writer.
// Its file is made as writer.flock is: no one else may open it.
func TestLockPinExcludesAnotherAndNotTheWriterMutex(t *testing.T) {
	d, root := openRoot(t)
	other, err := lockfile.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	m, err := d.OpenMutex()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	unlockWriter, err := m.Lock(context.Background(), time.Second, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockWriter()
	now, cancel := context.WithCancel(context.Background())
	cancel() // one try, no wait
	unlock, err := d.LockPin(now)
	if err != nil {
		t.Fatalf("the pin's lock while the writer mutex is held: %v", err)
	}
	if _, err := other.LockPin(now); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second pin's lock while the first is held: %v, want it kept out", err)
	}
	unlock()
	unlock, err = other.LockPin(now)
	if err != nil {
		t.Fatalf("the pin's lock once let go: %v", err)
	}
	unlock()
	if fi, err := os.Lstat(filepath.Join(root, lockfile.PinLockName)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the pin's lock file: %v, %v; want a regular file of mode 0600", fi, err)
	}
}
