package trust

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// Heads is a local witness that keeps only the latest signed head of each
// ledger at each root: DIR/<ledger id>@<root>.checkpoint (<root> a hash of
// Root), replaced whole (written to a spare file, fsynced, swapped or
// renamed into place: replace) under DIR/<ledger id>@<root>.lock, never by
// a smaller head. A copy of a root (cp -a, a backup restored elsewhere)
// holds the same ledger: each keeps its own head, so that writing to one
// never makes the other look cut, while each is still held to its own.
// Without Root, the head is DIR/<ledger id>.checkpoint, as lockledger kept
// it before heads were per root; with Root, that file is read as the head
// until the root keeps one of its own.
// The zero Heads keeps nothing.
type Heads struct {
	Dir  string
	Root string // the root's resolved path, as the trust store pins it
}

// Path is the file holding ledger id's head at Root.
func (h Heads) Path(id string) string {
	return filepath.Join(h.Dir, h.name(id)+".checkpoint")
}

// paths are the files that may hold ledger id's head at Root: its own,
// then the one kept before heads were per root.
func (h Heads) paths(id string) []string { return []string{h.Path(id), Heads{Dir: h.Dir}.Path(id)} }

// DropAll moves aside (Drop) every head file of ledger id at Root.
func (h Heads) DropAll(id string) ([]*Dropped, error) {
	var all []*Dropped
	for _, p := range h.paths(id) {
		d, err := Drop(p)
		if err != nil {
			return all, err
		}
		if d != nil {
			all = append(all, d)
		}
	}
	return all, nil
}

// name is the stem of the files of ledger id's head at Root.
func (h Heads) name(id string) string {
	if h.Root == "" {
		return id
	}
	sum := sha256.Sum256([]byte(h.Root))
	return id + "@" + hex.EncodeToString(sum[:16])
}

// Kept is the file that holds ledger id's head at Root: Path, or where no
// head of Root was kept yet, the head kept of the ledger before heads were
// per root; "" when there is neither. A head a killed run left aside
// (Dropped) is put back first.
func (h Heads) Kept(id string) string {
	for _, p := range h.paths(id) {
		restoreDropped(p)
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return p
		}
	}
	return ""
}

// Last is the head of ledger id signed by v, nil when there is none.
func (h Heads) Last(id string, v note.Verifier) (*checkpoint.Signed, error) {
	if h.Dir == "" {
		return nil, nil
	}
	if err := headID(id); err != nil {
		return nil, err
	}
	// Read without Store's lock: a writer reads the head inside its write
	// transaction, and a process stopped inside Store (SIGSTOP, a frozen
	// VM) would hold every writer of the ledger there. The file at the
	// head's path is only ever written before it is swapped or renamed
	// into place, so a read of it is whole unless the file was swapped out
	// and rewritten as the spare while it was open: then no signature
	// verifies, and a fresh open reads the head in place.
	var s *checkpoint.Signed
	var err error
	path := h.Kept(id)
	if path == "" {
		return nil, nil
	}
	for range lastReads {
		if s, err = Last(path, id, v); s != nil || err != nil {
			break
		}
	}
	return s, err
}

// lastReads is how many times Heads.Last opens a head that holds no head
// the key signed before it believes it.
const lastReads = 3

// Read is the content of ledger id's head file (see Kept), nil when there
// is none, read under Store's lock, never through a symlink. The lock is
// waited for at most storeWait: a *LockBusyError when another process held
// it all that time.
func (h Heads) Read(id string) ([]byte, error) {
	if err := headID(id); err != nil {
		return nil, err
	}
	path := h.Kept(id)
	if path == "" {
		return nil, nil
	}
	if path != h.Path(id) {
		h = Heads{Dir: h.Dir}
	}
	unlock, err := h.readLock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return readAll(openRegular(path, os.O_RDONLY))
}

// readLock takes the shared lock of ledger id's head, where Store has
// made one: Store rewrites the file a head was swapped out of (see
// replace), which a reader may still hold open. The func lets it go.
func (h Heads) readLock(id string) (func(), error) {
	unlock, err := h.lock(id, os.O_RDONLY, lockfile.FlockShared)
	if errors.Is(err, fs.ErrNotExist) { // nothing stored yet
		return func() {}, nil
	}
	return unlock, err
}

