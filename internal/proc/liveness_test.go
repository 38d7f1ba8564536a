package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func TestLivenessOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Liveness
	}{
		{nil, Alive},
		{syscall.EPERM, Alive},
		{syscall.ESRCH, Gone},
		{syscall.EINVAL, Unknown},
		{errors.New("kill: failed"), Unknown},
	} {
		if got := LivenessOf(c.err); got != c.want {
			t.Errorf("LivenessOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if got := Check(os.Getpid()); got != Alive {
		t.Errorf("Check(self) = %v", got)
	}
	for _, pid := range []int{0, -1} {
		if got := Check(pid); got != Unknown {
			t.Errorf("Check(%d) = %v, want Unknown", pid, got)
		}
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	if got := Check(cmd.Process.Pid); got != Gone {
		t.Logf("Check(reaped child) = %v (pid reused?)", got)
	}
}

// TestLocalProbe: a live child is Alive with its start time; once reaped
// it is Gone with none.
func TestLocalProbe(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	p := &Local{}
	if live, start := p.Probe(c.Process.Pid); live != Alive || start == "" || start != Start(c.Process.Pid) {
		t.Fatalf("Probe(live child) = %v, %q; want alive and its start time", live, start)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	if live, start := p.Probe(c.Process.Pid); live == Alive || start != "" {
		t.Logf("Probe(reaped child) = %v, %q (pid reused?)", live, start)
	}
	if live, start := p.Probe(os.Getpid()); live != Alive || start == "" || start != Start(os.Getpid()) {
		t.Fatalf("Probe(this process) = %v, %q; want alive and its start time", live, start)
	}
}
