package lockfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Watch wakes a waiter when a lock file changes, through inotify on the
// locks directory opened by Open (never on what its path names later);
// where inotify is unavailable it degrades to sleeping.
type Watch struct {
	// f is the inotify descriptor in the runtime's poller (nil: sleeping),
	// so that a waiter whose ctx ends wakes at once rather than at its
	// next poll: a lease joins its watch on every release.
	f     *os.File
	files []string
}

// Watch watches lock's file. Close it when done.
func (d *Dir) Watch(lock string) *Watch {
	return d.inotify(&d.locks, unix.IN_DELETE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_CREATE, fileName(lock))
}

// WatchFiles wakes a reader when one of the files named (in the root
// itself, such as the database and its write-ahead log) is created,
// written or renamed into place, through inotify on the root opened by
// Open. Where inotify is unavailable it degrades to sleeping.
func (d *Dir) WatchFiles(names ...string) *Watch {
	return d.inotify(&d.root, unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_CREATE|unix.IN_MOVED_TO, slices.Clone(names)...)
}

// inotify watches the events mask of names in dir, one of d's
// directories, through its descriptor; a non-blocking inotify descriptor
// goes in the runtime's poller.
func (d *Dir) inotify(dir *at, mask uint32, names ...string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || dir.fd < 0 {
		return &Watch{}
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return &Watch{}
	}
	if _, err := unix.InotifyAddWatch(fd, fmt.Sprintf("/proc/self/fd/%d", dir.fd), mask|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return &Watch{}
	}
	return &Watch{f: os.NewFile(uintptr(fd), "inotify"), files: names}
}

// Wait sleeps up to d, returning early when the watched file changes or ctx ends.
func (w *Watch) Wait(ctx context.Context, d time.Duration) {
	if ctx.Err() != nil || d <= 0 {
		return
	}
	if w.f == nil {
		_ = backoff.Sleep(ctx, d)
		return
	}
	end := time.Now().Add(d)
	if w.f.SetReadDeadline(end) != nil {
		_ = backoff.Sleep(ctx, d)
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(time.Now()) })
	defer stop()
	var buf [4096]byte
	for ctx.Err() == nil && time.Now().Before(end) {
		n, err := w.f.Read(buf[:])
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			_ = backoff.Sleep(ctx, time.Until(end))
			return
		}
		if w.names(buf[:n]) {
			return
		}
	}
}

// names reports whether the inotify events in buf name a watched file.
func (w *Watch) names(buf []byte) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name, _, _ := bytes.Cut(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], []byte{0})
		if slices.Contains(w.files, string(name)) {
			return true
		}
		off += unix.SizeofInotifyEvent + int(ev.Len)
	}
	return false
}

// Close stops watching.
func (w *Watch) Close() {
	if w.f != nil {
		_ = w.f.Close()
	}
}
