package lockfile

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// at is a directory reached through a descriptor (-1: there is none), with
// its path for messages.
type at struct {
	fd   int
	path string
}

// join names a file of the directory for messages.
func (d at) join(name string) string { return filepath.Join(d.path, name) }

// reopen opens the directory itself for reading (its entries, fchmod).
func (d at) reopen() (int, error) {
	return unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// checkName refuses what is not one name in the directory.
func (d at) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &UnsafePathError{Path: d.join(name), Reason: "is not a file name in " + d.path}
	}
	if d.fd < 0 {
		return &os.PathError{Op: "open", Path: d.path, Err: os.ErrNotExist}
	}
	return nil
}

// openErr describes a failed openIn of name.
func (d at) openErr(op, name string, err error) error {
	if _, ok := err.(*UnsafePathError); ok {
		return err
	}
	if _, ok := err.(*os.PathError); ok {
		return err
	}
	if err == unix.ELOOP {
		return &UnsafePathError{Path: d.join(name), Reason: "is a symlink"}
	}
	return &os.PathError{Op: op, Path: d.join(name), Err: err}
}

// unlink removes name from the directory; a missing one is fine.
func (d at) unlink(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
}

// lstat is fstatat(2) of name without following a symlink; ok is false
// when there is nothing at name.
func (d at) lstat(name string) (st unix.Stat_t, ok bool, err error) {
	if err := d.checkName(name); err != nil {
		return st, false, err
	}
	err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return st, false, nil
	}
	if err != nil {
		return st, false, &os.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	return st, true, nil
}

// closeFD closes fd where there is one.
func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
