package lockfile

// The files of the root beside the locks directory: ledger.db (which
// SQLite opens by its path once it exists) and its -wal and -shm.

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// CreateFile creates an empty file name in the root with mode 0600 (0660
// in a group root) unless it exists, so that a program that opens it
// later (SQLite, whose -wal and -shm files copy its mode) opens a file
// whose mode was right from the start. Anything but a regular file there
// is refused.
func (d *Dir) CreateFile(name string) error {
	return d.inRoot(true, func(r at) error {
		fd, err := r.create(name, unix.O_WRONLY|unix.O_EXCL)
		if err == unix.EEXIST {
			st, ok, err := r.lstat(name)
			if err != nil || !ok {
				return err
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				return &UnsafePathError{Path: r.join(name), Reason: "is not a regular file"}
			}
			return nil
		}
		if err != nil {
			return r.openErr("create", name, err)
		}
		return unix.Close(fd)
	})
}

// Lstat is os.Lstat of name in the root, through the root's descriptor: a
// missing root or name fails with an error matching fs.ErrNotExist.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := d.inRoot(false, func(r at) error {
		st, ok, err := r.lstat(name)
		if ok {
			fi = fileInfo{name: name, st: st}
		}
		return err
	})
	if fi == nil && err == nil {
		err = &os.PathError{Op: "lstat", Path: d.root.join(name), Err: fs.ErrNotExist}
	}
	return fi, err
}

// ReadHead returns the first n bytes of name in the root (fewer where it
// is shorter), never following a symlink.
func (d *Dir) ReadHead(name string, n int) (b []byte, err error) {
	err = d.inRoot(true, func(r at) error {
		var ok bool
		if b, ok, err = r.readStart(name, n); err == nil && !ok {
			err = r.openErr("open", name, unix.ENOENT)
		}
		return err
	})
	return b, err
}

// fileInfo is fs.FileInfo from fstatat(2).
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.st.Size }
func (fi fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Sec, fi.st.Mtim.Nsec) }
func (fi fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi fileInfo) Sys() any           { return &fi.st }

func (fi fileInfo) Mode() fs.FileMode {
	mode := uint32(fi.st.Mode)
	m := fs.FileMode(mode&0o777) | fileTypes[mode&unix.S_IFMT].mode
	for bit, fm := range map[uint32]fs.FileMode{unix.S_ISUID: fs.ModeSetuid, unix.S_ISGID: fs.ModeSetgid, unix.S_ISVTX: fs.ModeSticky} {
		if mode&bit != 0 {
			m |= fm
		}
	}
	return m
}
