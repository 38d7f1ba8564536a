package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

// Names inside a root.
const (
	LocksName = "locks"
	MutexName = "writer.flock"
)

// Dir is an open root: a descriptor for ROOT and one for ROOT/locks, each
// opened once without following a symlink. Every file below is reached
// through them. Lock names (NAME in NAME.lock) are single path components.
type Dir struct {
	// mu keeps the descriptors open while they are used: Close waits for
	// the uses under way, and every use after it fails with ErrClosed.
	mu     sync.RWMutex
	closed bool
	root   at    // fd -1: the root does not exist (a reader's look)
	noRoot error // why root.fd is -1 where the root is not missing
	locks  at    // fd -1: there is no locks directory
	// broken says why the locks directory cannot be used (a file or a
	// symlink in its place, no permission). Reads of lock files report it.
	broken error
}

// Open opens the root at root (absolute) and its locks directory, where
// they exist; nothing is created. A missing root or locks directory, and a
// root that is not a directory, hold nothing; a locks directory that
// cannot be opened, or is not a directory, leaves Broken set.
func Open(root string) (*Dir, error) {
	d := &Dir{root: at{fd: -1, path: root}, locks: at{fd: -1, path: filepath.Join(root, LocksName)}}
	fd, err := unix.Open(root, openPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT:
		return d, nil
	case err == unix.ELOOP || err == unix.ENOTDIR:
		// Nothing to read; what to make of a root that is a symlink or a
		// file is the caller's to say (writes here are refused).
		d.noRoot = &UnsafePathError{Path: root, Reason: "is not a directory"}
		return d, nil
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	d.root.fd = fd
	if err := d.openLocks(); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.broken = fmt.Errorf("locks directory: %w", err)
	}
	return d, nil
}

// openLocks opens ROOT/locks relative to the root, refusing anything but a
// directory there.
func (d *Dir) openLocks() error {
	fd, err := d.root.openIn(LocksName, openPath|unix.O_DIRECTORY, 0)
	switch {
	case err == unix.ENOENT:
		return &os.PathError{Op: "open", Path: d.locks.path, Err: os.ErrNotExist}
	case err == unix.ELOOP:
		return &UnsafePathError{Path: d.locks.path, Reason: "is a symlink"}
	case err == unix.ENOTDIR:
		return &UnsafePathError{Path: d.locks.path, Reason: "is not a directory"}
	case err != nil:
		return d.root.openErr("open", LocksName, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return &UnsafePathError{Path: d.locks.path, Reason: "is not a directory"}
	}
	d.locks.fd = fd
	return nil
}

// MakeLocks creates the locks directory where it is missing, mode 0700
// (2770 in a group root), and opens it; anything but a directory in its
// place is refused.
func (d *Dir) MakeLocks() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.rootErr(); err != nil {
		return err
	}
	if d.locks.fd >= 0 {
		return nil
	}
	d.broken = nil
	err := unix.Mkdirat(d.root.fd, LocksName, PrivateDirMode)
	if err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "mkdir", Path: d.locks.path, Err: err}
	}
	if err := d.openLocks(); err != nil {
		return err
	}
	if err == nil && d.root.isGroupDir() {
		// setgid is set explicitly: mkdir(2) may drop it, and the umask
		// takes the group's bits.
		fd, err := d.locks.reopen()
		if err == nil {
			err = unix.Fchmod(fd, GroupDirMode)
			unix.Close(fd)
		}
		if err != nil {
			return &os.PathError{Op: "chmod", Path: d.locks.path, Err: err}
		}
	}
	return nil
}

// use holds the descriptors open until done is called; after Close it
// fails with ErrClosed.
func (d *Dir) use() (done func(), err error) {
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return func() {}, ErrClosed
	}
	return d.mu.RUnlock, nil
}

// inRoot runs f on the root with the descriptors held open. Where there
// is no root, f does not run: a write fails with why (rootErr), a read
// finds nothing (nil).
func (d *Dir) inRoot(write bool, f func(r at) error) error {
	done, err := d.use()
	defer done()
	switch {
	case err != nil:
		return err
	case d.root.fd >= 0:
		return f(d.root)
	case write:
		return d.rootErr()
	}
	return nil
}

// inLocks runs f on the locks directory for a read (see readable) or a
// write (see writable), with the descriptors held open; where a read
// finds no locks directory, f does not run.
func (d *Dir) inLocks(write bool, f func(l at) error) error {
	done, err := d.use()
	defer done()
	if err != nil {
		return err
	}
	dir := d.readable
	if write {
		dir = d.writable
	}
	l, err := dir()
	if err != nil || l.fd < 0 {
		return err
	}
	return f(l)
}

// rootErr says why there is no root to write in; nil when there is one.
func (d *Dir) rootErr() error {
	switch {
	case d.root.fd >= 0:
		return nil
	case d.noRoot != nil:
		return d.noRoot
	}
	return &os.PathError{Op: "open", Path: d.root.path, Err: os.ErrNotExist}
}

// Close closes the descriptors; a nil Dir is closed already.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	closeFD(d.locks.fd)
	closeFD(d.root.fd)
	d.locks.fd, d.root.fd = -1, -1
	return nil
}

// Root is the root's path.
func (d *Dir) Root() string { return d.root.path }

// LocksDir is the locks directory's path.
func (d *Dir) LocksDir() string { return d.locks.path }

// Broken says why the locks directory cannot be read; nil when it can.
func (d *Dir) Broken() error { return d.broken }

// fileName is lock's file name in the locks directory.
func fileName(lock string) string { return lock + ".lock" }

// Path is the path of lock's file, for messages and records.
func (d *Dir) Path(lock string) string { return d.locks.join(fileName(lock)) }

