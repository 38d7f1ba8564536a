package lockfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Mutex is the writer mutex: an flock(2) on ROOT/writer.flock. The kernel
// drops the flock when its holder dies, so a killed writer never wedges
// the ledger. The file also records the ledger's id (Marker).
type Mutex struct{ f *os.File }

// OpenMutex opens ROOT/writer.flock, creating it with mode 0600 (0660 in
// a group root) if it is missing.
func (d *Dir) OpenMutex() (m *Mutex, err error) {
	err = d.inRoot(true, func(r at) error {
		fd, err := r.create(MutexName, unix.O_RDWR)
		if err != nil {
			return r.openErr("open", MutexName, err)
		}
		if err := regular(fd, r.join(MutexName)); err != nil {
			unix.Close(fd)
			return err
		}
		m = &Mutex{f: os.NewFile(uintptr(fd), r.join(MutexName))}
		return nil
	})
	return m, err
}

// regular refuses an open file of the root that is not a regular file:
// a FIFO or a device read as one fails as "illegal seek", or reads what
// someone writes into it.
func regular(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &UnsafePathError{Path: path, Reason: "is not a regular file (" + kind(uint32(st.Mode)) + ")"}
	}
	return nil
}

// Lock takes the mutex, waiting up to wait (and while ctx lasts) with
// short, jittered polls of at most maxPoll: a writer holds the mutex for
// about one commit, and a long sleep lets the same process win again and
// again. ErrBusy when wait runs out.
func (m *Mutex) Lock(ctx context.Context, wait, maxPoll time.Duration) (unlock func(), err error) {
	unlock, err = Flock(ctx, int(m.f.Fd()), wait, maxPoll)
	if err != nil && !errors.Is(err, ErrBusy) && ctx.Err() == nil {
		return nil, fmt.Errorf("writer mutex: %w", err)
	}
	return unlock, err
}

// Flock takes an exclusive flock(2) of fd as Mutex.Lock does: polls of
// at most maxPoll, up to wait (no limit when wait is negative) and while ctx
// lasts, which a blocking flock would not heed. ErrBusy when wait runs out.
func Flock(ctx context.Context, fd int, wait, maxPoll time.Duration) (unlock func(), err error) {
	return flock(ctx, fd, unix.LOCK_EX, wait, maxPoll)
}

// FlockShared is Flock for a shared flock(2) (a reader's).
func FlockShared(ctx context.Context, fd int, wait, maxPoll time.Duration) (unlock func(), err error) {
	return flock(ctx, fd, unix.LOCK_SH, wait, maxPoll)
}

func flock(ctx context.Context, fd, how int, wait, maxPoll time.Duration) (unlock func(), err error) {
	deadline := time.Now().Add(wait)
	retry := backoff.Backoff{Min: 50 * time.Microsecond, Max: maxPoll, Jitter: true}
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(fd, unix.LOCK_UN) }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return nil, err
		}
		if wait >= 0 && time.Now().After(deadline) {
			return nil, ErrBusy
		}
		if err := retry.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// Marker is the ledger id the file records ("" when it records none).
func (m *Mutex) Marker() (string, error) {
	b, err := readStart(m.f, 256)
	return strings.TrimSpace(string(b)), err
}

// SetMarker records id, durably. Only under the mutex.
func (m *Mutex) SetMarker(id string) error {
	if err := m.f.Truncate(0); err != nil {
		return fmt.Errorf("%s: %w", m.f.Name(), err)
	}
	if _, err := m.f.WriteAt([]byte(id+"\n"), 0); err != nil {
		return fmt.Errorf("%s: %w", m.f.Name(), err)
	}
	return m.f.Sync()
}

// Close closes the file, which drops the flock.
func (m *Mutex) Close() error { return m.f.Close() }

// Marker is Mutex.Marker for a reader, which does not create the file.
func (d *Dir) Marker() (string, error) {
	var b []byte
	err := d.inRoot(false, func(r at) (err error) { b, _, err = r.readStart(MutexName, 256); return err })
	return strings.TrimSpace(string(b)), err
}

// readStart reads at most n bytes from the start of f.
func readStart(f *os.File, n int) ([]byte, error) {
	b := make([]byte, n)
	k, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return b[:k], nil
}

// readStart reads at most n bytes from the start of name in the
// directory, never following a symlink; ok is false when it is missing.
func (d at) readStart(name string, n int) (b []byte, ok bool, err error) {
	fd, err := d.openIn(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err == unix.ENOENT {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, d.openErr("open", name, err)
	}
	f := os.NewFile(uintptr(fd), d.join(name))
	defer f.Close()
	if err := regular(fd, f.Name()); err != nil {
		return nil, false, err
	}
	b, err = readStart(f, n)
	return b, true, err
}
