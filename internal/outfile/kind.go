package outfile

import "golang.org/x/sys/unix"

// NotRegular names what a file of mode (a stat's st_mode) is when it is
// not a regular file: "a symlink", "a directory", "a FIFO", "a socket", "a
// device" or "not a regular file"; "" for a regular file. It is the one
// check of what a file we write may replace, here and in fence.WriteFile.
func NotRegular(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ""
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a regular file"
}
