package lockfile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watch wakes a waiter when a lock file changes, through inotify on the
// locks directory opened by Open (never on what its path names later);
// where inotify is unavailable it degrades to sleeping.
type Watch struct {
	fd    int
	files []string
}

// Watch watches lock's file. Close it when done.
func (d *Dir) Watch(lock string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || d.locks.fd < 0 {
		return &Watch{fd: -1}
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return &Watch{fd: -1}
	}
	mask := uint32(unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_ONLYDIR)
	if _, err := unix.InotifyAddWatch(fd, fmt.Sprintf("/proc/self/fd/%d", d.locks.fd), mask); err != nil {
		unix.Close(fd)
		return &Watch{fd: -1}
	}
	return &Watch{fd: fd, files: []string{fileName(lock)}}
}

// WatchFiles wakes a reader when one of the files named (in the root
// itself, such as the database and its write-ahead log) is created,
// written or renamed into place, through inotify on the root opened by
// Open. Where inotify is unavailable it degrades to sleeping.
func (d *Dir) WatchFiles(names ...string) *Watch {
	done, err := d.use()
	defer done()
	if err != nil || d.root.fd < 0 {
		return &Watch{fd: -1}
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return &Watch{fd: -1}
	}
	mask := uint32(unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR)
	if _, err := unix.InotifyAddWatch(fd, fmt.Sprintf("/proc/self/fd/%d", d.root.fd), mask); err != nil {
		unix.Close(fd)
		return &Watch{fd: -1}
	}
	return &Watch{fd: fd, files: slices.Clone(names)}
}

// Wait sleeps up to d, returning early when the watched file changes or ctx ends.
func (w *Watch) Wait(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	for {
		remain := time.Until(end)
		if remain <= 0 || ctx.Err() != nil {
			return
		}
		slice := min(remain, 50*time.Millisecond)
		if w.fd < 0 {
			_ = sleep(ctx, slice)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(slice/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			_ = sleep(ctx, slice)
			continue
		}
		if n > 0 && w.drain() {
			return
		}
	}
}

// drain reads pending events and reports whether one named a watched file.
func (w *Watch) drain() bool {
	var buf [4096]byte
	hit := false
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n <= 0 || err != nil {
			return hit
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			end := 0
			for end < len(name) && name[end] != 0 {
				end++
			}
			if slices.Contains(w.files, string(name[:end])) {
				hit = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// Close stops watching.
func (w *Watch) Close() { closeFD(w.fd) }
