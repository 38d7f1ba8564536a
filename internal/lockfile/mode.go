package lockfile

// Group roots: one root for a team.
//
// By default a root is private to the user who created it: directories
// 0700, files 0600. A group root has the root and the locks
// directory 2770 (setgid, so every file created in them belongs to the
// group whoever creates it), ledger.db, writer.flock, lock files and
// journals 0660. What records the choice is the root's own mode: a root
// directory that is setgid and group-writable is shared, and every later
// open, by any member of the group, creates what it creates there with the
// group modes. The modes are set explicitly, whatever the umask.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Modes of what lockledger creates in a private and in a shared directory.
const (
	PrivateDirMode  = 0o700
	PrivateFileMode = 0o600
	GroupDirMode    = 0o2770 // setgid
	GroupFileMode   = 0o660
)

// GroupMode reports whether a directory of mode (st_mode) is a group root's.
func GroupMode(mode uint32) bool {
	return mode&unix.S_IFMT == unix.S_IFDIR && mode&unix.S_ISGID != 0 && mode&0o070 == 0o070
}

// isGroupDir reports whether the directory is isGroupDir with its group.
func (d at) isGroupDir() bool {
	var st unix.Stat_t
	return d.fd >= 0 && unix.Fstat(d.fd, &st) == nil && GroupMode(uint32(st.Mode))
}

// fileMode is the mode of a file created in the directory.
func (d at) fileMode() uint32 {
	if d.isGroupDir() {
		return GroupFileMode
	}
	return PrivateFileMode
}

// create opens name in the directory with O_CREAT and flags, mode 0600
// (0660 in a group directory) exactly. A file it made (O_EXCL) whose
// mode cannot be set is removed.
func (d at) create(name string, flags int) (int, error) {
	mode := d.fileMode()
	fd, err := d.openIn(name, flags|unix.O_CREAT, mode)
	if err != nil {
		return -1, err
	}
	if err := fixMode(fd, mode); err != nil {
		unix.Close(fd)
		if flags&unix.O_EXCL != 0 {
			_ = d.unlink(name)
		}
		return -1, &os.PathError{Op: "chmod", Path: d.join(name), Err: err}
	}
	return fd, nil
}

// fixMode gives a file just created with mode its exact mode (the umask
// may have taken the group's bits), where it is the caller's.
func fixMode(fd int, mode uint32) error {
	if mode == PrivateFileMode {
		return nil // the umask only ever removes bits, and 0600 has none it takes
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if uint32(st.Mode)&0o7777 == mode || int(st.Uid) != os.Geteuid() {
		return nil
	}
	return unix.Fchmod(fd, mode)
}

// InUseError: a root asked to be a group root already holds files
// and is not a group root of that group. Of is the group it is a group
// root of, -1 when it is none.
type InUseError struct {
	Root string
	GID  int
	Of   int
}

func (e *InUseError) Error() string {
	if e.Of >= 0 {
		return fmt.Sprintf("%s is already a group root of group %d, not of group %d", e.Root, e.Of, e.GID)
	}
	return fmt.Sprintf("%s already holds files and is not a group root of group %d", e.Root, e.GID)
}

// MakeGroupRoot makes the directory root a group root of gid: at once where
// it is already, or where created says it was just made or it is empty;
// any other root fails with *InUseError, and a directory of another user
// with *UntrustedError. The directory is opened once,
// without following a symlink, and changed through that descriptor.
func MakeGroupRoot(root string, gid int, created bool) error {
	f, err := openRootDir(root)
	if err != nil {
		return err
	}
	defer f.Close()
	already, err := groupRootVerdict(f, root, gid, created)
	if err != nil || already {
		return err
	}
	fd := int(f.Fd())
	if err := unix.Fchown(fd, -1, gid); err != nil {
		return fmt.Errorf("make group root of group %d: %w", gid, &os.PathError{Op: "chown", Path: root, Err: err})
	}
	if err := unix.Fchmod(fd, GroupDirMode); err != nil {
		return fmt.Errorf("make group root: %w", &os.PathError{Op: "chmod", Path: root, Err: err})
	}
	return nil
}

// CheckGroupRoot is MakeGroupRoot's verdict on an existing root, changing
// nothing: nil where root does not exist yet, is a group root of gid, or
// is an empty directory of the caller's that MakeGroupRoot would make one.
// A writer asks before its open makes anything (the group's signing key
// beside the root), so that a --group refused leaves nothing behind.
func CheckGroupRoot(root string, gid int) error {
	f, err := openRootDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = groupRootVerdict(f, root, gid, false)
	return err
}

// openRootDir opens the directory root without following a symlink.
func openRootDir(root string) (*os.File, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return nil, &UnsafePathError{Path: root, Reason: "is not a directory"}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return os.NewFile(uintptr(fd), root), nil
}

// groupRootVerdict is whether the directory f (root) is a group root of gid
// already, or else why it may not be made one (see MakeGroupRoot); false
// and nil when it may.
func groupRootVerdict(f *os.File, root string, gid int, created bool) (already bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	isGroup := GroupMode(uint32(st.Mode))
	if isGroup && int(st.Gid) == gid {
		return true, nil
	}
	if isGroup {
		return false, &InUseError{Root: root, GID: gid, Of: int(st.Gid)}
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return false, untrusted(root, st, euid, "it belongs to another user, and --group makes only the caller's own directory a group root")
	}
	if !created {
		names, err := f.Readdirnames(1)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, &os.PathError{Op: "readdir", Path: root, Err: err}
		}
		if len(names) > 0 {
			return false, &InUseError{Root: root, GID: gid, Of: -1}
		}
	}
	return false, nil
}

// MkdirReachable creates dir and its missing parents with mode 0755 (not
// left to the umask): the group's members reach the root through them.
// An existing dir is its owner's to open up, and is left as it is.
func MkdirReachable(dir string) error {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirReachable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(dir, 0o755)
}
