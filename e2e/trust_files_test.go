package e2e

// The trust store's files and the kept head: a FIFO, a planted key or a
// heads directory that cannot be written is refused before anything is
// written, and a copy of a root keeps a head of its own.

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

	ckpt "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// runWithin runs lockledger on root for at most d: a command that hangs
// fails the test instead of holding it.
func runWithin(t *testing.T, d time.Duration, root string, args ...string) clitest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r := clitest.Exec(t, clitest.Command(ctx, root, args...))
	if ctx.Err() != nil {
		t.Fatalf("lockledger %s: still running after %s (killed)\nstderr: %s", strings.Join(args, " "), d, r.Stderr)
	}
	return r
}

// TestAFIFOAtKnownLedgersIsRefused: a FIFO at the trust store's
// known_ledgers makes verify and a writer exit 2 naming it, at once,
// instead of blocking in its open for ever.
func TestAFIFOAtKnownLedgersIsRefused(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	clitest.Must(t, 0, root, "--unsigned", "acquire", "a")
	store := clitest.TrustDir(root)
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	pins := filepath.Join(store, "known_ledgers")
	if err := syscall.Mkfifo(pins, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"verify"}, {"acquire", "b"}} {
		r := runWithin(t, 30*time.Second, root, args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, pins) || !strings.Contains(r.Stderr, "not a regular file") {
			t.Errorf("lockledger %s with a FIFO at %s: exit %d, want 2 naming it\nstdout: %s\nstderr: %s", args[0], pins, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// TestACopiedRootKeepsItsOwnHead: a root copied with cp -a holds the same
// ledger; writing to the copy pins it on first use, saying the ledger is
// pinned at the original too, and neither the original's writes nor its
// verify are refused because of the copy's head; each verifies against
// its own head.
func TestACopiedRootKeepsItsOwnHead(t *testing.T) {
	t.Parallel()
	root, _ := defaultRoot(t)
	id := ledgerID(t, root)
	cp := filepath.Join(filepath.Dir(root), "copy")
	if out, err := exec.Command("cp", "-a", root, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	// The copy uses the same trust store as the original.
	env := []string{"LOCKLEDGER_TRUST_DIR=" + clitest.TrustDir(root)}
	run := func(want int, at string, args ...string) clitest.Result {
		t.Helper()
		r := clitest.RunWith(t, at, env, "", args...)
		if r.Code != want {
			t.Fatalf("lockledger %s on %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), at, r.Code, want, r.Stdout, r.Stderr)
		}
		return r
	}
	first := run(0, cp, "acquire", "copy-only", "--pid", strconv.Itoa(os.Getpid()))
	if !strings.Contains(first.Stderr, "on first use") || !strings.Contains(first.Stderr, id) || !strings.Contains(first.Stderr, "pinned at "+root+" too") {
		t.Errorf("the copy's first write does not say it pinned ledger %s on first use and that it is pinned at %s too:\n%s", id, root, first.Stderr)
	}
	run(0, cp, "release", "copy-only", "--force", "--yes", "--reason", "test")
	run(0, root, "acquire", "original", "--pid", strconv.Itoa(os.Getpid()))
	for _, at := range []string{root, cp} {
		if r := run(0, at, "verify"); !strings.Contains(r.Stdout, "verify: OK") {
			t.Errorf("verify of %s:\n%s", at, r.Stdout)
		}
	}
}

// TestAPlantedGroupKeyIsRefused: in a sticky directory anyone can write, a
// user outside the group plants the group root's key file (her own key,
// 0600) before anyone made it; a writer of the group (here root, who can
// read it) refuses it, exit 2 naming the file and its owner, and pins
// nothing.
func TestAPlantedGroupKeyIsRefused(t *testing.T) {
	t.Parallel()
	as, base := otherUsers(t)
	root := filepath.Join(base, "team")
	key := filepath.Join(base, ".team.signing.key")
	skey, _, err := ckpt.GenerateKey("eve")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(key, eveUID, eveUID); err != nil {
		t.Fatal(err)
	}
	r := as(0, []uint32{teamGID}, root, "--group", strconv.Itoa(teamGID), "acquire", "deploy")
	if r.Code != 2 || !strings.Contains(r.Stderr, key) || !strings.Contains(r.Stderr, strconv.Itoa(eveUID)) {
		t.Fatalf("a write of the group root with a key planted by uid %d: exit %d, want 2 naming %s and its owner\nstdout: %s\nstderr: %s", eveUID, r.Code, key, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "pinned") {
		t.Errorf("pinned with the planted key:\n%s", r.Stderr)
	}
}

// TestAHeadsDirectoryItsOwnerCannotWriteFailsTheWrite: a heads/ of mode
// 0500 would let writes go on while the head kept never advances; the
// write fails before it commits instead, and nothing is appended.
func TestAHeadsDirectoryItsOwnerCannotWriteFailsTheWrite(t *testing.T) {
	t.Parallel()
	as, base := otherUsers(t)
	root := filepath.Join(base, "alices")
	pid := strconv.Itoa(os.Getpid())
	if r := as(aliceUID, nil, root, "acquire", "a", "--pid", pid); r.Code != 0 {
		t.Fatalf("alice's first write: exit %d\n%s", r.Code, r.Stderr)
	}
	heads := filepath.Join(strings.TrimPrefix(clitest.TrustDirAs(t, root, aliceUID), "LOCKLEDGER_TRUST_DIR="), "heads")
	if err := os.Chmod(heads, 0o500); err != nil {
		t.Fatal(err)
	}
	before := clitest.EventCount(t, root)
	r := as(aliceUID, nil, root, "acquire", "b", "--pid", pid)
	if r.Code == 0 || !strings.Contains(r.Stderr, heads) {
		t.Fatalf("a write with heads/ 0500: exit %d, want a failure naming %s\nstdout: %s\nstderr: %s", r.Code, heads, r.Stdout, r.Stderr)
	}
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("%d events after the refused write, want %d", n, before)
	}
}

// TestAStoppedPinnerHoldsUpNoWriter: a process stopped while it holds the
// lock of known_ledgers (here the test holds it) makes a writer that pins
// on first use fail after a bounded wait, naming the lock, instead of
// waiting for it for ever.
func TestAStoppedPinnerHoldsUpNoWriter(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	store := clitest.TrustDir(root)
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(store, "known_ledgers.lock")
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	r := runWithin(t, 30*time.Second, root, "acquire", "a", "--pid", strconv.Itoa(os.Getpid()))
	if r.Code == 0 || !strings.Contains(r.Stderr, lockPath) {
		t.Fatalf("a first write while another holds %s: exit %d, want a failure naming it\nstdout: %s\nstderr: %s", lockPath, r.Code, r.Stdout, r.Stderr)
	}
}

// TestTwoRootsOfOnePostgresLedgerAreNotCalledCopies: one user's two roots
// (two services on a machine, or two hosts sharing a trust store) write
// one PostgreSQL ledger; the second's first write says that both write
// the one database, not that one root is a copy of the other (it said
// so before).
func TestTwoRootsOfOnePostgresLedgerAreNotCalledCopies(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := newPGHost(t, "a", url)
	b := newPGHost(t, "b", url)
	a.must(t, 0, "acquire", "x", "--pid", "1")
	r := b.must(t, 0, "acquire", "y", "--pid", "1")
	if !strings.Contains(r.Stderr, "pinned at "+a.root+" too: both roots write the one database") || strings.Contains(r.Stderr, "copy") {
		t.Errorf("the second root's first write does not say that both roots write the one database:\n%s", r.Stderr)
	}
}
