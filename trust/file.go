package trust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// openOwn opens a file of the trust store: never through a symlink, never
// blocking on a FIFO (O_NONBLOCK), and only a regular file of this user's
// that no one else can write. Anything else is events.Invalid naming the
// file and the rule: whoever could plant or replace it could change what
// vouches for a ledger, or hang every command that reads it.
func openOwn(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, events.Invalid("trust store file", path, "is a symlink: the trust store's files are never followed")
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EISDIR):
		return nil, events.Invalid("trust store file", path, "is not a regular file: move it aside")
	case err != nil:
		return nil, err
	}
	if err := checkOwn(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readAll is the content of f, which open returned with err: nil, and no
// error, when there is no such file.
func readAll(f *os.File, err error) ([]byte, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// checkOwn refuses an opened file of the store that is not a regular file
// of this user's, or that others can write.
func checkOwn(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return events.Invalid("trust store file", path, fmt.Sprintf("is not a regular file (%s): move it aside", fi.Mode().Type()))
	case st != nil && int(st.Uid) != os.Geteuid():
		return events.Invalid("trust store file", path, fmt.Sprintf("is owned by uid %d, not by this user (uid %d): only its owner may keep a trust store", st.Uid, os.Geteuid()))
	case fi.Mode().Perm()&0o022 != 0:
		return events.Invalid("trust store file", path, fmt.Sprintf("has mode %04o: others can write it; chmod go-w it (0600)", fi.Mode().Perm()))
	}
	return nil
}

// lockWait bounds how long a writer of one file of the store waits for
// another: a process stopped while it holds the lock (SIGSTOP, a frozen
// VM) must not hold up every command of this user.
const lockWait = 5 * time.Second

// ErrLockBusy: another process held a lock of the trust store longer
// than lockWait.
var ErrLockBusy = errors.New("another process holds it (stopped while it changed the trust store?)")

// lockFile takes an exclusive flock on path (created 0600), for the
// writers of one file of the store, waiting at most lockWait; the returned
// func lets it go.
func lockFile(path string) (func(), error) {
	f, err := openOwn(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	unlock, err := lockfile.Flock(context.Background(), int(f.Fd()), lockWait, 10*time.Millisecond)
	if errors.Is(err, lockfile.ErrBusy) {
		f.Close()
		return nil, fmt.Errorf("%s: waited %s: %w", path, lockWait, ErrLockBusy)
	} else if err != nil {
		f.Close()
		return nil, err
	}
	return func() { unlock(); f.Close() }, nil
}
