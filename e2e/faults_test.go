package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/oldschema"
)

// TestFaultInvalidInputExitsTwoAndLeavesLedgerUnchanged covers the invalid
// input of every lock command: lock names, request ids, TTLs, waits, pids,
// run, steal, heartbeat and release flags, --kill-grace, --on-lost, the
// length and character rules of every free-text field, unknown commands
// and flags, and global flags. Each case must exit 2,
// name the problem on stderr, leave the event count, the head hash and the
// lock files as they were, and (for run) never start the command.
func TestFaultInvalidInputExitsTwoAndLeavesLedgerUnchanged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "held", "--pid", self).Stdout)
	marker := filepath.Join(t.TempDir(), "command-ran")
	touch := []string{"--", "touch", marker}
	run := func(args ...string) []string { return append(append([]string{"run"}, args...), touch...) }
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		args []string
		want string
	}{
		// run
		{run("job", "--ttl", "0"), "ttl"},
		{run("job", "--ttl", "1.5s"), "whole seconds"},
		{run("job", "--wait", "-1"), "--wait"},
		{run("job", "--kill-grace", "soon"), "--kill-grace"},
		{run("job", "--kill-grace", "-1s"), "--kill-grace"},
		{run("job", "--on-lost", "ignore"), "--on-lost"},
		{run("job", "--on-lost", ""), "--on-lost"},
		{run("Job"), "lock name"},
		{run("../job"), "lock name"},
		{run("job", "--request-id", "a b"), "request id"},
		{run("job", "--metadata", "novalue"), "--metadata"},
		{run("job", "--actor", "bad\x01actor"), "actor"},
		{run("job", "--actor", long(257)), "actor"},
		{run("job", "--intent", long(257)), "intent"},
		{run("job", "--intent-version", "1\n2"), "intent version"},
		{run("job", "--pid", "5"), "unknown flag"},
		{[]string{"run", "job"}, "usage"},
		{[]string{"run", "job", "-c", "touch " + marker, "touch", marker}, "-c"},
		{[]string{"run", "--", "touch", marker}, "usage"},
		{[]string{"run", "job", "--"}, "usage"},
		// steal
		{[]string{"steal", "held", "--reason", "   "}, "--reason"},
		{[]string{"steal", "Held", "--reason", "x"}, "lock name"},
		{[]string{"steal", "held", "extra", "--reason", "x"}, "exactly one lock name"},
		{[]string{"steal", "held", "--reason", "x", "--request-id", "a b"}, "request id"},
		{[]string{"steal", "held", "--reason", "x", "--metadata", "=v"}, "--metadata"},
		{[]string{"steal", "held", "--reason", long(1025)}, "reason"},
		{[]string{"steal", "held", "--reason", "bad\x1breason"}, "reason"},
		{[]string{"steal", "held", "--reason", "x", "--pid", "-3"}, "pid"},
		{[]string{"steal", "held", "--reason", "x", "--ttl", "soon"}, "--ttl"},
		{[]string{"steal", "held", "--reason", "x", "--wait", "1s"}, "unknown flag"},
		{[]string{"steal", "held", "--reason", "x", "--force"}, "unknown flag"},
		// heartbeat
		{[]string{"heartbeat", "Held", "--request-id", rid}, "lock name"},
		{[]string{"heartbeat", "held", "--request-id"}, "needs an argument"},
		{[]string{"heartbeat", "held", "other", "--request-id", rid}, "exactly one lock name"},
		{[]string{"heartbeat", "held", "--request-id", strings.Repeat("r", 129)}, "request id"},
		{[]string{"heartbeat", "held", "--request-id", rid, "--ttl", "5"}, "unknown flag"},
		// release
		{[]string{"release", "held", "--request-id", "a b"}, "request id"},
		{[]string{"release", "held", "--force", "--yes", "--reason", "cleanup", "--request-id", "bad id"}, "request id"},
		{[]string{"release", "held", "--request-id", rid, "--exit-code", "-5"}, "--exit-code"},
		{[]string{"release", "held", "--request-id", rid, "--result", ""}, "--result"},
		{[]string{"release", "held", "--request-id", rid, "--result", "failure", "--failure-step", long(257)}, "failure step"},
		{[]string{"release", "held", "--request-id", rid, "--result", "failure", "--failure-step", "a\nb"}, "failure step"},
		{[]string{"release", "held", "--request-id", rid, "--actor", "bad\nactor"}, "actor"},
		{[]string{"release", "held", "--request-id", rid, "--wait", "1s"}, "unknown flag"},
		// acquire: the free-text rules
		{[]string{"acquire", "x", "--intent", long(257)}, "intent"},
		{[]string{"acquire", "x", "--intent-version", "1\x01"}, "intent version"},
		{[]string{"acquire", "x", "--metadata", "k=" + long(1025)}, "metadata value"},
		{[]string{"acquire", "x", "--metadata", long(129) + "=v"}, "metadata key"},
		{[]string{"acquire", "x", "--metadata", "k\x07=v"}, "metadata key"},
		{[]string{"acquire", "x", "--actor", long(257)}, "actor"},
		{[]string{"acquire", "x", "--ttl", "1e3"}, "--ttl"},
		{[]string{"acquire", "x", "--ttl", "9223372036854775807"}, "--ttl"},
		{[]string{"acquire", "x", "--wait", "1,5"}, "--wait"},
		{[]string{"acquire", "x", "--pid", "12abc"}, "--pid"},
		// every command's own arguments
		{[]string{"acquire", "Deploy"}, "lock name"},
		{[]string{"acquire", "-deploy"}, ""},
		{[]string{"acquire", "deploy-"}, "lock name"},
		{[]string{"acquire", "_x"}, "lock name"},
		{[]string{"acquire", "../etc/passwd"}, "lock name"},
		{[]string{"acquire", "a/b"}, "lock name"},
		{[]string{"acquire", "has space"}, "lock name"},
		{[]string{"acquire", strings.Repeat("a", 129)}, "lock name"},
		{[]string{"acquire", ""}, "lock name"},
		{[]string{"acquire"}, "exactly one lock name"},
		{[]string{"acquire", "a", "b"}, "exactly one lock name"},
		{[]string{"acquire", "x", "--request-id", "has space"}, "request id"},
		{[]string{"acquire", "x", "--request-id", strings.Repeat("r", 129)}, "request id"},
		{[]string{"acquire", "x", "--request-id", "a/b"}, "request id"},
		{[]string{"acquire", "x", "--ttl", "0"}, "ttl"},
		{[]string{"acquire", "x", "--ttl", "-5"}, "--ttl"},
		{[]string{"acquire", "x", "--ttl", "1.5s"}, "whole seconds"},
		{[]string{"acquire", "x", "--ttl", "500ms"}, "at least 1s"},
		{[]string{"acquire", "x", "--ttl", "soon"}, "--ttl"},
		{[]string{"acquire", "x", "--ttl", "99999h"}, "ttl"},
		{[]string{"acquire", "x", "--wait", "someday"}, "--wait"},
		{[]string{"acquire", "x", "--wait", "-1s"}, "--wait"},
		{[]string{"acquire", "x", "--metadata", "novalue"}, "--metadata"},
		{[]string{"acquire", "x", "--metadata", "=v"}, "--metadata"},
		{[]string{"acquire", "x", "--metadata", "k=1", "--metadata", "k=2"}, "given twice"},
		{[]string{"acquire", "x", "--actor", "bad\nactor"}, "actor"},
		{[]string{"acquire", "x", "--pid", "-3"}, "pid"},
		{[]string{"acquire", "x", "--pid", "999999999"}, "pid"},
		{[]string{"acquire", "x", "--pid", "abc"}, "--pid"},
		{[]string{"acquire", "x", "--no-such-flag"}, "unknown flag"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"--log-level", "loud", "list"}, "--log-level"},
		{[]string{"--log-format", "xml", "list"}, "--log-format"},
		{[]string{"heartbeat", "held"}, "--request-id"},
		{[]string{"heartbeat", "held", "--request-id", "bad id"}, "request id"},
		{[]string{"release", "held"}, "--request-id"},
		{[]string{"release", "held", "--request-id", rid, "--result", "meh"}, "--result"},
		{[]string{"release", "held", "--request-id", rid, "--failure-step", "x"}, "--failure-step"},
		{[]string{"release", "held", "--request-id", rid, "--exit-code", "300"}, "--exit-code"},
		{[]string{"release", "Held", "--request-id", rid}, "lock name"},
		{[]string{"status", "UPPER"}, "lock name"},
		{[]string{"status"}, "exactly one lock name"},
		{[]string{"list", "extra"}, "no arguments"},
		{[]string{"steal", "held"}, "--reason"},
		{[]string{"steal", "held", "--reason", "x", "--active"}, "--yes"},
		{[]string{"steal", "held", "--reason", "x", "--ttl", "0"}, "ttl"},
		// global
		{[]string{"--root", "", "status", "held"}, "root"},
		{[]string{"--json=maybe", "list"}, "--json"},
		{[]string{"status", "held", "--request-id", rid}, "unknown flag"},
	}
	before := snapLedger(t, root)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel() // every case must write nothing, so they can share the root
			r := clitest.Run(t, root, c.args...)
			if r.Code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stderr, c.want) {
				t.Errorf("stderr does not name %q:\n%s", c.want, r.Stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("invalid input started the command")
			}
		})
	}
	// --json gives the same answer as an object naming the field.
	r := clitest.Must(t, 2, root, "acquire", "BAD", "--json")
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &obj); err != nil || obj["error"] != "invalid_input" || obj["field"] != "lock name" {
		t.Fatalf("--json invalid input: %v %s", err, r.Stdout)
	}
	t.Cleanup(func() {
		if after := snapLedger(t, root); after != before {
			t.Errorf("invalid input changed the ledger:\nbefore %s\n after %s", before, after)
		}
	})
}

