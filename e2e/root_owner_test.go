package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// otherUsers returns a function that runs the CLI on a root as uid with
// groups (gid: uid) from a copy of the test binary every user can run,
// and a directory (0755, owned by root) in which any user can make roots.
// Tests that use it run as root.
func otherUsers(t *testing.T) (func(uid int, groups []uint32, root string, args ...string) clitest.Result, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run lockledger as other users (runs as root in CI)")
	}
	dir, bin := binForOthers(t)
	base := filepath.Join(dir, "roots")
	if err := os.Mkdir(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o1777); err != nil { // like /tmp: anyone makes a root there
		t.Fatal(err)
	}
	return func(uid int, groups []uint32, root string, args ...string) clitest.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = clitest.Env(root, clitest.TrustDirAs(t, root, uid))
		c.Dir = "/"
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: groups}}
		return clitest.Exec(t, c)
	}, base
}

// refusedUntrusted checks a refusal of a root another user can write:
// exit 2, naming the path, the owner and the mode.
func refusedUntrusted(t *testing.T, r clitest.Result, path, owner, mode string) {
	t.Helper()
	if r.Code != 2 || !strings.Contains(r.Stderr, path+" is owned by ") || !strings.Contains(r.Stderr, owner) ||
		!strings.Contains(r.Stderr, "mode "+mode) {
		t.Fatalf("exit %d, want 2 naming %s, owner %s and mode %s\nstdout: %s\nstderr: %s", r.Code, path, owner, mode, r.Stdout, r.Stderr)
	}
}

