package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	var st syscall.Stat_t
	if err := syscall.Fstat(int(lock.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	blocked := fmt.Sprintf(":%d ", st.Ino)
	for waiting := false; !waiting; {
		select {
		case err := <-exited:
			t.Fatalf("verify finished (%v) while a writer held the head's lock over a head half written\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(locks), "\n") {
			waiting = waiting || strings.Contains(l, "-> FLOCK") && strings.Contains(l, blocked)
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