// TestFaultLockNamesCannotTraverse: a lock name is a file name in locks/;
// names that try to leave it, hide in it or look like it are refused by
// every command with exit 2, and nothing appears anywhere on disk.
func TestFaultLockNamesCannotTraverse(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "seed", "--pid", self)
	tree := func() string {
		var b strings.Builder
		_ = filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !strings.HasPrefix(filepath.Base(p), "ledger.db") {
				b.WriteString(p + " ")
			}
			return nil
		})
		return b.String()
	}
	before, snap := tree(), snapLedger(t, root)
	names := []string{"..", "../escape", "../../escape", "x/../../escape", "/tmp/escape", `x\..\escape`, "ａ",
		"x.lock", ".hidden", "x\n", "é"}
	var cmds [][]string
	for _, n := range names {
		cmds = append(cmds, []string{"acquire", n, "--pid", self})
	}
	for _, n := range []string{"..", "../../escape"} {
		cmds = append(cmds,
			[]string{"run", n, "--", "true"},
			[]string{"steal", n, "--reason", "x", "--pid", self},
			[]string{"heartbeat", n, "--request-id", "r"},
			[]string{"release", n, "--force", "--yes", "--reason", "cleanup"},
			[]string{"status", n})
	}
	for _, args := range cmds {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			r := clitest.Run(t, root, args...)
			if r.Code != 2 || !strings.Contains(r.Stderr, "lock name") {
				t.Fatalf("exit %d, want 2 naming the lock name rule; stderr: %s", r.Code, r.Stderr)
			}
		})
	}
	t.Cleanup(func() {
		if after := tree(); after != before {
			t.Errorf("refused lock names changed the disk:\nbefore %s\n after %s", before, after)
		}
		if after := snapLedger(t, root); after != snap {
			t.Errorf("refused lock names changed the ledger: %s -> %s", snap, after)
		}
		if _, err := os.Stat("/tmp/escape.lock"); err == nil {
			t.Errorf("/tmp/escape.lock exists")
		}
	})
}

