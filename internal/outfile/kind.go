package outfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// NotRegular names what a file of mode (a stat's st_mode) is when it is
// not a regular file: "a symlink", "a directory", "a FIFO", "a socket", "a
// device" or "not a regular file"; "" for a regular file. It is the one
// check of what a file we write may replace, here and in fence.WriteFile.
func NotRegular(mode uint32) string {
	if t := mode & unix.S_IFMT; t != unix.S_IFREG {
		return cmp.Or(kinds[t], "not a regular file")
	}
	return ""
}

var kinds = map[uint32]string{unix.S_IFLNK: "a symlink", unix.S_IFDIR: "a directory", unix.S_IFIFO: "a FIFO",
	unix.S_IFSOCK: "a socket", unix.S_IFCHR: "a device", unix.S_IFBLK: "a device"}

// ErrNotRegular is wrapped by OpenRegular's refusal of a file that is not
// a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular is the one safe open of a file a command names to read (or
// append to): O_NONBLOCK, so that a FIFO planted there is refused at once
// rather than blocking the open for ever, and flag's O_NOFOLLOW where a
// symlink must not be followed. Anything but a regular file is closed and
// refused with an error wrapping ErrNotRegular that names its type.
func OpenRegular(path string, flag int, perm os.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
