package trust

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/testkeys"
	"golang.org/x/sys/unix"
)

// holdLockEnv makes the test binary a process that takes the exclusive
// flock of the file it names, says "locked" and waits for its standard
// input to close (see TestMain).
const holdLockEnv = "LOCKLEDGER_TEST_HOLD_FLOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// stoppedHolder starts a process that takes the exclusive lock of path
// and stops it (SIGSTOP) once it holds it; the test's cleanup resumes and
// kills it.
func stoppedHolder(t *testing.T, path string) {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), holdLockEnv+"="+path)
	c.Stderr = os.Stderr
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		stdin.Close()
		_ = c.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("the holder did not take the lock of %s: %q, %v", path, line, err)
	}
	if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", c.Process.Pid)
	for deadline := time.Now().Add(time.Minute); ; {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder never stopped: %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHeadsReadGivesUpOnAStoppedHolder: a process stopped (SIGSTOP) while
// it holds a head's lock, as one stopped inside Store would, holds up a
// reader of the head (verify) for the bounded wait only: then Read fails
// with a *LockBusyError naming the lock file.
func TestHeadsReadGivesUpOnAStoppedHolder(t *testing.T) {
	mine, v, _ := testkeys.Signer(t, "ops")
	h := Heads{Dir: t.TempDir()}
	if _, err := h.Store(id, 3, testkeys.Signed(t, mine, id, 3, at), v); err != nil {
		t.Fatal(err)
	}
	stoppedHolder(t, h.lockPath(id))
	read := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := h.Read(id)
		read <- err
	}()
	select {
	case err := <-read:
		var busy *LockBusyError
		if !errors.As(err, &busy) || busy.Lock != h.lockPath(id) || !strings.Contains(err.Error(), "another process") {
			t.Fatalf("Read under a stopped holder's lock: %v, want a *LockBusyError naming %s", err, h.lockPath(id))
		}
		if waited := time.Since(start); waited < storeWait {
			t.Fatalf("Read gave up after %s, before the %s it waits", waited, storeWait)
		}
	case <-time.After(storeWait + time.Minute):
		t.Fatalf("Read waited past %s for a stopped holder's lock", storeWait+time.Minute)
	}
}
