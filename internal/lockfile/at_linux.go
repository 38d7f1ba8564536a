package lockfile

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// openPath opens a directory only to reach what is in it (O_PATH: no read
// permission needed, nothing read through it).
const openPath = unix.O_PATH

// noOpenat2 is set once openat2(2) turns out to be missing (kernels
// before 5.6, or a seccomp filter that refuses it).
var noOpenat2 atomic.Bool

// openIn opens name, one component, relative to the directory. A symlink
// at name is never followed: openat2 resolves with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS, and the openat fallback passes O_NOFOLLOW (with a
// single component the two mean the same).
func (d at) openIn(name string, flags int, mode uint32) (int, error) {
	if err := d.checkName(name); err != nil {
		return -1, err
	}
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(mode)
		}
		fd, err := unix.Openat2(d.fd, name, &how)
		if err != unix.ENOSYS && err != unix.EPERM {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return unix.Openat(d.fd, name, flags, mode)
}
