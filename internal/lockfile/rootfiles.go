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
	done, err := d.use()
	defer done()
	if err != nil {
		return err
	}
	if err := d.rootErr(); err != nil {
		return err
	}
	fd, err := d.root.create(name, unix.O_WRONLY|unix.O_EXCL)
	if err == unix.EEXIST {
		st, ok, err := d.root.lstat(name)
		if err != nil || !ok {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return &UnsafePathError{Path: d.root.join(name), Reason: "is not a regular file"}
		}
		return nil
	}
	if err != nil {
		return d.root.openErr("create", name, err)
	}
	return unix.Close(fd)
}

// Lstat is os.Lstat of name in the root, through the root's descriptor: a
// missing root or name fails with an error matching fs.ErrNotExist.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	done, err := d.use()
	defer done()
	if err != nil {
		return nil, err
	}
	if d.root.fd < 0 {
		return nil, &os.PathError{Op: "lstat", Path: d.root.join(name), Err: fs.ErrNotExist}
	}
	st, ok, err := d.root.lstat(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &os.PathError{Op: "lstat", Path: d.root.join(name), Err: fs.ErrNotExist}
	}
	return fileInfo{name: name, st: st}, nil
}

// ReadHead returns the first n bytes of name in the root (fewer where it
// is shorter), never following a symlink.
func (d *Dir) ReadHead(name string, n int) ([]byte, error) {
	done, err := d.use()
	defer done()
	if err != nil {
		return nil, err
	}
	if err := d.rootErr(); err != nil {
		return nil, err
	}
	b, ok, err := d.root.readStart(name, n)
	if err == nil && !ok {
		err = d.root.openErr("open", name, unix.ENOENT)
	}
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
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if fi.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
