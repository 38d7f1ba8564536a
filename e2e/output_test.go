package e2e

// Output files (-o FILE of export and timeline): never a file of the
// ledger's root under any name, never through a symlink, and written as a
// new file renamed into place.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// outputCommands are the commands with -o FILE that replace FILE.
var outputCommands = []struct {
	name string
	args []string
}{
	{"export", []string{"export"}},
	{"export csv", []string{"export", "--format", "csv"}},
	{"timeline html", []string{"timeline", "--format", "html"}},
	{"timeline svg", []string{"timeline", "--format", "svg"}},
}

// outputRoot is a root of its own with a few events and a held lock, its
// WAL left in place by the CLI as it always is: a copy of one built once.
func outputRoot(t *testing.T) string {
	t.Helper()
	shared := clitest.Fixture(t, "output", func(t testing.TB, dir string) {
		root := filepath.Join(dir, "root")
		self := strconv.Itoa(os.Getpid())
		for i := range 3 {
			rid := "req_out" + strconv.Itoa(i)
			clitest.Must(t, 0, root, "acquire", "a", "--pid", self, "--request-id", rid)
			clitest.Must(t, 0, root, "release", "a", "--request-id", rid)
		}
		clitest.Must(t, 0, root, "acquire", "a", "--pid", self)
	})
	root := filepath.Join(t.TempDir(), "root")
	clitest.Copy(t, filepath.Join(shared, "root"), root)
	return root
}

// refusedOutput runs cmd with -o target and wants exit 2 naming -o, the
// path and what, then the ledger as before, verify OK, and nothing left
// beside the target.
func refusedOutput(t *testing.T, root, target, what string, args ...string) {
	t.Helper()
	before := snapLedger(t, root)
	dirBefore := dirNames(t, filepath.Dir(target))
	r := clitest.Run(t, root, append(args, "-o", target)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, `-o "`+target+`"`) || !strings.Contains(r.Stderr, what) {
		t.Errorf("%s -o %s: exit %d, want 2 naming -o, the path and %q\nstderr: %s", strings.Join(args, " "), target, r.Code, what, r.Stderr)
	}
	if after := dirNames(t, filepath.Dir(target)); after != dirBefore {
		t.Errorf("%s -o %s: the directory went from [%s] to [%s]", strings.Join(args, " "), target, dirBefore, after)
	}
	if after := snapLedger(t, root); after != before {
		t.Fatalf("%s -o %s changed the ledger: %s -> %s", strings.Join(args, " "), target, before, after)
	}
	clitest.Must(t, 0, root, "verify")
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return strings.Join(names, " ")
}

// Every file of the root, and a new file in it or in locks/, is refused
// as an output file, whatever command writes it: before, export -o
// ROOT/ledger.db-wal truncated the WAL (every event lost) and timeline
// --format html -o ROOT/ledger.db replaced the ledger with a page, exit 0.
// Each attack gets a root of its own.
func TestOutputIntoTheRootIsRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"ledger.db-wal", "ledger.db", "ledger.db-shm", "writer.flock", "locks/a.lock", "new.html", "locks/new.jsonl"} {
		for _, c := range outputCommands {
			t.Run(c.name+" -o ROOT/"+name, func(t *testing.T) {
				root := outputRoot(t)
				if name == "ledger.db-wal" {
					if st, err := os.Stat(filepath.Join(root, name)); err != nil || st.Size() == 0 {
						t.Fatalf("the CLI left no WAL to attack (%v)", err)
					}
				}
				refusedOutput(t, root, filepath.Join(root, name), "the ledger's root", c.args...)
			})
		}
	}
}

// The root under another name is still the root: a symlinked directory
// (the directory's device and inode), and a hard link of the ledger's
// database (the file's).
func TestOutputIntoTheRootUnderAnotherNameIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range outputCommands {
		for _, target := range []string{"root/ledger.db-wal", "root/locks/a.lock", "hard-link.db"} {
			t.Run(c.name+" -o "+target, func(t *testing.T) {
				root, dir := outputRoot(t), t.TempDir()
				if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(filepath.Join(root, "ledger.db"), filepath.Join(dir, "hard-link.db")); err != nil {
					t.Fatal(err)
				}
				refusedOutput(t, root, filepath.Join(dir, target), "the ledger's root", c.args...)
			})
		}
	}
}

