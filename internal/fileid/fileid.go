// Package fileid identifies files by device and inode: the identity that
// a second name (a symlink, a bind mount, a hard link) cannot hide.
package fileid

import "golang.org/x/sys/unix"

// ID is a file's device and inode.
type ID struct{ Dev, Ino uint64 }

// Of is the ID of the file st describes.
func Of(st *unix.Stat_t) ID { return ID{Dev: uint64(st.Dev), Ino: st.Ino} }

// Dir is the ID of the directory at path (symlinks followed); ok is false
// when there is none.
func Dir(path string) (id ID, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return ID{}, false
	}
	return Of(&st), true
}
