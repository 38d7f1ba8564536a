package e2e

// Helpers shared by the reliability suite (crash, contention, faults,
// security): ledger snapshots, integrity checks, and running the CLI as an
// unprivileged user when the tests run as root.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// stressed reports LOCKLEDGER_STRESS=1 (`make stress`): run the big versions.
func stressed() bool { return os.Getenv("LOCKLEDGER_STRESS") == "1" }

// ledgerSnap is what "the ledger did not change" compares: the number of
// events, the head hash, and every file in locks/ with its content.
type ledgerSnap struct {
	events int
	head   string
	files  string
}

func (s ledgerSnap) String() string {
	return fmt.Sprintf("%d events, head %.12s, lock files [%s]", s.events, s.head, strings.TrimSpace(s.files))
}

// snapLedger reads the snapshot through its own read-only connection and
// closes it at once: a connection left open keeps ledger.db-wal and -shm in
// place, which changes what a later process can do in a read-only root.
func snapLedger(t *testing.T, root string) ledgerSnap {
	t.Helper()
	s := ledgerSnap{files: lockFiles(t, root)}
	if _, err := os.Stat(filepath.Join(root, "ledger.db")); err != nil {
		return s
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "ledger.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT count(*), coalesce((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), '') FROM events`).
		Scan(&s.events, &s.head); err != nil {
		t.Fatal(err)
	}
	return s
}

// headHash is the hash of the last event ("" for an empty or missing ledger).
func headHash(t *testing.T, root string) string {
	t.Helper()
	return snapLedger(t, root).head
}

// fileSum is the sha256 of a file's bytes, "absent" if there is none.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// assertIntegrity runs SQLite's own full consistency check on the ledger.
func assertIntegrity(t *testing.T, root string) {
	t.Helper()
	msgs := clitest.Strings(t, root, `PRAGMA integrity_check`)
	if len(msgs) != 1 || msgs[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check: %v", msgs)
	}
}

// nobody is the unprivileged identity the tests use when they run as root
// (root ignores permission bits, so a chmod alone proves nothing for it).
const nobody = 65534

// unprivileged returns a function that runs the CLI on a root as uid/gid
// 65534 from a copy of the test binary that that user can execute, with
// standard input closed, and a directory (0755, owned by root) in which to
// make roots that user can reach.
func unprivileged(t *testing.T) (func(root string, args ...string) clitest.Result, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("unprivileged is for tests running as root")
	}
	dir, bin := binForOthers(t)
	base := filepath.Join(dir, "roots")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(root string, args ...string) clitest.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = clitest.Env(root, clitest.TrustDirAs(t, root, nobody))
		c.Dir = "/"
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return clitest.Exec(t, c)
	}, base
}

// binForOthers is a temporary directory every user can reach (it and every
// directory above it made 0755) holding a copy of the test binary, 0755,
// that other users can run as the CLI (tests running as root).
func binForOthers(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	for d := dir; d != "/" && d != os.TempDir() && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "lockledger")
	// A hard link where it can be; a copy is written with forks held off: a
	// child another test forked while the copy was open for writing would
	// hold that descriptor until its exec, and running the copy would fail
	// with "text file busy".
	if err := os.Link(clitest.Bin(), bin); err != nil {
		func() {
			syscall.ForkLock.RLock()
			defer syscall.ForkLock.RUnlock()
			copyFile(t, clitest.Bin(), bin)
		}()
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// Ids for the team tests: no entries in the user or group database are
// needed, the kernel checks the numbers.
const (
	teamGID  = 54300
	aliceUID = 54301
	bobUID   = 54302
	eveUID   = 54303 // not in the team
)

// teamRoot is a root the team's users share, for tests that run
// lockledger as two (or three) other users, which needs root (the test is
// skipped otherwise): the copy of the CLI they can run (binForOthers),
// alice's home (hers, in a directory every user can reach), and the root
// below it, not yet made.
type teamRoot struct {
	t    *testing.T
	bin  string
	home string
	root string
}

func newTeamRoot(t *testing.T) *teamRoot {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run lockledger as two other users (runs as root in CI)")
	}
	clitest.NeedBinary(t, "sh")
	dir, bin := binForOthers(t)
	home := filepath.Join(dir, "alice")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, aliceUID, aliceUID); err != nil {
		t.Fatal(err)
	}
	return &teamRoot{t: t, bin: bin, home: home, root: filepath.Join(home, "team", "locks-root")}
}

// asUser is how teamRoot runs the CLI: as uid, with the gid of the same
// number and, unless uid is eveUID, the team's group; env added to the
// environment; under umask when one is given; stdin its standard input
// (nil: none).
type asUser struct {
	uid   int
	env   []string
	umask string
	stdin io.Reader
}

// run runs the CLI on the team's root as u, from /, with u's own trust
// store, for at most a minute.
func (tr *teamRoot) run(u asUser, args ...string) clitest.Result {
	tr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, tr.bin, args...)
	if u.umask != "" {
		c = exec.CommandContext(ctx, "sh", append([]string{"-c", `umask ` + u.umask + `; exec "$0" "$@"`, tr.bin}, args...)...)
	}
	c.Env = append(clitest.Env(tr.root, clitest.TrustDirAs(tr.t, tr.root, u.uid)), u.env...)
	c.Dir, c.Stdin = "/", u.stdin
	cred := &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.uid)}
	if u.uid != eveUID {
		cred.Groups = []uint32{teamGID}
	}
	c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return clitest.Exec(tr.t, c)
}

// must is run, failing the test unless the CLI exits 0: its standard
// output, trimmed.
func (tr *teamRoot) must(u asUser, args ...string) string {
	tr.t.Helper()
	r := tr.run(u, args...)
	if r.Code != 0 {
		tr.t.Fatalf("uid %d: lockledger %s: exit %d\n%s", u.uid, strings.Join(args, " "), r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout)
}

// intField is m[k], a JSON number, as an int.
func intField(t *testing.T, m map[string]any, k string) int {
	t.Helper()
	f, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s: not a number in %v", k, m)
	}
	return int(f)
}

// chownTree gives every file under dir to uid/gid.
func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeListing is every entry under root with its mode, size, modification
// time and content hash: what "reading did not touch the root" compares.
func treeListing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		sum := ""
		if fi.Mode().IsRegular() {
			sum = fileSum(t, p)
		}
		fmt.Fprintf(&b, "%s %s %d %d %.12s\n", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
