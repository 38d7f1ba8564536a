package lockfile

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Watch wakes a waiter when the locks directory changes, through a kqueue
// (EVFILT_VNODE, NOTE_WRITE) on a descriptor of that directory reopened
// from the one Open made (never from its path); where that fails it
// degrades to sleeping. A directory's vnode event does not name the entry
// that changed, so any lock placed, replaced or removed in the directory
// wakes every waiter on it: the waiter looks again and, when its own lock
// is still taken, waits on.
type Watch struct {
	kq  int   // -1: none, the Watch sleeps
	fds []int // the directory or the files watched
}

// Watch watches lock's file (see the type). Close it when done.
func (d *Dir) Watch(lock string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || d.locks.fd < 0 {
		return &Watch{kq: -1}
	}
	dir, err := d.locks.reopen()
	if err != nil {
		return &Watch{kq: -1}
	}
	return kqueue(unix.NOTE_WRITE, []int{dir})
}

// WatchFiles wakes a reader when one of the files named (in the root
// itself, such as the database and its write-ahead log) is written or
// extended, through a kqueue on descriptors of those files opened beneath
// the root (never following a symlink). A file missing now is not watched;
// where the kqueue fails it degrades to sleeping.
func (d *Dir) WatchFiles(names ...string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || d.root.fd < 0 {
		return &Watch{kq: -1}
	}
	var fds []int
	for _, n := range names {
		if fd, err := unix.Openat(d.root.fd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return kqueue(unix.NOTE_WRITE|unix.NOTE_EXTEND, fds)
}

// kqueue watches fds (EVFILT_VNODE) for fflags; a descriptor it cannot
// watch is closed.
func kqueue(fflags uint32, fds []int) *Watch {
	w := &Watch{kq: -1}
	kq, err := unix.Kqueue()
	if err == nil {
		unix.CloseOnExec(kq)
		w.kq = kq
	}
	for _, fd := range fds {
		var ev unix.Kevent_t
		unix.SetKevent(&ev, fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
		ev.Fflags = fflags
		if w.kq >= 0 {
			if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err == nil {
				w.fds = append(w.fds, fd)
				continue
			}
		}
		unix.Close(fd)
	}
	return w
}

// Wait sleeps up to d, returning early when the locks directory changes
// or ctx ends.
func (w *Watch) Wait(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	for {
		remain := time.Until(end)
		if remain <= 0 || ctx.Err() != nil {
			return
		}
		slice := min(remain, 50*time.Millisecond)
		if w.kq < 0 {
			_ = backoff.Sleep(ctx, slice)
			continue
		}
		ts := unix.NsecToTimespec(int64(slice))
		var got [1]unix.Kevent_t
		n, err := unix.Kevent(w.kq, nil, got[:], &ts)
		if err != nil && !errors.Is(err, unix.EINTR) {
			_ = backoff.Sleep(ctx, slice)
			continue
		}
		if n > 0 {
			return
		}
	}
}

// Close stops watching.
func (w *Watch) Close() {
	closeFD(w.kq)
	for _, fd := range w.fds {
		closeFD(fd)
	}
}