// lock opens ledger id's lock file with flag and takes its flock with
// take, waiting at most storeWait. The func lets it go.
func (h Heads) lock(id string, flag int, take func(context.Context, int, time.Duration, time.Duration) (func(), error)) (func(), error) {
	f, err := openRegular(h.lockPath(id), flag)
	if err != nil {
		return nil, err
	}
	if _, err := take(context.Background(), int(f.Fd()), storeWait, 10*time.Millisecond); err != nil {
		f.Close()
		if errors.Is(err, lockfile.ErrBusy) {
			return nil, &LockBusyError{Lock: h.lockPath(id), Wait: storeWait}
		}
		return nil, fmt.Errorf("%s: %w", h.lockPath(id), err)
	}
	return func() { f.Close() }, nil
}

// LockBusyError: another process held the lock of a kept head for the
// whole of the bounded wait (one stopped, SIGSTOP or a frozen VM, while
// it kept a head): no reader or Store waits on it for longer.
type LockBusyError struct {
	Lock string        // the lock file
	Wait time.Duration // how long it was waited for
}

func (e *LockBusyError) Error() string {
	return fmt.Sprintf("%s: another process has held this lock for %s (stopped while it kept a head?)", e.Lock, e.Wait)
}

func (h Heads) lockPath(id string) string { return filepath.Join(h.Dir, h.name(id)+".lock") }

func (h Heads) sparePath(id string) string { return filepath.Join(h.Dir, "."+h.name(id)+".spare") }

// ErrCannotKeep: the head of a write could not be kept once it commits.
var ErrCannotKeep = errors.New("the signed head cannot be kept there")

// keepable refuses a head that Store could not keep: a directory this user
// cannot write, or a head, spare or lock file that is not a regular file
// (a FIFO, a directory, a symlink). It only looks (lstat, access), so a
// writer asks it inside its write transaction, before anything commits: a
// head that cannot be kept fails the write, rather than leaving every
// later write committed while the head kept stands still.
func (h Heads) keepable(id string) error {
	fi, err := os.Lstat(h.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", h.Dir, ErrCannotKeep, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w: not a directory (%s)", h.Dir, ErrCannotKeep, fi.Mode().Type())
	}
	if err := unix.Access(h.Dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("%s: %w: this user cannot write the directory (mode %04o): %w", h.Dir, ErrCannotKeep, fi.Mode().Perm(), err)
	}
	for _, p := range []string{h.Path(id), h.sparePath(id), h.lockPath(id)} {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("%s: %w: %w", p, ErrCannotKeep, err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s: %w: not a regular file (%s); move it aside", p, ErrCannotKeep, fi.Mode().Type())
		}
	}
	return nil
}

