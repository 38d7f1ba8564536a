package proc

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A child whose Pdeathsig is SIGKILL outlives the end of the thread of
// the goroutine that called StartLocked: a goroutine locked to its
// thread that returns ends that thread, which the kernel counts as the
// parent's death for a child forked from it.
func TestStartLockedChildOutlivesItsCallersThread(t *testing.T) {
	type started struct {
		cmd    *exec.Cmd
		exited <-chan error
		err    error
		tid    int
	}
	start := func() started {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		got := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			exited, err := StartLocked(cmd)
			got <- started{cmd, exited, err, unix.Gettid()}
		}()
		return <-got
	}
	s := start()
	if s.err == nil && s.tid == os.Getpid() {
		// The runtime never ends the main thread (it parks it for good
		// instead), so the next goroutine locks another.
		s.cmd.Process.Kill()
		<-s.exited
		s = start()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	cmd := s.cmd
	task := "/proc/self/task/" + strconv.Itoa(s.tid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caller's thread %d did not end", s.tid)
		}
	}
	// A death signal sent at the thread's end was sent before it was
	// gone: a SIGKILL then already decides how the child ends.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-s.exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("sleep ended with %v", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the child ended by %v, want the test's SIGTERM: its death signal came when its caller's thread ended", ws.Signal())
	}
}
