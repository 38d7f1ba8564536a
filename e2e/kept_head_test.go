package e2e

import (
	"context"
	"errors"
	"fmt"
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

// TestVerifyReadsTheKeptHeadUnderItsLock: a writer rewrites the file a
// head was swapped out of in place, under the head's lock; plain verify
// reads the head under that lock too, so that it never reads a head
// half written. Here the test holds the lock over a head cut in half, as
// a writer would mid-write, and puts it back whole before letting go.
func TestVerifyReadsTheKeptHeadUnderItsLock(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	whole := readFile(t, head)
	lock, err := os.OpenFile(strings.TrimSuffix(head, ".checkpoint")+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte(whole[:len(whole)/2]), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := clitest.Command(ctx, root, "verify", "--json")
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	// verify polls for the lock (a bounded wait): it waits once it holds
	// the lock file open.
	fds := fmt.Sprintf("/proc/%d/fd", c.Process.Pid)
	for waiting := false; !waiting; {
		select {
		case err := <-exited:
			t.Fatalf("verify finished (%v) while a writer held the head's lock over a head half written\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		ents, _ := os.ReadDir(fds)
		for _, e := range ents {
			to, _ := os.Readlink(filepath.Join(fds, e.Name()))
			waiting = waiting || to == lock.Name()
		}
	}
	if err := os.WriteFile(head, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	v := clitest.DecodeVerify(t, clitest.Result{Code: c.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errOut.String()})
	if c.ProcessState.ExitCode() != 0 || !v.OK {
		t.Fatalf("verify of an untouched root read the head mid-write: exit %d\nstdout: %s\nstderr: %s", c.ProcessState.ExitCode(), out.String(), errOut.String())
	}
}

// TestTrustStoreWhoseHeadsOthersCanWriteIsRefused: a trust store others
// may enter (0755) whose heads/ another user can write (a backup restored
// with the wrong modes): another uid deletes the kept head, someone who
// can write ROOT cuts the tail, and the next honest write must not sign
// the cut log as if no head had been kept: it refuses the store.
func TestTrustStoreWhoseHeadsOthersCanWriteIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: acting as another uid needs root")
	}
	root, head := defaultRoot(t)
	cutTail(t, root, 4)
	heads := filepath.Dir(head)
	store := filepath.Dir(heads)
	for dir, mode := range map[string]os.FileMode{filepath.Dir(store): 0o755, store: 0o755, heads: 0o777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	rm := exec.Command("rm", head)
	rm.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := rm.CombinedOutput(); err != nil {
		t.Fatalf("uid 65534 could not remove the head in a heads/ of mode 0777: %v %s", err, out)
	}
	before := snapLedger(t, root)
	r := clitest.Run(t, root, "acquire", "next", "--actor", "frank", "--pid", strconv.Itoa(os.Getpid()))
	if r.Code != 2 || !strings.Contains(r.Stderr, heads) || !strings.Contains(r.Stderr, "others can write it") {
		t.Fatalf("a write with a heads/ others can write: exit %d, want 2 naming %s\nstdout: %s\nstderr: %s", r.Code, heads, r.Stdout, r.Stderr)
	}
	if after := snapLedger(t, root); after.events != before.events {
		t.Fatalf("a refused write changed the log: %s, was %s", after, before)
	}
	if v := clitest.Run(t, root, "verify"); v.Code != 2 || !strings.Contains(v.Stderr, heads) {
		t.Fatalf("verify with a heads/ others can write: exit %d, want 2 naming %s\nstdout: %s\nstderr: %s", v.Code, heads, v.Stdout, v.Stderr)
	}
}

// A head file that holds no head the writer's key signed (damaged, or
// another key's) is not "no head": the next write refuses to sign, naming
// the file, and changes nothing: overwriting the file would forget how far
// the log had been signed.
func TestAWriterRefusesAHeadItsKeyDidNotSign(t *testing.T) {
	t.Parallel()
	root, head := defaultRoot(t)
	other, otherTrust := filepath.Join(t.TempDir(), "other"), filepath.Join(t.TempDir(), "other-trust")
	if r := clitest.RunWith(t, other, []string{"LOCKLEDGER_TRUST_DIR=" + otherTrust}, "", "acquire", "x", "--pid", strconv.Itoa(os.Getpid())); r.Code != 0 {
		t.Fatalf("a ledger signed by another key: exit %d\n%s", r.Code, r.Stderr)
	}
	otherHead, err := filepath.Glob(filepath.Join(otherTrust, "heads", "*.checkpoint"))
	if err != nil || len(otherHead) != 1 {
		t.Fatalf("the other ledger's head: %v %v", otherHead, err)
	}
	for name, content := range map[string]string{"damaged": "not a checkpoint\n", "another key's": readFile(t, otherHead[0])} {
		if err := os.WriteFile(head, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		before := snapLedger(t, root)
		r := clitest.Run(t, root, "acquire", "new", "--pid", strconv.Itoa(os.Getpid()))
		if r.Code == 0 || !strings.Contains(r.Stderr, "refusing to sign") || !strings.Contains(r.Stderr, head) {
			t.Errorf("%s head: acquire exit %d, want a refusal naming %s\nstderr: %s", name, r.Code, head, r.Stderr)
		}
		if after := snapLedger(t, root); after != before {
			t.Errorf("%s head: the refused write changed the ledger", name)
		}
		if got := readFile(t, head); got != content {
			t.Errorf("%s head: the head file was replaced: %q", name, got)
		}
	}
}
