package ledger

// A root shared by a team.
//
// By default a root is private to the user who created it: directories
// 0700, files 0600. WithGroup creates the root shared with one group
// instead: the root and the locks directory 2770 (setgid, so every file
// created in them belongs to the group whoever creates it), ledger.db,
// writer.flock, lock files and journals 0660 (SQLite gives ledger.db-wal
// and -shm the mode of ledger.db). What records the choice is the root's
// own mode: a root directory that is setgid and group-writable is shared,
// and every later open, with or without WithGroup and by any member of the
// group, creates what it creates there with the group modes. An
// administrator may equally prepare the root by hand (mkdir, chgrp,
// chmod 2770). The modes are set explicitly, whatever the umask.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
)

// Modes of what lockledger creates in a private and in a shared directory.
const (
	privateDirMode  = 0o700
	privateFileMode = 0o600
	sharedDirMode   = 0o770 | fs.ModeSetgid
	sharedFileMode  = 0o660
)

// WithGroup creates the root shared with group gid (see share.go): where
// the root does not exist yet, or is an empty directory. A root already
// shared with gid is opened as it is; any other existing root is refused
// with an events.Invalid error naming --group.
func WithGroup(gid int) Option {
	return func(c *config) error {
		if gid < 0 {
			return events.Invalid("--group", strconv.Itoa(gid), "must be a group id of 0 or more")
		}
		c.group = &gid
		return nil
	}
}

// isShared reports whether fi is a directory shared with its group.
func isShared(fi fs.FileInfo) bool {
	return fi.IsDir() && fi.Mode()&fs.ModeSetgid != 0 && fi.Mode().Perm()&0o070 == 0o070
}

// sharedDir reports whether the directory dir is shared with its group.
func sharedDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && isShared(fi)
}

// fileModeIn is the mode of a file created in dir.
func fileModeIn(dir string) uint32 {
	if sharedDir(dir) {
		return sharedFileMode
	}
	return privateFileMode
}

// fixFileMode gives a file just created with mode its exact mode (the
// umask may have taken the group's bits), where it is the caller's.
func fixFileMode(fd int, mode uint32) error {
	if mode == privateFileMode {
		return nil // the umask only ever removes bits, and 0600 has none it takes
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&0o7777 == mode || int(st.Uid) != os.Geteuid() {
		return nil
	}
	return unix.Fchmod(fd, mode)
}

// shareRoot makes root, which ensureRoot found or created, shared with
// group gid, where that is allowed (see WithGroup).
func shareRoot(root string, gid int, created bool) error {
	fi, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("ledger: root: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if isShared(fi) && st != nil && int(st.Gid) == gid {
		return nil
	}
	if !created {
		entries, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("ledger: root: %w", err)
		}
		if len(entries) > 0 {
			return events.Invalid("--group", strconv.Itoa(gid), fmt.Sprintf(
				"applies when a root is created, and %s already holds files and is not shared with that group (to share it: chgrp -R GROUP ROOT, chmod 2770 on ROOT and ROOT/locks, 0660 on the files)", root))
		}
	}
	if err := os.Lchown(root, -1, gid); err != nil {
		return fmt.Errorf("ledger: share root with group %d: %w", gid, err)
	}
	if err := os.Chmod(root, sharedDirMode); err != nil {
		return fmt.Errorf("ledger: share root: %w", err)
	}
	return nil
}

// mkdirIn creates dir with the mode its parent calls for (shared or
// private); it reports an existing dir with fs.ErrExist.
func mkdirIn(dir string) error {
	if err := os.Mkdir(dir, privateDirMode); err != nil {
		return err
	}
	if sharedDir(filepath.Dir(dir)) {
		// setgid is set explicitly: mkdir(2) may drop it, and the umask
		// takes the group's bits.
		if err := os.Chmod(dir, sharedDirMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// mkdirReachable creates dir and its missing parents with mode 0755 (not
// left to the umask): the group's members reach the root through them.
func mkdirReachable(dir string) error {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // an existing dir is its owner's to open up; ensureRoot reports the rest
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirReachable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(dir, 0o755)
}