// TestARootAnotherUserPreparedIsRefused: another user pre-creates ROOT
// (0777) with a ledger.db (0666), or a whole ledger; root's acquire exits
// 2 naming the owner and the mode, and writes nothing there. Reads of
// such a root work and warn.
func TestARootAnotherUserPreparedIsRefused(t *testing.T) {
	t.Parallel()
	as, base := otherUsers(t)
	self := strconv.Itoa(os.Getpid())
	t.Run("empty ledger.db", func(t *testing.T) {
		root := filepath.Join(base, "prepared")
		if r := as(nobody, nil, root, "--help"); r.Code != 0 {
			t.Fatalf("the other user cannot run the CLI: %s", r.Stderr)
		}
		if err := os.Mkdir(root, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "ledger.db"), nil, 0o666); err != nil {
			t.Fatal(err)
		}
		chownTree(t, root, nobody)
		before := treeListing(t, root)
		refusedUntrusted(t, clitest.Run(t, root, "acquire", "deploy", "--pid", self), root, "uid 65534", "0777")
		if after := treeListing(t, root); after != before {
			t.Fatalf("a refused acquire changed the root:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("whole ledger", func(t *testing.T) {
		root := filepath.Join(base, "ledger")
		if r := as(nobody, nil, root, "acquire", "deploy", "--pid", "1"); r.Code != 0 {
			t.Fatalf("the other user's acquire: exit %d\n%s", r.Code, r.Stderr)
		}
		if r := as(nobody, nil, root, "release", "deploy", "--force", "--yes", "--reason", "cleanup"); r.Code != 0 {
			t.Fatalf("the other user's release: exit %d\n%s", r.Code, r.Stderr)
		}
		for p, mode := range map[string]os.FileMode{root: 0o777, filepath.Join(root, "ledger.db"): 0o666} {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		before := treeListing(t, root)
		for _, args := range [][]string{{"acquire", "deploy", "--pid", self}, {"run", "deploy", "--", "true"}, {"project"}} {
			refusedUntrusted(t, clitest.Run(t, root, args...), root, "uid 65534", "0777")
		}
		if after := treeListing(t, root); after != before {
			t.Fatalf("root's refused writes changed the other user's root:\n%s\n->\n%s", before, after)
		}
		// Reads work, and say whose root it is.
		for _, args := range [][]string{{"status", "deploy"}, {"verify"}} {
			r := clitest.Run(t, root, args...)
			if r.Code != 0 || !strings.Contains(r.Stderr, root+" is owned by ") || !strings.Contains(r.Stderr, "uid 65534") {
				t.Errorf("%v of another user's root: exit %d, want 0 and a warning naming the owner\nstdout: %s\nstderr: %s",
					args, r.Code, r.Stdout, r.Stderr)
			}
		}
		if n := clitest.EventCount(t, root); n != 2 {
			t.Fatalf("the other user's ledger holds %d events, want its own 2", n)
		}
		// A root of the other user's own, not writable by others, is
		// still the other user's: root does not write there either.
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		before = treeListing(t, root)
		refusedUntrusted(t, clitest.Run(t, root, "acquire", "deploy", "--pid", self), root, "uid 65534", "0755")
		if after := treeListing(t, root); after != before {
			t.Fatalf("root's refused write changed the other user's root:\n%s\n->\n%s", before, after)
		}
	})
	t.Run("--group does not take over another user's directory", func(t *testing.T) {
		root := filepath.Join(base, "for-group")
		if err := os.Mkdir(root, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o777); err != nil {
			t.Fatal(err)
		}
		chownTree(t, root, nobody)
		refusedUntrusted(t, clitest.Run(t, root, "--group", strconv.Itoa(os.Getegid()), "acquire", "deploy", "--pid", self),
			root, "uid 65534", "0777")
		fi, err := os.Stat(root)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != os.ModeDir|0o777 || fi.Sys().(*syscall.Stat_t).Gid != nobody {
			t.Fatalf("the refused --group changed the directory: %v", fi.Mode())
		}
	})
}

// TestAnOwnRootWritableByOthersIsRefused: in a root of one's own, a
// ledger.db, locks directory or root directory that other users can
// write stops every writer (exit 2, naming the path, owner and mode),
// nothing written; the same root made private again works.
func TestAnOwnRootWritableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	root := filepath.Join(t.TempDir(), "r")
	clitest.Must(t, 0, root, "acquire", "held", "--pid", self)
	owner := "uid " + strconv.Itoa(os.Geteuid())
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(root, "ledger.db"), 0o666},
		{filepath.Join(root, "ledger.db"), 0o660},
		{filepath.Join(root, "writer.flock"), 0o622},
		{filepath.Join(root, "ledger.pin"), 0o666},
		{filepath.Join(root, "ledger.pin"), 0o620},
		{filepath.Join(root, "locks"), 0o777},
		{filepath.Join(root, "locks"), 0o770},
		{root, 0o707},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
		before := treeListing(t, root)
		for _, args := range [][]string{{"acquire", "new", "--pid", self}, {"release", "held", "--force", "--yes", "--reason", "cleanup"}} {
			r := clitest.Run(t, root, args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, c.path+" is owned by ") || !strings.Contains(r.Stderr, owner) ||
				!strings.Contains(r.Stderr, "mode 0"+strconv.FormatUint(uint64(c.mode), 8)) {
				t.Errorf("%v with %s mode %o: exit %d, want 2 naming the path, %s and the mode\nstderr: %s",
					args, c.path, c.mode, r.Code, owner, r.Stderr)
			}
		}
		if after := treeListing(t, root); after != before {
			t.Fatalf("a refused write changed the root:\n%s\n->\n%s", before, after)
		}
		if err := os.Chmod(c.path, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	clitest.Must(t, 0, root, "acquire", "new", "--pid", self)
	clitest.Must(t, 0, root, "release", "held", "--force", "--yes", "--reason", "cleanup")
	clitest.Must(t, 0, root, "verify")
}

// TestAGroupRootTrustsItsMembersOnly: a root made with --group is written
// by its members, whoever created each file; root, not in the group,
// writes to it only when it asks for that group; a file in it writable
// by every user stops its members too.
func TestAGroupRootTrustsItsMembersOnly(t *testing.T) {
	t.Parallel()
	as, base := otherUsers(t)
	team := []uint32{teamGID}
	root := filepath.Join(base, "team")
	must := func(uid int, args ...string) {
		t.Helper()
		if r := as(uid, team, root, args...); r.Code != 0 {
			t.Fatalf("uid %d: %v: exit %d\n%s", uid, args, r.Code, r.Stderr)
		}
	}
	must(aliceUID, "--group", strconv.Itoa(teamGID), "acquire", "deploy", "--pid", "1")
	must(bobUID, "acquire", "migrate", "--pid", "1")
	must(aliceUID, "release", "migrate", "--force", "--yes", "--reason", "cleanup")
	must(bobUID, "release", "deploy", "--force", "--yes", "--reason", "cleanup")

	refusedUntrusted(t, clitest.Run(t, root, "acquire", "x", "--pid", "1"), root, "uid "+strconv.Itoa(aliceUID), "2770")
	clitest.Must(t, 0, root, "--group", strconv.Itoa(teamGID), "acquire", "x", "--pid", "1")

	db := filepath.Join(root, "ledger.db")
	if err := os.Chmod(db, 0o666); err != nil {
		t.Fatal(err)
	}
	if r := as(bobUID, team, root, "acquire", "y", "--pid", "1"); r.Code != 2 || !strings.Contains(r.Stderr, db+" is owned by") ||
		!strings.Contains(r.Stderr, "mode 0666") {
		t.Fatalf("a member's acquire with a world-writable ledger.db: exit %d, want 2 naming it\n%s", r.Code, r.Stderr)
	}
	if err := os.Chmod(db, 0o660); err != nil {
		t.Fatal(err)
	}
	must(bobUID, "acquire", "y", "--pid", "1")
	must(aliceUID, "verify")
}

// TestAGroupRootPreparedByHandNeedsItsKey: an administrator prepares a
// group root by hand (mkdir, chgrp, chmod 2770) in a directory the
// members cannot write, so its group key cannot be made there by them: a
// member's first write exits 2 naming --root, the key's path and what to
// run, not "root writable by another user" (nothing here is another
// user's), and makes nothing; once the administrator has made the key as
// it says, the member writes.
func TestAGroupRootPreparedByHandNeedsItsKey(t *testing.T) {
	t.Parallel()
	as, base := otherUsers(t)
	srv := filepath.Join(base, "srv")
	root := filepath.Join(srv, "locks")
	for _, d := range []string{srv, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(root, 0, teamGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(srv, ".locks.signing.key")
	r := as(aliceUID, []uint32{teamGID}, root, "acquire", "deploy", "--pid", "1")
	if r.Code != 2 || !strings.Contains(r.Stderr, `--root "`+root+`"`) || !strings.Contains(r.Stderr, "signing key cannot be read or created at "+key) ||
		strings.Contains(r.Stderr, "writable by another user") {
		t.Fatalf("a member's first write to a group root whose key it cannot make: exit %d, want 2 naming --root and the key, not a root others can write\n%s",
			r.Code, r.Stderr)
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Fatalf("the refused write left %v in the root (%v)", entries, err)
	}
	clitest.Must(t, 0, root, "keygen", "--name", "ops", "-o", key)
	if err := os.Chown(key, 0, teamGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	if r := as(aliceUID, []uint32{teamGID}, root, "acquire", "deploy", "--pid", "1"); r.Code != 0 {
		t.Fatalf("the member's write once the key is made: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestAPostgresRootWritableByOthersIsRefused: with the ledger in
// PostgreSQL the root holds this host's lock files, and a locks directory
// (or root) that other users can write is refused the same way, before
// the database is reached (here there is none to reach).
func TestAPostgresRootWritableByOthersIsRefused(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "r")
	if err := os.MkdirAll(filepath.Join(root, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(root, "locks")
	if err := os.Chmod(locks, 0o777); err != nil {
		t.Fatal(err)
	}
	before := treeListing(t, root)
	r := clitest.Run(t, root, "--database", "postgres://lockledger@127.0.0.1:1/none?connect_timeout=1", "acquire", "deploy", "--pid", "1")
	if r.Code != 2 || !strings.Contains(r.Stderr, locks+" is owned by ") || !strings.Contains(r.Stderr, "uid "+strconv.Itoa(os.Geteuid())) ||
		!strings.Contains(r.Stderr, "mode 0777") {
		t.Fatalf("exit %d, want 2 naming %s, its owner and mode 0777\nstderr: %s", r.Code, locks, r.Stderr)
	}
	if after := treeListing(t, root); after != before {
		t.Fatalf("a refused acquire changed the root:\n%s\n->\n%s", before, after)
	}
}
