package ledger

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/lockfile"
)

// WithGroup creates the root as a group root of gid (the modes are
// internal/lockfile's): where the root does not exist yet, or is an empty
// directory. A group root of gid is opened as it is; any other
// existing root is refused with an events.Invalid error naming --group. A
// root directory that is setgid and group-writable is shared, and every
// later open, with or without WithGroup and by any member of the group,
// creates what it creates there with the group modes; an administrator may
// equally prepare the root by hand (mkdir, chgrp, chmod 2770). A writer
// uses a group root only where it owns it, is in its group or asked for
// that group here (ErrUntrustedRoot).
func WithGroup(gid int) Option {
	return checked(gid < 0, events.Invalid("--group", strconv.Itoa(gid), "must be a group id of 0 or more"), func(c *config) { c.group = &gid })
}

// ErrUntrustedRoot: a writer found the root, ROOT/locks, ledger.db (or
// its -wal, -shm) or writer.flock writable by another user than the
// caller (and root), outside a group root of the caller's group; nothing
// was written. *lockfile.UntrustedError, which wraps it, names the path,
// its owner and its mode.
var ErrUntrustedRoot = lockfile.ErrUntrusted

// makeGroupRoot makes root, which ensureRoot found or created, a group root of
// group gid, where that is allowed (see WithGroup).
func makeGroupRoot(root string, gid int, created bool) error {
	return groupRootError(root, gid, lockfile.MakeGroupRoot(root, gid, created))
}

// checkGroupRoot refuses, changing nothing, an existing root that
// makeGroupRoot would refuse: Open asks before it makes anything, the
// group's signing key beside the root included.
func checkGroupRoot(root string, gid int) error {
	return groupRootError(root, gid, lockfile.CheckGroupRoot(root, gid))
}

// groupRootError is err of making root a group root of gid, a root that
// is in use as another one said as bad input naming --group.
func groupRootError(root string, gid int, err error) error {
	var inUse *lockfile.InUseError
	switch {
	case errors.As(err, &inUse) && inUse.Of >= 0:
		return events.Invalid("--group", strconv.Itoa(gid), fmt.Sprintf(
			"applies when a root is created, and %s is a group root of group %s already, not of %s: leave --group out (the root's mode keeps it a group root) or name that group",
			root, lockfile.GroupText(inUse.Of), lockfile.GroupText(gid)))
	case errors.As(err, &inUse):
		return events.Invalid("--group", strconv.Itoa(gid), fmt.Sprintf(
			"applies when a root is created, and %s already holds files and is not a group root of that group (to make it one: chgrp -R GROUP ROOT, chmod 2770 on ROOT and ROOT/locks, 0660 on the files)", root))
	case err != nil:
		return fmt.Errorf("ledger: root: %w", err)
	}
	return nil
}
