package lockfile

import "golang.org/x/sys/unix"

// openPath opens a directory to reach what is in it. macOS has no O_PATH:
// the directory is opened for reading, which needs read permission on it.
const openPath = unix.O_RDONLY

// openIn opens name, one component, relative to the directory, never
// following a symlink at name (O_NOFOLLOW: ELOOP). macOS has no openat2;
// what RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS guarantees on Linux holds here
// because checkName admits one component only (no "/", no ".."): the walk
// beneath the directory is this one step, with O_NOFOLLOW on it.
func (d at) openIn(name string, flags int, mode uint32) (int, error) {
	if err := d.checkName(name); err != nil {
		return -1, err
	}
	return unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
}