// A bind mount of the root, or of its locks directory, is the same
// directory by device and inode: refused.
func TestOutputThroughABindMountOfTheRootIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range outputCommands {
		for _, target := range []string{"bind/ledger.db-wal", "bind/locks/a.lock", "locks-bind/new"} {
			t.Run(c.name+" -o "+target, func(t *testing.T) {
				root, dir := outputRoot(t), t.TempDir()
				bind, locksBind := filepath.Join(dir, "bind"), filepath.Join(dir, "locks-bind")
				for _, d := range []string{bind, locksBind} {
					if err := os.Mkdir(d, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				run := inMountNamespace(t, root, bind, locksBind)
				before := snapLedger(t, root)
				path := filepath.Join(dir, target)
				r := run(append(c.args, "-o", path)...)
				if r.Code != 2 || !strings.Contains(r.Stderr, `-o "`+path+`"`) || !strings.Contains(r.Stderr, "the ledger's root") {
					t.Errorf("%s -o %s: exit %d, want 2 naming -o and the path\nstderr: %s", c.name, path, r.Code, r.Stderr)
				}
				if _, err := os.Lstat(filepath.Join(root, "locks", "new")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("an output through the bind mount created locks/new (%v)", err)
				}
				if after := snapLedger(t, root); after != before {
					t.Fatalf("a refused output changed the ledger: %s -> %s", before, after)
				}
				clitest.Must(t, 0, root, "verify")
			})
		}
	}
}

// A symlink planted at the output path, in a sticky world-writable
// directory as /tmp is, is never followed: before, export -o wrote the
// link's target (here someone's file, or the ledger's WAL).
func TestOutputThroughASymlinkIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range outputCommands {
		for _, to := range []string{"precious.conf", "ROOT/ledger.db-wal", "nothing-yet"} {
			t.Run(c.name+" to "+to, func(t *testing.T) {
				root, sticky, elsewhere := outputRoot(t), t.TempDir(), t.TempDir()
				if err := os.Chmod(sticky, 0o1777); err != nil {
					t.Fatal(err)
				}
				victim := filepath.Join(elsewhere, "precious.conf")
				if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				dest := map[string]string{"precious.conf": victim, "ROOT/ledger.db-wal": filepath.Join(root, "ledger.db-wal"),
					"nothing-yet": filepath.Join(elsewhere, "nothing-yet")}[to]
				link := filepath.Join(sticky, "out")
				if err := os.Symlink(dest, link); err != nil {
					t.Fatal(err)
				}
				refusedOutput(t, root, link, "is a symlink", c.args...)
				if got, err := os.Readlink(link); err != nil || got != dest {
					t.Errorf("the symlink is now %q (%v)", got, err)
				}
				if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
					t.Errorf("the symlink's target was written: %.60q (%v)", b, err)
				}
				if names := dirNames(t, elsewhere); names != "precious.conf" {
					t.Errorf("the symlink's directory holds [%s], want [precious.conf]", names)
				}
			})
		}
	}
}

// Anything but a regular file at the output path is refused: a directory
// is never replaced.
func TestOutputOverADirectoryIsRefused(t *testing.T) {
	t.Parallel()
	root := outputRoot(t)
	for _, c := range outputCommands {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			refusedOutput(t, root, dir, "is a directory", c.args...)
			if names := dirNames(t, dir); names != "" {
				t.Errorf("the directory now holds [%s]", names)
			}
		})
	}
}

// A normal output file is written whole, with mode 0600, and replaces an
// existing regular file by rename: another name of the old file keeps
// the old bytes (nothing was written into it), and no temporary file is
// left beside it.
func TestOutputReplacesARegularFileByRename(t *testing.T) {
	t.Parallel()
	root := outputRoot(t)
	for _, c := range outputCommands {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out, old := filepath.Join(dir, "out"), filepath.Join(dir, "old")
			if err := os.WriteFile(out, []byte("old bytes\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(out, old); err != nil {
				t.Fatal(err)
			}
			clitest.Must(t, 0, root, append(c.args, "-o", out)...)
			if b, err := os.ReadFile(old); err != nil || string(b) != "old bytes\n" {
				t.Errorf("the old file was written into: %.60q (%v)", b, err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"export": `{"checkpoint":`, "export csv": "seq,event_id,", "timeline html": "<!DOCTYPE html>", "timeline svg": "<?xml"}[c.name]
			if !bytes.HasPrefix(b, []byte(want)) {
				t.Errorf("the output starts %q, want %q", b[:min(len(b), 40)], want)
			}
			st, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("the output has mode %v and %d links, want 0600 and one", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Nlink)
			}
			if names := dirNames(t, dir); names != "old out" {
				t.Errorf("the directory holds [%s], want [old out]", names)
			}
			if c.name == "export" {
				clitest.Must(t, 0, root, "verify", "--file", out)
			}
		})
	}
	clitest.Must(t, 0, root, "verify")
}

// An output file in a directory that is not there fails (exit 1: nothing
// to refuse, the open failed) with a message that names -o and the path
// as typed, a directory with a space in it included; it said only "open
// DIR: no such file or directory". verify --file of a file that is not
// there names --file the same way.
func TestOutputInAMissingDirectoryNamesTheFlag(t *testing.T) {
	t.Parallel()
	root := outputRoot(t)
	for _, c := range outputCommands {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "no such dir", "out file")
			before := snapLedger(t, root)
			r := clitest.Run(t, root, append(c.args, "-o", target)...)
			if r.Code != 1 || !strings.Contains(r.Stderr, `-o "`+target+`": `) || !strings.Contains(r.Stderr, "no such file or directory") {
				t.Errorf("exit %d, want 1 naming -o and %q\nstderr: %s", r.Code, target, r.Stderr)
			}
			if after := snapLedger(t, root); after != before {
				t.Errorf("the ledger changed: %s -> %s", before, after)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "audit.jsonl")
	r := clitest.Run(t, root, "verify", "--file", missing)
	if want := `lockledger: --file "` + missing + `": cannot be read: no such file or directory`; r.Code != 1 || !strings.Contains(r.Stderr, want) {
		t.Errorf("verify --file MISSING: exit %d, stderr %q; want exit 1 saying %q", r.Code, r.Stderr, want)
	}
}
