package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFaultReadOnlyRoot: a root the user cannot write (directories 0500,
// files 0400; a directory alone does not stop writes to files that exist)
// makes every writing command fail with exit 1 and a message naming the
// problem, and changes nothing; an unwritable locks/ directory fails the
// acquire before anything is committed. Root ignores permission bits, so when the tests
// run as root the commands run as uid 65534 on roots it owns.
func TestFaultReadOnlyRoot(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	asUser, base := asReader(t)
	prepare := func(name string) string { return readerRoot(t, base, name, "acquire", "held", "--pid", self) }
	t.Run("root tree read-only", func(t *testing.T) {
		root := prepare("ro-root")
		before := snapLedger(t, root)
		setTreeMode(t, root, 0o500, 0o400)
		defer setTreeMode(t, root, 0o700, 0o600)
		for _, args := range [][]string{
			{"acquire", "new", "--pid", self},
			{"run", "new", "--", "true"},
			{"release", "held", "--force", "--yes", "--reason", "cleanup"},
			{"steal", "held", "--active", "--yes", "--reason", "x", "--pid", self},
			{"project"},
		} {
			r := asUser(root, args...)
			if r.Code != 1 || !mentionsReadOnly(r.Stderr) {
				t.Errorf("%v on a read-only root: exit %d, want 1 naming the read-only file or the permission\nstderr: %s",
					args, r.Code, r.Stderr)
			}
		}
		setTreeMode(t, root, 0o700, 0o600)
		if after := snapLedger(t, root); after != before {
			t.Fatalf("a read-only root changed: %s -> %s", before, after)
		}
		if _, err := os.Stat(filepath.Join(root, "locks", "new.lock")); err == nil {
			t.Fatal("a lock file appeared in a read-only root")
		}
	})
	// An archived or mounted copy: the audit and status commands read it
	// and leave it as it was, whether or not the last process checkpointed
	// its WAL; a copy whose WAL index cannot be rebuilt is refused by name.
	readers := [][]string{{"status", "held"}, {"list"}, {"verify"}, {"history", "held"}, {"who", "held"}, {"export"}}
	readOnlyCopy := func(t *testing.T, name string, shape func(root string)) string {
		root := prepare(name)
		shape(root)
		setTreeMode(t, root, 0o500, 0o400)
		t.Cleanup(func() { setTreeMode(t, root, 0o700, 0o600) })
		return root
	}
	for _, c := range []struct {
		name  string
		shape func(root string)
	}{
		{"as left by the last command", func(string) {}},
		{"checkpointed, no -wal or -shm", func(root string) { checkpoint(t, root) }},
	} {
		t.Run("read-only commands on a read-only root "+c.name, func(t *testing.T) {
			root := readOnlyCopy(t, strings.ReplaceAll(c.name, " ", "-"), c.shape)
			before := treeListing(t, root)
			for _, args := range readers {
				r := asUser(root, args...)
				if r.Code != 0 {
					t.Errorf("%v on a read-only root: exit %d, want 0\nstderr: %s", args, r.Code, r.Stderr)
				}
			}
			if r := asUser(root, "status", "held", "--json"); !strings.Contains(r.Stdout, `"state":"held"`) {
				t.Errorf("status of a read-only copy: %s", r.Stdout)
			}
			if after := treeListing(t, root); after != before {
				t.Errorf("reading a read-only root changed it:\n%s\n->\n%s", before, after)
			}
		})
	}
	t.Run("read-only root written by an older lockledger", func(t *testing.T) {
		root := readOnlyCopy(t, "old-schema", func(root string) { downgradeSchema(t, root) })
		r := asUser(root, "status", "held")
		if r.Code != 1 || !strings.Contains(r.Stderr, "older than this lockledger") || !strings.Contains(r.Stderr, "upgrading it failed") {
			t.Errorf("status of a read-only root with an old schema: exit %d, want 1 saying the schema is older and could not be upgraded\nstderr: %s",
				r.Code, r.Stderr)
		}
	})
	t.Run("read-only root whose WAL index is gone", func(t *testing.T) {
		root := readOnlyCopy(t, "wal-without-shm", func(root string) {
			if err := os.Remove(filepath.Join(root, "ledger.db-shm")); err != nil {
				t.Fatal(err)
			}
		})
		for _, args := range readers[:1] {
			r := asUser(root, args...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "ledger.db-wal") || !strings.Contains(r.Stderr, "read-only") {
				t.Errorf("%v on a read-only root with a WAL and no index: exit %d, want 1 naming ledger.db-wal\nstderr: %s",
					args, r.Code, r.Stderr)
			}
		}
	})
	t.Run("locks directory 0500", func(t *testing.T) {
		root := prepare("ro-locks")
		before := snapLedger(t, root)
		if err := os.Chmod(filepath.Join(root, "locks"), 0o500); err != nil {
			t.Fatal(err)
		}
		r := asUser(root, "acquire", "new", "--pid", self)
		if r.Code != 1 || !strings.Contains(r.Stderr, "permission denied") || !strings.Contains(r.Stderr, "locks") {
			t.Errorf("acquire with an unwritable locks/: exit %d, want 1 naming the locks directory\nstderr: %s", r.Code, r.Stderr)
		}
		os.Chmod(filepath.Join(root, "locks"), 0o700)
		if after := snapLedger(t, root); after != before {
			t.Fatalf("a failed acquire changed the ledger: %s -> %s", before, after)
		}
		// Once writable again, the same acquire works: nothing was left half done.
		if r := asUser(root, "acquire", "new", "--pid", self); r.Code != 0 {
			t.Fatalf("acquire after locks/ is writable again: exit %d: %s", r.Code, r.Stderr)
		}
		assertChain(t, root)
	})
}

func mentionsReadOnly(stderr string) bool {
	for _, w := range []string{"readonly", "read-only", "permission denied", "unable to open"} {
		if strings.Contains(stderr, w) {
			return true
		}
	}
	return false
}

// setTreeMode sets every directory under root (root included) to dirMode
// and every file to fileMode; directories are opened up before descending
// and closed after, so that it works both ways.
func setTreeMode(t *testing.T, root string, dirMode, fileMode os.FileMode) {
	t.Helper()
	var dirs []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			dirs = append(dirs, p)
			return os.Chmod(p, 0o700)
		}
		return os.Chmod(p, fileMode)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], dirMode); err != nil {
			t.Fatal(err)
		}
	}
}
