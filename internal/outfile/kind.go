package outfile

import (
	"cmp"

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
