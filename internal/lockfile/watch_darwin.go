package lockfile

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Watch wakes a waiter when the locks directory changes, through a kqueue
// (EVFILT_VNODE, NOTE_WRITE) on a descriptor of that directory reopened
// from the one Open made (never from its path); where that fails it
// degrades to sleeping. A directory's vnode event does not name the entry
// that changed, so any lock placed, replaced or removed in the directory
// wakes every waiter on it: the waiter looks again and, when its own lock
// is still taken, waits on.
type Watch struct {
	kq  int
	dir int
}

// Watch watches lock's file (see the type). Close it when done.
func (d *Dir) Watch(lock string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || d.locks.fd < 0 {
		return &Watch{kq: -1, dir: -1}
	}
	dir, err := d.locks.reopen()
	if err != nil {
		return &Watch{kq: -1, dir: -1}
	}
	kq, err := unix.Kqueue()
	if err != nil {
		unix.Close(dir)
		return &Watch{kq: -1, dir: -1}
	}
	unix.CloseOnExec(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, dir, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
	ev.Fflags = unix.NOTE_WRITE
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		unix.Close(dir)
		return &Watch{kq: -1, dir: -1}
	}
	return &Watch{kq: kq, dir: dir}
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
			_ = sleep(ctx, slice)
			continue
		}
		ts := unix.NsecToTimespec(int64(slice))
		var got [1]unix.Kevent_t
		n, err := unix.Kevent(w.kq, nil, got[:], &ts)
		if err != nil && !errors.Is(err, unix.EINTR) {
			_ = sleep(ctx, slice)
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
	closeFD(w.dir)
}
