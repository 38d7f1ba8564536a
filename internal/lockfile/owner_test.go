package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// setMode sets a st_mode, 32 bits on Linux and 16 on macOS.
func setMode[T uint16 | uint32](p *T, mode uint32) { *p = T(mode) }

// TestTrustCheck: who besides the caller can write an entry, for a
// private root and a group root of gid 500.
func TestTrustCheck(t *testing.T) {
	const me, other, group = 1000, 1001, 500
	dir := func(mode uint32) uint32 { return unix.S_IFDIR | mode }
	file := func(mode uint32) uint32 { return unix.S_IFREG | mode }
	for _, c := range []struct {
		name     string
		group    int
		uid, gid uint32
		mode     uint32
		ok       bool
	}{
		{"private root, mine", -1, me, me, dir(0o700), true},
		{"private root, readable by all", -1, me, me, dir(0o755), true},
		{"root's own file", -1, 0, 0, file(0o644), true},
		{"another user's", -1, other, other, file(0o600), false},
		{"writable by every user", -1, me, me, file(0o666), false},
		{"sticky and writable by every user", -1, me, me, dir(0o1777), false},
		{"group-writable in a private root", -1, me, me, file(0o660), false},
		{"a member's file in a group root", group, other, group, file(0o660), true},
		{"a group root's directory", group, other, group, dir(0o2770), true},
		{"writable by every user in a group root", group, other, group, file(0o666), false},
		{"another group's writable file in a group root", group, me, 77, file(0o660), false},
		{"another group's user in a group root", group, other, 77, file(0o600), false},
		{"my own file of another group in a group root", group, me, 77, file(0o600), true},
	} {
		st := unix.Stat_t{Uid: c.uid, Gid: c.gid}
		setMode(&st.Mode, c.mode)
		err := trust{uid: me, group: c.group}.check("/r/x", st)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: %v does not match ErrUntrusted", c.name, err)
		}
	}
}

// TestCheckOwnersNamesTheFirstEntryOthersCanWrite: ROOT, locks/,
// writer.flock and the names given are looked at through the descriptors;
// a missing file or locks directory is nothing to check.
func TestCheckOwnersNamesTheFirstEntryOthersCanWrite(t *testing.T) {
	root := filepath.Join(t.TempDir(), "r")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.CheckOwners(nil, "db", "db-wal"); err != nil {
		t.Fatalf("an own private root with nothing in it: %v", err)
	}
	if err := d.MakeLocks(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckOwners(nil, "db", "db-wal"); err != nil {
		t.Fatalf("an own private root: %v", err)
	}
	for _, p := range []string{filepath.Join(root, "db"), filepath.Join(root, LocksName), root} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
		var ue *UntrustedError
		if err := d.CheckOwners(nil, "db", "db-wal"); !errors.As(err, &ue) || ue.Path != p || ue.Mode != 0o777 || ue.UID != os.Geteuid() {
			t.Fatalf("%s mode 0777: %v, want an *UntrustedError naming it", p, err)
		}
		if err := os.Chmod(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}
