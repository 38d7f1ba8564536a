package lockfile

import (
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// MaxSize bounds how much of a lock file is read; anything larger is not
// a lock record and counts as corrupt.
const MaxSize = 64 << 10

// State is what lies at a lock path.
type State struct {
	Exists bool
	Data   []byte // at most MaxSize+1 bytes
	Ino    uint64
	// Path, Size and Mtime describe the file to a person.
	Path  string
	Size  int64
	Mtime time.Time
}

// read returns the regular file name of the directory, without following
// a symlink; a missing file is State{}.
func (d at) read(name string) (State, error) {
	st, ok, err := d.lstat(name)
	if err != nil || !ok {
		return State{}, err
	}
	p := d.join(name)
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return State{}, &UnsafePathError{Path: p, Reason: "is a symlink"}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return State{}, &UnsafePathError{Path: p, Reason: "is not a regular file (" + kind(uint32(st.Mode)) + ")"}
	}
	fd, err := d.openIn(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err == unix.ENOENT {
		return State{}, nil
	}
	if err != nil {
		return State{}, d.openErr("open", name, err)
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return State{}, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return State{}, &UnsafePathError{Path: p, Reason: "is not a regular file"}
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxSize+1))
	if err != nil {
		return State{}, err
	}
	return State{Exists: true, Data: data, Ino: st.Ino, Path: p, Size: st.Size,
		Mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}, nil
}

// kind names what a non-regular file is, in words.
func kind(mode uint32) string {
	if t, ok := fileTypes[mode&unix.S_IFMT]; ok {
		return t.name
	}
	return "an unknown kind of file"
}

// fileTypes are the kinds of file but a regular one, by their S_IFMT
// bits: the fs.FileMode bits and a name for messages.
var fileTypes = map[uint32]struct {
	mode fs.FileMode
	name string
}{
	unix.S_IFDIR:  {fs.ModeDir, "a directory"},
	unix.S_IFLNK:  {fs.ModeSymlink, "a symlink"},
	unix.S_IFIFO:  {fs.ModeNamedPipe, "a named pipe"},
	unix.S_IFSOCK: {fs.ModeSocket, "a socket"},
	unix.S_IFCHR:  {fs.ModeDevice | fs.ModeCharDevice, "a character device"},
	unix.S_IFBLK:  {fs.ModeDevice, "a block device"},
}
