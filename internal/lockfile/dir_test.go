package lockfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/lockfile"
)

// openRoot opens a new root in a temporary directory, its locks directory made.
func openRoot(t *testing.T) (*lockfile.Dir, string) {
	t.Helper()
	root := t.TempDir()
	d, err := lockfile.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.MakeLocks(); err != nil {
		t.Fatal(err)
	}
	return d, root
}

func mustRead(t *testing.T, d *lockfile.Dir, lock string) lockfile.State {
	t.Helper()
	st, err := d.Read(lock)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPlaceReplaceRemove(t *testing.T) {
	d, root := openRoot(t)
	j, err := d.Place("a", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lockfile.SyncClose(j); err != nil {
		t.Fatal(err)
	}
	if st := mustRead(t, d, "a"); !st.Exists || string(st.Data) != "one" || st.Path != filepath.Join(root, "locks", "a.lock") {
		t.Fatalf("after Place: %+v", st)
	}
	journal, err := d.ReadJournal("a")
	if err != nil || !journal.Exists || journal.Ino != mustRead(t, d, "a").Ino {
		t.Fatalf("the journal is not the placed file until Done: %+v, %v", journal, err)
	}
	if _, err := d.Place("a", []byte("two")); !errors.Is(err, lockfile.ErrExists) {
		t.Fatalf("Place over an existing file: %v, want ErrExists", err)
	}
	if st := mustRead(t, d, "a"); string(st.Data) != "one" {
		t.Fatalf("a refused Place changed the file: %q", st.Data)
	}
	if j, err = d.Replace("a", []byte("two")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if st := mustRead(t, d, "a"); string(st.Data) != "two" {
		t.Fatalf("after Replace: %q", st.Data)
	}
	if err := d.Done("a"); err != nil {
		t.Fatal(err)
	}
	if journal, _ := d.ReadJournal("a"); journal.Exists {
		t.Fatal("Done left the journal")
	}
	if err := d.Remove("a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if !mustRead(t, d, "a").Exists {
		t.Fatal("Remove deleted a file that no longer holds the bytes given")
	}
	if err := d.Remove("a", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if mustRead(t, d, "a").Exists {
		t.Fatal("Remove left the file")
	}
	entries, err := d.Entries()
	if err != nil || len(entries) != 0 {
		t.Fatalf("locks directory after all: %v, %v", entries, err)
	}
}

func TestNamesAreOneComponent(t *testing.T) {
	d, _ := openRoot(t)
	for _, name := range []string{"../x", "a/b", "/etc/x"} {
		if _, err := d.Place(name, []byte("x")); !errors.Is(err, lockfile.ErrUnsafePath) {
			t.Errorf("Place(%q): %v, want ErrUnsafePath", name, err)
		}
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	d, root := openRoot(t)
	locks := filepath.Join(root, "locks")
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(locks, "link.lock")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(locks, "fifo.lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	for lock, reason := range map[string]string{"link": "is a symlink", "fifo": "a named pipe"} {
		_, err := d.Read(lock)
		var unsafe *lockfile.UnsafePathError
		if !errors.As(err, &unsafe) || !strings.Contains(unsafe.Reason, reason) || unsafe.Path != filepath.Join(locks, lock+".lock") {
			t.Errorf("Read(%q): %v, want an unsafe path error saying %q", lock, err, reason)
		}
	}
	if st, err := d.Read("missing"); err != nil || st.Exists {
		t.Errorf("Read of a missing file: %+v, %v", st, err)
	}
}

// TestASymlinkedLocksDirectoryIsRefused: at the open, and for every write
// after ROOT/locks is swapped for a symlink, nothing is written where it
// points; the errors name ROOT/locks.
func TestASymlinkedLocksDirectoryIsRefused(t *testing.T) {
	elsewhere := t.TempDir()
	t.Run("at the open", func(t *testing.T) {
		root := t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(root, "locks")); err != nil {
			t.Fatal(err)
		}
		d, err := lockfile.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if !errors.Is(d.Broken(), lockfile.ErrUnsafePath) {
			t.Errorf("Broken: %v, want ErrUnsafePath", d.Broken())
		}
		if err := d.MakeLocks(); !errors.Is(err, lockfile.ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(root, "locks")) {
			t.Errorf("MakeLocks: %v, want ErrUnsafePath naming the locks directory", err)
		}
		if _, err := d.Place("v7", []byte("x")); err == nil {
			t.Error("Place through a symlinked locks directory succeeded")
		}
	})
	t.Run("after the open", func(t *testing.T) {
		d, root := openRoot(t)
		locks := filepath.Join(root, "locks")
		if err := os.Rename(locks, locks+".real"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, locks); err != nil {
			t.Fatal(err)
		}
		for what, write := range map[string]func() error{
			"Place":   func() error { _, err := d.Place("v7", []byte("x")); return err },
			"Replace": func() error { _, err := d.Replace("v7", []byte("x")); return err },
			"Remove":  func() error { return d.Remove("v7", []byte("x")) },
		} {
			if err := write(); !errors.Is(err, lockfile.ErrUnsafePath) || !strings.Contains(err.Error(), locks+": is now a symlink") {
				t.Errorf("%s: %v, want ErrUnsafePath saying %s is now a symlink", what, err, locks)
			}
		}
	})
	entries, err := os.ReadDir(elsewhere)
	if err != nil || len(entries) > 0 {
		t.Fatalf("the symlink's target holds %v (%v)", entries, err)
	}
}

func TestGroupModes(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	root := t.TempDir()
	if err := os.Chmod(root, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	d, err := lockfile.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(root, &st); err != nil || !lockfile.GroupMode(uint32(st.Mode)) {
		t.Fatalf("a 2770 root is not shared (%v)", err)
	}
	if err := d.MakeLocks(); err != nil {
		t.Fatal(err)
	}
	j, err := d.Place("a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	m, err := d.OpenMutex()
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if err := d.CreateFile("ledger.db"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		"locks":                 0o770 | os.ModeSetgid | os.ModeDir,
		"locks/a.lock":          0o660,
		"locks/.a.lock.pending": 0o660,
		"writer.flock":          0o660,
		"ledger.db":             0o660,
	} {
		fi, err := os.Lstat(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %s, want %s", path, fi.Mode(), want)
		}
	}
}

func TestKeepAside(t *testing.T) {
	d, root := openRoot(t)
	p := filepath.Join(root, "locks", "a.lock")
	if err := os.WriteFile(p, []byte("\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := mustRead(t, d, "a")
	now := f.Mtime
	a, err := d.KeepAside("a", f, now)
	if err != nil || !a.Created || a.ModeErr != nil {
		t.Fatalf("KeepAside: %+v, %v", a, err)
	}
	fi, err := os.Lstat(a.Path)
	if err != nil || fi.Mode() != 0o600 || filepath.Dir(a.Path) != filepath.Join(root, "locks") {
		t.Fatalf("kept at %s: %v, %v", a.Path, fi, err)
	}
	again, err := d.KeepAside("a", f, now)
	if err != nil || again.Created || again.Path != a.Path {
		t.Fatalf("a second KeepAside of the same file: %+v, %v; want %s reused", again, err, a.Path)
	}
	if err := d.DropAside("a", p); !errors.Is(err, lockfile.ErrUnsafePath) {
		t.Fatalf("DropAside of the lock file itself: %v, want ErrUnsafePath", err)
	}
	if err := d.DropIfInode("a", f.Ino+1); err != nil || !mustRead(t, d, "a").Exists {
		t.Fatalf("DropIfInode with another inode: %v", err)
	}
	if err := d.DropIfInode("a", f.Ino); err != nil || mustRead(t, d, "a").Exists {
		t.Fatalf("DropIfInode: %v", err)
	}
	if err := d.DropAside("a", a.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(a.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DropAside left %s: %v", a.Path, err)
	}
}

func TestFilesOutsideTheRoot(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "target.lock")
	j, err := lockfile.PlaceFile(p, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if j, err = lockfile.ReplaceFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if st, err := lockfile.ReadFile(p); err != nil || !bytes.Equal(st.Data, []byte("two")) {
		t.Fatalf("ReadFile: %+v, %v", st, err)
	}
	if err := lockfile.RemoveIfExists(lockfile.JournalOf(p)); err != nil {
		t.Fatal(err)
	}
	if err := lockfile.RemoveFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if st, err := lockfile.ReadFile(filepath.Join(dir, "missing", "x.lock")); err != nil || st.Exists {
		t.Fatalf("ReadFile in a missing directory: %+v, %v", st, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}

func TestCreateFileRefusesANonRegularFile(t *testing.T) {
	d, root := openRoot(t)
	if err := os.Mkdir(filepath.Join(root, "ledger.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateFile("ledger.db"); !errors.Is(err, lockfile.ErrUnsafePath) {
		t.Fatalf("CreateFile over a directory: %v, want ErrUnsafePath", err)
	}
}

func TestUseAfterCloseFails(t *testing.T) {
	d, _ := openRoot(t)
	d.Close()
	if _, err := d.Read("a"); !errors.Is(err, lockfile.ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if _, err := d.Place("a", []byte("x")); !errors.Is(err, lockfile.ErrClosed) {
		t.Errorf("Place after Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