// openRegular opens a head or its lock file, which must be a regular file
// and not a symlink: O_NONBLOCK keeps a FIFO planted there from blocking
// the open (a writer reads the head inside its write transaction).
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := Regular(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Earlier is the head of ledger id signed by v, as an earlier checkpoint
// a new tree must extend; a head that cannot be read, or could not be
// kept once the write commits (see keepable), is a *HeadError.
func (h Heads) Earlier(id string, v note.Verifier) ([]checkpoint.Earlier, error) {
	if h.Dir == "" {
		return nil, nil
	}
	if err := headID(id); err != nil {
		return nil, &HeadError{Dir: h.Dir, Err: err}
	}
	if err := h.keepable(id); err != nil {
		return nil, &HeadError{Dir: h.Dir, Err: err}
	}
	kept, err := h.Last(id, v)
	if err != nil {
		return nil, &HeadError{Dir: h.Dir, Err: err}
	}
	if kept == nil {
		// A head file is only ever replaced whole by one this key signed:
		// one that holds none (another key's, or damaged) is not "no head".
		if p := h.Kept(id); p != "" {
			return nil, &HeadError{Dir: h.Dir, Err: fmt.Errorf("%s holds no head of ledger %s signed by %s (another key's, or damaged): %w", p, id, v.Name(), ErrForeignHead)}
		}
		return nil, nil
	}
	return []checkpoint.Earlier{{Checkpoint: kept.Checkpoint, Source: "the head kept in " + h.Kept(id)}}, nil
}

// ErrForeignHead: the head file holds no head the writer's key signed.
var ErrForeignHead = errors.New("if the key was changed on purpose, move the file aside or run `lockledger trust forget`")

// HeadError: the head kept outside the root cannot be read, so no tree
// can be proven to extend it; nothing may be signed.
type HeadError struct {
	Dir string
	Err error
}

func (e *HeadError) Error() string {
	if errors.Is(e.Err, ErrCannotKeep) {
		return fmt.Sprintf("refusing to sign: the signed head of this write could not be kept in %s: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("refusing to sign: the signed head kept in %s cannot be read: %v", e.Dir, e.Err)
}
func (e *HeadError) Unwrap() error { return e.Err }

// Store keeps msg, a checkpoint of size events of ledger id signed by v's
// key, as the ledger's head, and says where, unless a larger head signed
// by v is kept (another writer got there first: "", nil).
func (h Heads) Store(id string, size int64, msg string, v note.Verifier) (string, error) {
	if h.Dir == "" {
		return "", nil
	}
	if err := h.store(id, size, msg, v); err != nil {
		if errors.Is(err, errOlder) {
			return "", nil
		}
		return "", fmt.Errorf("keeping the signed head in %s: %w", h.Dir, err)
	}
	return h.Path(id), nil
}

var errOlder = errors.New("a larger head is kept")

// storeWait bounds how long Store waits for another Store of the same
// ledger's head, and Read for the head's lock: one stopped inside Store
// must not hold up the heartbeat that kept the head, whose write already
// stands (the next signed write keeps a later head), nor a verify.
const storeWait = 5 * time.Second

func (h Heads) store(id string, size int64, msg string, v note.Verifier) error {
	if err := headID(id); err != nil {
		return err
	}
	unlock, err := h.lock(id, os.O_RDWR|os.O_CREATE, lockfile.Flock)
	if err != nil {
		return err
	}
	defer unlock()
	if kept, err := Last(h.Kept(id), id, v); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	} else if kept != nil && kept.Size > size {
		return errOlder
	}
	if err := h.replace(id, msg); err != nil {
		return err
	}
	return lockfile.SyncDir(h.Dir)
}

// replace puts msg in place of ledger id's head, whole: written to the
// spare file DIR/.<id>.spare, fsynced, then swapped with the head (see
// exchange), so that no file is made or freed per head; where the two
// cannot be swapped (no head yet, or a file system that cannot), the spare
// is renamed into place.
func (h Heads) replace(id, msg string) error {
	spare := h.sparePath(id)
	f, err := openSpare(spare)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(msg), 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(msg))); err != nil { // after the write: the block stays
		f.Close()
		return err
	}
	if err := lockfile.SyncClose(f); err != nil {
		return err
	}
	// Only a regular head is swapped: anything else (a symlink, a FIFO)
	// would become the spare and fail every later head; a rename replaces it.
	if fi, err := os.Lstat(h.Path(id)); err == nil && fi.Mode().IsRegular() {
		if swapped, err := exchange(spare, h.Path(id)); swapped || err != nil {
			return err
		}
	}
	return os.Rename(spare, h.Path(id))
}

// openSpare opens the spare file to be written over, a regular file of
// one name: a spare with another name too (a hard link a backup of the
// directory made, or the head itself) is replaced by a new file, so that
// no other file is ever written in place.
func openSpare(path string) (*os.File, error) {
	for fresh := 0; ; fresh = os.O_EXCL {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|fresh|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", path)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok || st.Nlink == 1:
			return f, nil
		case fresh != 0:
			f.Close()
			return nil, fmt.Errorf("%s: a new file has %d names", path, st.Nlink)
		}
		f.Close()
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
}

// headID refuses a ledger id that cannot name a file of its own in the
// directory (the id is read from a database someone else may write).
func headID(id string) error {
	if !ValidLedgerID(id) || id[0] == '.' {
		return fmt.Errorf("ledger id %q cannot name a head file", id)
	}
	return nil
}