// TestFaultCorruptLedgerIsRefusedAndNotMadeWorse: a ledger.db that is not a
// database, has a destroyed header or was truncated makes every command
// fail with exit 1 and a message naming the database problem; the file is
// byte for byte what it was and no lock file appears. Damage in a page
// that the write path never reads cannot be seen without a full scan (which
// every acquire cannot afford): verify finds it and exits 1.
func TestFaultCorruptLedgerIsRefusedAndNotMadeWorse(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	golden := t.TempDir()
	pad := strings.Repeat("p", 900)
	for i := 0; i < 8; i++ {
		clitest.Must(t, 0, golden, "acquire", "l"+strconv.Itoa(i), "--pid", self, "--metadata", "pad="+pad,
			"--metadata", "pad2="+pad)
	}
	// The CLI leaves its WAL for the next process; fold it into ledger.db so
	// that the file alone is the whole ledger, then drop the WAL files.
	checkpoint(t, golden)
	db, err := os.ReadFile(filepath.Join(golden, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	cases := []struct {
		name   string
		damage func([]byte) []byte
		want   []string // one of these must be on stderr
	}{
		{"random bytes", func([]byte) []byte { return random(64 << 10) }, []string{"not a database"}},
		{"text file", func([]byte) []byte { return []byte("this is not a ledger\n") }, []string{"not a database"}},
		{"zeroed header", func(b []byte) []byte { copy(b, make([]byte, 100)); return b }, []string{"not a database"}},
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }, []string{"malformed"}},
		{"truncated to one page", func(b []byte) []byte { return b[:page] }, []string{"malformed"}},
		{"last page cut", func(b []byte) []byte { return b[:len(b)-page] }, []string{"malformed"}},
		{"truncated mid-page", func(b []byte) []byte { return b[:len(b)-page-1000] }, []string{"malformed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(golden)); err != nil {
				t.Fatal(err)
			}
			dbPath := filepath.Join(root, "ledger.db")
			if err := os.WriteFile(dbPath, c.damage(append([]byte{}, db...)), 0o600); err != nil {
				t.Fatal(err)
			}
			sum, files := fileSum(t, dbPath), lockFiles(t, root)
			cmds := [][]string{{"acquire", "fresh", "--pid", self}, {"status", "l1"}, {"verify"}}
			if c.name == "random bytes" || c.name == "truncated to half" {
				cmds = append(cmds, []string{"run", "fresh", "--", "true"}, []string{"release", "l1", "--force", "--yes", "--reason", "cleanup"},
					[]string{"project"})
			}
			for _, args := range cmds {
				r := clitest.Run(t, root, args...)
				if r.Code != 1 {
					t.Errorf("%v on a damaged ledger: exit %d, want 1\nstderr: %s", args, r.Code, r.Stderr)
				}
				named := false
				for _, w := range c.want {
					named = named || strings.Contains(r.Stderr, w)
				}
				if !named || !strings.Contains(r.Stderr, "ledger.db") && args[0] != "verify" {
					t.Errorf("%v: stderr does not name the damaged database (%v):\n%s", args, c.want, r.Stderr)
				}
			}
			if got := fileSum(t, dbPath); got != sum {
				t.Errorf("the damaged ledger.db was written to")
			}
			if fi, err := os.Stat(dbPath + "-wal"); err == nil && fi.Size() > 0 {
				t.Errorf("a %d-byte WAL was written beside the damaged ledger.db", fi.Size())
			}
			if got := lockFiles(t, root); got != files {
				t.Errorf("lock files changed: %s -> %s", files, got)
			}
		})
	}
	t.Run("damaged page outside the write path", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		if err := os.CopyFS(root, os.DirFS(golden)); err != nil {
			t.Fatal(err)
		}
		// An early leaf page of the events table: appends never read it.
		var pageNo int64
		if err := clitest.DB(t, root).QueryRow(`SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf'
			ORDER BY pageno LIMIT 1`).Scan(&pageNo); err != nil {
			t.Skipf("dbstat is not available to find an events page: %v", err)
		}
		b := append([]byte{}, db...)
		copy(b[(pageNo-1)*page:pageNo*page], random(page))
		if err := os.WriteFile(filepath.Join(root, "ledger.db"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		r := clitest.Run(t, root, "verify")
		if r.Code != 1 || !strings.Contains(r.Stderr+r.Stdout, "malformed") && !strings.Contains(r.Stdout, "FAILED") {
			t.Fatalf("verify on a ledger with a destroyed events page: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// checkpoint copies the WAL into ledger.db and removes ledger.db-wal and
// ledger.db-shm (no process may have the ledger open).
func checkpoint(t *testing.T, root string) {
	t.Helper()
	db := fixture.RawDB(t, root)
	var busy, logged, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint: %v (busy %d)", err, busy)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ledger.db-wal", "ledger.db-shm"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestFaultLocksDirMissingOrReplaced: a missing locks/ is recreated 0700
// (under umask 000 too); a file or a symlink in its place is a clear error
// (exit 1) and is left as it was.
func TestFaultLocksDirMissingOrReplaced(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	t.Run("missing", func(t *testing.T) {
		root := t.TempDir()
		clitest.Must(t, 0, root, "acquire", "a", "--pid", self)
		if err := os.RemoveAll(filepath.Join(root, "locks")); err != nil {
			t.Fatal(err)
		}
		c := exec.Command("sh", "-c", `umask 000; exec "$LL" acquire b --pid "$PID"`)
		c.Env = append(clitest.Env(root), "LL="+clitest.Bin(), "PID="+self)
		if r := clitest.Exec(t, c); r.Code != 0 {
			t.Fatalf("acquire with locks/ missing: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		fi, err := os.Lstat(filepath.Join(root, "locks"))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("locks/ after recreation: %v %v, want a 0700 directory", fi.Mode(), err)
		}
		if fi, err := os.Stat(filepath.Join(root, "locks", "b.lock")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("b.lock: %v %v", err, fi)
		}
		// a's file is gone with the directory: the next writer on a restores it.
		clitest.Must(t, 3, root, "acquire", "a", "--pid", self)
		if _, err := os.Stat(filepath.Join(root, "locks", "a.lock")); err != nil {
			t.Fatalf("a.lock not restored from the ledger: %v", err)
		}
		assertChain(t, root)
	})
	for _, kind := range []string{"file", "symlink"} {
		t.Run(kind+" in its place", func(t *testing.T) {
			root := t.TempDir()
			clitest.Must(t, 0, root, "acquire", "a", "--pid", self)
			before := snapLedger(t, root)
			locks := filepath.Join(root, "locks")
			if err := os.RemoveAll(locks); err != nil {
				t.Fatal(err)
			}
			elsewhere := t.TempDir()
			if kind == "file" {
				if err := os.WriteFile(locks, []byte("not a directory\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink(elsewhere, locks); err != nil {
				t.Fatal(err)
			}
			sum := ""
			if kind == "file" {
				sum = fileSum(t, locks)
			}
			for _, args := range [][]string{{"acquire", "b", "--pid", self}, {"status", "a"}, {"release", "a", "--force", "--yes", "--reason", "cleanup"}} {
				r := clitest.Run(t, root, args...)
				want := map[string]string{"file": "not a directory", "symlink": "symlink"}[kind]
				if r.Code != 1 || !strings.Contains(r.Stderr, "locks") || !strings.Contains(r.Stderr, want) {
					t.Errorf("%v with a %s at locks/: exit %d, want 1 naming locks and %q\nstderr: %s", args, kind, r.Code, want, r.Stderr)
				}
			}
			if kind == "file" && fileSum(t, locks) != sum {
				t.Errorf("the file at locks/ was changed")
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Errorf("the symlink was followed: %v", entries)
			}
			if got := clitest.EventCount(t, root); got != before.events || headHash(t, root) != before.head {
				t.Errorf("ledger changed: %d events, was %d", got, before.events)
			}
		})
	}
}

// TestFaultLockPathsAreNeverFollowed: a lock file replaced by a directory
// or by a symlink (to a file, or dangling), a symlinked journal, swap,
// ledger.db or writer.flock: the ledger refuses with exit 1, never writes
// through the link, never creates its target, and records nothing.
func TestFaultLockPathsAreNeverFollowed(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	type setup struct {
		name  string
		path  func(root string) string // what is replaced
		link  bool                     // by a symlink (to target) rather than a directory
		held  bool                     // the lock is held by the ledger first
		args  [][]string
		want  string
		noTgt bool // the symlink dangles
	}
	lockArgs := [][]string{{"acquire", "x", "--pid", self}, {"acquire", "x", "--force", "--pid", self},
		{"steal", "x", "--active", "--yes", "--reason", "t", "--pid", self}}
	heldArgs := [][]string{{"heartbeat", "x", "--request-id", "REQ"}, {"release", "x", "--request-id", "REQ"},
		{"release", "x", "--force", "--yes", "--reason", "cleanup"}, {"steal", "x", "--active", "--yes", "--reason", "t", "--pid", self},
		{"acquire", "x", "--pid", self}}
	lockPath := func(root string) string { return filepath.Join(root, "locks", "x.lock") }
	cases := []setup{
		{name: "lock file is a directory", path: lockPath, args: lockArgs, want: "not a regular file"},
		{name: "held lock file became a directory", path: lockPath, held: true, args: heldArgs, want: "not a regular file"},
		{name: "lock file is a symlink", path: lockPath, link: true, args: lockArgs, want: "symlink"},
		{name: "held lock file became a symlink", path: lockPath, link: true, held: true, args: heldArgs, want: "symlink"},
		{name: "lock file is a dangling symlink", path: lockPath, link: true, noTgt: true, args: lockArgs, want: "symlink"},
		{name: "journal is a symlink", path: func(root string) string { return filepath.Join(root, "locks", ".x.lock.pending") },
			link: true, args: lockArgs, want: "symlink"},
		{name: "ledger.db is a symlink", path: func(root string) string { return filepath.Join(root, "ledger.db") },
			link: true, args: [][]string{{"acquire", "y", "--pid", self}}, want: "not a regular file"},
		{name: "writer.flock is a symlink", path: func(root string) string { return filepath.Join(root, "writer.flock") },
			link: true, args: [][]string{{"acquire", "y", "--pid", self}}, want: "writer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
			rid := ""
			if c.held {
				rid = strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "x", "--pid", self).Stdout)
			}
			p := c.path(root)
			if c.name == "ledger.db is a symlink" {
				// keep the real database at the target, so that following the link would work
				if err := os.Rename(p, filepath.Join(t.TempDir(), "moved.db")); err != nil {
					t.Fatal(err)
				}
			}
			target := filepath.Join(t.TempDir(), "target")
			if !c.noTgt {
				if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if c.link {
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			var before ledgerSnap
			if !strings.HasPrefix(c.name, "ledger.db") {
				before = snapLedger(t, root)
			}
			for _, template := range c.args {
				args := make([]string, len(template))
				for i, a := range template {
					args[i] = strings.ReplaceAll(a, "REQ", rid)
				}
				r := clitest.Run(t, root, args...)
				if r.Code != 1 || !strings.Contains(r.Stderr, c.want) {
					t.Errorf("%v: exit %d, want 1 naming %q\nstderr: %s", args, r.Code, c.want, r.Stderr)
				}
			}
			if c.noTgt {
				if _, err := os.Lstat(target); err == nil {
					t.Errorf("the dangling symlink's target was created")
				}
			} else if b, err := os.ReadFile(target); err != nil || string(b) != "precious\n" {
				t.Errorf("the symlink's target changed: %q %v", b, err)
			}
			if fi, err := os.Lstat(p); err != nil || (fi.Mode()&os.ModeSymlink != 0) != c.link {
				t.Errorf("%s was replaced or removed: %v %v", p, fi, err)
			}
			if !c.link {
				if entries, _ := os.ReadDir(p); len(entries) != 0 {
					t.Errorf("something was written into the directory at the lock path: %v", entries)
				}
			}
			if !strings.HasPrefix(c.name, "ledger.db") {
				if after := snapLedger(t, root); after.events != before.events || after.head != before.head {
					t.Errorf("the ledger recorded something: %s -> %s", before, after)
				}
			}
		})
	}
}

// TestFaultForeignLockFileWithAHugeNumber: a lock file the ledger did not
// write, with a number such as 1e400000000 in it, is unreadable: it must
// count as held (fail safe, acquire exits 3 saying so) and every command
// must go on working. Found by FuzzParseLockFile: the schema library
// panicked on that number, so one such file crashed status, list, acquire
// and verify with a Go panic (exit 2, "usage or invalid input").
func TestFaultForeignLockFileWithAHugeNumber(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "other", "--pid", self)
	host, _ := os.Hostname()
	doc := `{"lock_version":"v1","lock_name":"odd","request_id":"req_foreign","actor":"tower","intent":"","intent_version":"",` +
		`"host_id":"` + host + `","pid":1e400000000,"created_at":"2026-01-01T00:00:00Z","last_heartbeat_at":"2026-01-01T00:00:00Z","ttl_seconds":5}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "locks", "odd.lock"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapLedger(t, root)
	var panics []string
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"acquire", "odd", "--pid", self}, 3},
		{[]string{"acquire", "odd", "--force", "--pid", self}, 3},
		{[]string{"status", "odd"}, 0},
		{[]string{"list"}, 0},
		{[]string{"verify"}, -1},
	} {
		r := clitest.Run(t, root, c.args...)
		if strings.Contains(r.Stderr, "panic:") {
			panics = append(panics, fmt.Sprintf("%v: exit %d, %s", c.args, r.Code, firstLine(r.Stderr)))
			continue
		}
		if c.code >= 0 && r.Code != c.code || c.code < 0 && r.Code > 1 {
			t.Errorf("%v with an unreadable foreign lock file: exit %d, want %d\nstderr: %s", c.args, r.Code, c.code, r.Stderr)
		}
	}
	if got := fileSum(t, filepath.Join(root, "locks", "odd.lock")); got == "absent" {
		t.Errorf("the foreign lock file was removed")
	}
	if len(panics) > 0 {
		t.Errorf("a foreign lock file with a huge number crashes lockledger:\n%s", strings.Join(panics, "\n"))
	}
	if after := snapLedger(t, root); after.files != before.files {
		t.Errorf("lock files changed: %s -> %s", before, after)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// downgradeSchema turns root's ledger into one written before migration
// 0002 (no locks.targets column, no events_no_replace trigger, schema
// version 1).
func downgradeSchema(t *testing.T, root string) {
	t.Helper()
	db := fixture.RawDB(t, root)
	defer db.Close()
	for _, q := range append(slices.Clip(oldschema.Version9), `DELETE FROM schema_migrations WHERE version >= 2`, `ALTER TABLE locks DROP COLUMN targets`, `ALTER TABLE locks DROP COLUMN pid_ns`,
		`DROP TABLE tlog_hashes`, `DROP TABLE checkpoints`, `DROP TABLE lock_holders`, `DROP TABLE cosignatures`,
		`DROP TRIGGER events_no_replace`, `DROP TRIGGER events_prune_marker`, `DROP TABLE prune_horizon`, `DROP TABLE prune_restore`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestFaultOldSchemaIsUpgradedByReads: a read command on a ledger written
// by an older lockledger upgrades it where the root is writable, as a
// writing command would, and then answers.
func TestFaultOldSchemaIsUpgradedByReads(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "held", "--pid", strconv.Itoa(os.Getpid()))
	downgradeSchema(t, root)
	before := snapLedger(t, root)
	r := clitest.Run(t, root, "status", "held", "--json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"state":"held"`) || !strings.Contains(r.Stderr, "upgrading") {
		t.Fatalf("status on an old schema: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	var version int
	if err := clitest.DB(t, root).QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version < 2 {
		t.Fatalf("schema version after the read: %d (%v), want the latest", version, err)
	}
	if after := snapLedger(t, root); after != before {
		t.Fatalf("the upgrade changed the events or lock files: %s -> %s", before, after)
	}
	clitest.Must(t, 0, root, "verify")
}