// JournalPath is the path of lock's journal, for messages.
func (d *Dir) JournalPath(lock string) string { return d.locks.join(journalName(fileName(lock))) }

// readable is the locks directory for a read: an error where it is broken.
func (d *Dir) readable() (at, error) {
	if d.broken != nil {
		return at{}, d.broken
	}
	return d.locks, nil
}

// writable is the locks directory for a write, once it is made sure that
// ROOT/locks still is the directory opened: a write never lands in a
// directory that was moved away, and the error names what took its place.
func (d *Dir) writable() (at, error) {
	if d.broken != nil {
		return at{}, d.broken
	}
	if d.locks.fd < 0 {
		return at{}, &os.PathError{Op: "open", Path: d.locks.path, Err: os.ErrNotExist}
	}
	var opened unix.Stat_t
	if err := unix.Fstat(d.locks.fd, &opened); err != nil {
		return at{}, &os.PathError{Op: "fstat", Path: d.locks.path, Err: err}
	}
	now, ok, err := d.root.lstat(LocksName)
	switch {
	case err != nil:
		return at{}, err
	case !ok:
		return at{}, &UnsafePathError{Path: d.locks.path, Reason: "is gone (moved or removed since the ledger opened it)"}
	case now.Mode&unix.S_IFMT == unix.S_IFLNK:
		return at{}, &UnsafePathError{Path: d.locks.path, Reason: "is now a symlink (it was a directory when the ledger opened it)"}
	case now.Dev != opened.Dev || now.Ino != opened.Ino:
		return at{}, &UnsafePathError{Path: d.locks.path, Reason: "was replaced since the ledger opened it"}
	}
	return d.locks, nil
}

// Read returns lock's file; a missing file (or locks directory) is State{}.
func (d *Dir) Read(lock string) (State, error) { return d.readLocks(fileName(lock)) }

// ReadJournal returns lock's journal (see journal.go).
func (d *Dir) ReadJournal(lock string) (State, error) {
	return d.readLocks(journalName(fileName(lock)))
}

func (d *Dir) readLocks(name string) (s State, err error) {
	err = d.inLocks(false, func(l at) (err error) { s, err = l.read(name); return err })
	return s, err
}

// Place puts lock's new file in place without clobbering an existing one
// (ErrExists). It returns the journal, open, for the caller to fsync with
// its commit (SyncClose) and remove after it (Done).
func (d *Dir) Place(lock string, data []byte) (j *os.File, err error) {
	err = d.inLocks(true, func(l at) (err error) { j, err = l.place(fileName(lock), data); return err })
	return j, err
}

// Replace atomically swaps lock's file for one holding data. It returns
// the journal, open, as Place does.
func (d *Dir) Replace(lock string, data []byte) (j *os.File, err error) {
	err = d.inLocks(true, func(l at) (err error) { j, err = l.replace(fileName(lock), data); return err })
	return j, err
}

// Remove deletes lock's file if it still holds exactly data.
func (d *Dir) Remove(lock string, data []byte) error {
	return d.inLocks(true, func(l at) error { return l.remove(fileName(lock), data) })
}

// Drop deletes lock's file, whatever it holds.
func (d *Dir) Drop(lock string) error {
	return d.inLocks(true, func(l at) error { return l.unlink(fileName(lock)) })
}

// DropIfInode deletes lock's file if it still is the file ino, and leaves
// anything that took its place.
func (d *Dir) DropIfInode(lock string, ino uint64) error {
	return d.inLocks(true, func(l at) error {
		st, ok, err := l.lstat(fileName(lock))
		if err != nil || !ok || st.Ino != ino {
			return err
		}
		return l.unlink(fileName(lock))
	})
}

// Done removes lock's journal once the change is committed.
func (d *Dir) Done(lock string) error { return d.unlinkIn(journalName(fileName(lock))) }

// Settle removes lock's journal and swap file: an interrupted write is
// over once its lock file is dropped or kept.
func (d *Dir) Settle(lock string) error {
	return d.unlinkIn(journalName(fileName(lock)), swapName(fileName(lock)))
}

// unlinkIn removes names from the locks directory, where there is one.
func (d *Dir) unlinkIn(names ...string) error {
	done, err := d.use()
	defer done()
	if err != nil || d.locks.fd < 0 {
		return err
	}
	for _, name := range names {
		if err := d.locks.unlink(name); err != nil {
			return err
		}
	}
	return nil
}

// Entries lists the locks directory, sorted by name; a missing one holds
// nothing.
func (d *Dir) Entries() (entries []os.DirEntry, err error) {
	err = d.inLocks(false, func(l at) (err error) { entries, err = l.list(); return err })
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Exists reports whether anything (a symlink included) is at name in the
// root.
func (d *Dir) Exists(name string) (ok bool, err error) {
	err = d.inRoot(false, func(r at) (err error) { _, ok, err = r.lstat(name); return err })
	return ok, err
}

// LockNames lists the names of the locks with a file in the locks
// directory (NAME.lock), and with journals where a journal alone counts
// (a change in flight, .NAME.lock.pending); names that are no valid lock
// name are left out.
func (d *Dir) LockNames(journals bool) (map[string]bool, error) {
	entries, err := d.Entries()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if j, ok := strings.CutSuffix(n, ".lock.pending"); ok && strings.HasPrefix(j, ".") && journals {
			n = j[1:]
		} else if f, ok := strings.CutSuffix(n, ".lock"); ok && !strings.HasPrefix(n, ".") {
			n = f
		} else {
			continue
		}
		if events.ValidateLockName(n) == nil {
			names[n] = true
		}
	}
	return names, nil
}
