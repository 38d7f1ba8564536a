package lockfile

// Who may have written a root.
//
// Whoever can write ROOT, ROOT/locks, the database or writer.flock can
// rewrite the ledger's history and hold its locks, so a writer checks
// them (fstat of the descriptors opened once, fstatat relative to them
// for the files) before it writes anything there:
//
//   - In a private root every one of them belongs to the caller (or to
//     root, who can write anything anyway) and is writable by its owner
//     only.
//   - A group root (ROOT setgid and group-writable, see mode.go) is
//     trusted where the caller owns ROOT (or root does), is a member of
//     its group, or asked for that group (--group). Its files may then
//     belong to any member, but each one belongs to the root's group (or
//     to the caller, or root), and none is writable by every user.

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/proc"
)

// ErrUntrusted: a root, or a file in it, that another user can write.
// *UntrustedError wraps it.
var ErrUntrusted = errors.New("root writable by another user")

// UntrustedError names a directory or file of a root that a user other
// than the caller (and root) can write, with its owner and mode.
type UntrustedError struct {
	Path   string
	UID    int
	User   string // "" where the uid has no name
	GID    int
	Group  string // "" where the gid has no name
	Mode   uint32 // permission bits with setuid, setgid and sticky
	Reason string
	// Caller is the effective uid that checked, CallerName its name.
	Caller     int
	CallerName string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s; refusing to write to a root that another user can write (it could rewrite the ledger's history and hold its locks). "+
		"Use a root owned by %s that only it can write (chown, chmod go-w), or a group root made with --group",
		e.What(), named(e.CallerName, "uid", e.Caller))
}

// What names the path, its owner, group and mode, and why another user
// can write it.
func (e *UntrustedError) What() string {
	return fmt.Sprintf("%s is owned by %s, group %s, mode %04o: %s",
		e.Path, named(e.User, "uid", e.UID), named(e.Group, "gid", e.GID), e.Mode, e.Reason)
}

func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// named is "name (uid N)", or "uid N" where there is no name.
func named(name, kind string, id int) string {
	if name == "" {
		return fmt.Sprintf("%s %d", kind, id)
	}
	return fmt.Sprintf("%s (%s %d)", name, kind, id)
}

// trust is what a check accepts: the caller, root, and in a trusted group
// root the root's group.
type trust struct {
	uid   int
	group int // -1: no group is trusted
}

// CheckOwners checks, before a write, that no user but the caller (and
// root, and the members of a group root's group) can write the root:
// ROOT, ROOT/locks, writer.flock and ledger.pin (whoever could write the
// pin could stop every writer, or blind it to a restored ledger) where
// they exist, and each of names (files in the root, such as the database)
// where it exists. asked is the group the caller asked for (--group), nil
// for none. The first entry that fails is returned as an *UntrustedError.
func (d *Dir) CheckOwners(asked *int, names ...string) error {
	return d.inRoot(false, func(r at) error {
		var st unix.Stat_t
		if err := unix.Fstat(r.fd, &st); err != nil {
			return &os.PathError{Op: "fstat", Path: r.path, Err: err}
		}
		tr := trust{uid: os.Geteuid(), group: -1}
		if GroupMode(uint32(st.Mode)) {
			if !tr.owns(st) && !memberOf(int(st.Gid), asked) {
				return untrusted(r.path, st, tr.uid, "it is a group root of a group the caller is not in (nor asked for with --group)")
			}
			tr.group = int(st.Gid)
		}
		if err := tr.check(r.path, st); err != nil {
			return err
		}
		if d.locks.fd >= 0 {
			if err := unix.Fstat(d.locks.fd, &st); err != nil {
				return &os.PathError{Op: "fstat", Path: d.locks.path, Err: err}
			}
			if err := tr.check(d.locks.path, st); err != nil {
				return err
			}
		}
		for _, name := range append([]string{MutexName, PinName, PinLockName}, names...) {
			st, ok, err := r.lstat(name)
			if err != nil {
				return err
			}
			if !ok || st.Mode&unix.S_IFMT == unix.S_IFLNK {
				continue // a symlink is refused where it is opened, whoever owns it
			}
			if err := tr.check(r.join(name), st); err != nil {
				return err
			}
		}
		return nil
	})
}

// owns reports whether st belongs to the caller or to root.
func (tr trust) owns(st unix.Stat_t) bool {
	return int(st.Uid) == tr.uid || st.Uid == 0
}

// check says why st, at path, may be written by a user tr does not trust;
// nil when it may not.
func (tr trust) check(path string, st unix.Stat_t) error {
	grouped := tr.group >= 0 && int(st.Gid) == tr.group
	switch {
	case st.Mode&0o002 != 0:
		return untrusted(path, st, tr.uid, "it is writable by every user")
	case !tr.owns(st) && !grouped:
		return untrusted(path, st, tr.uid, "it belongs to another user")
	case st.Mode&0o020 != 0 && !grouped && tr.group >= 0:
		return untrusted(path, st, tr.uid, "it is writable by a group that is not the group root's")
	case st.Mode&0o020 != 0 && !grouped:
		return untrusted(path, st, tr.uid, "it is writable by its group, and the root is not a group root")
	}
	return nil
}

// memberOf reports whether the caller is in group gid, or asked for it.
func memberOf(gid int, asked *int) bool {
	return asked != nil && *asked == gid || Member(gid)
}

// Member reports whether this process is in group gid: its group, or one
// of its supplementary groups.
func Member(gid int) bool {
	if os.Getegid() == gid {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, gid)
}

// Unreadable is err, this user's refusal to read the root dir (EACCES on
// a file in it), with the root's owner, group and mode and what a root
// several users share is (at a group root of a group this user is not in,
// Outsider's words); err itself where dir cannot be looked at.
func Unreadable(dir string, err error) error {
	if why := Outsider(dir); why != "" {
		return fmt.Errorf("%s %s (%w)", dir, why, err)
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return err
	}
	u := untrusted(dir, st, os.Geteuid(), named(proc.UserName(os.Geteuid()), "uid", os.Geteuid())+" cannot read it")
	return fmt.Errorf("%s (%w); a root several users share is a group root (lockledger --root ROOT --group GROUP init, by a member; see Group roots in docs/cli.md)", u.What(), err)
}

// Outsider says why this process may not use dir, a group root of a group
// it is not in: the kernel lets the group's members alone into a 2770
// root, and whatever else went wrong first (its key, writer.flock) says
// less. It names the group and how to join it, or that the group is gone
// (groupdel) where its gid has no name. "" where dir is no group root, is
// one of this process's groups, or is the caller's (whom the kernel lets in
// as its owner, and CheckOwners trusts), or the caller is root.
func Outsider(dir string) string {
	var st unix.Stat_t
	euid := os.Geteuid()
	if euid == 0 || unix.Stat(dir, &st) != nil || !GroupMode(uint32(st.Mode)) || int(st.Uid) == euid || Member(int(st.Gid)) {
		return ""
	}
	u := untrusted(dir, st, euid, "")
	who := named(u.CallerName, "uid", u.Caller)
	if u.Group == "" {
		return fmt.Sprintf("is a group root of gid %d, a group with no name here (deleted with groupdel?), which %s is not in: only its members (and root) use it; "+
			"make the group again with that gid (groupadd -g %d NAME) and its members with it, or have the administrator chgrp -R the root to a group that exists", u.GID, who, u.GID)
	}
	user := u.CallerName
	if user == "" {
		user = "USER"
	}
	return fmt.Sprintf("is a group root of group %s, which %s is not in: only its members (and root) use it; "+
		"ask for membership (usermod -aG %s %s), then log in again", named(u.Group, "gid", u.GID), who, u.Group, user)
}

// GroupText names group gid in a message: "name (gid N)", or N alone
// where the gid has no name.
func GroupText(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return fmt.Sprintf("%s (gid %d)", g.Name, gid)
	}
	return strconv.Itoa(gid)
}

// untrusted is the *UntrustedError of st at path.
func untrusted(path string, st unix.Stat_t, caller int, reason string) *UntrustedError {
	e := &UntrustedError{Path: path, UID: int(st.Uid), User: proc.UserName(int(st.Uid)), GID: int(st.Gid),
		Mode: uint32(st.Mode) & 0o7777, Reason: reason, Caller: caller, CallerName: proc.UserName(caller)}
	if g, err := user.LookupGroupId(strconv.Itoa(e.GID)); err == nil {
		e.Group = g.Name
	}
	return e
}
