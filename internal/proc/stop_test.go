package proc

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStopJobStopsWhatIsBelowWithDescendants: a process below this one
// carrying no request id is the job's only with Descendants; it gets TERM
// and is reaped.
func TestStopJobStopsWhatIsBelowWithDescendants(t *testing.T) {
	id := "req_descendants_test"
	c := exec.Command("env", "-u", JobEnv, "sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	if got := StopJob(context.Background(), id, 0, time.Second); len(got.PIDs) != 0 {
		t.Fatalf("StopJob without Descendants = %+v, want nothing", got)
	}
	if got := StopJob(context.Background(), id, 0, 5*time.Second, Descendants()); !slices.Equal(got.PIDs, []int{pid}) || got.Killed {
		t.Fatalf("StopJob with Descendants = %+v, want [%d] stopped with TERM", got, pid)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("process %d was not reaped", pid)
	}
}

func TestChildrenByStatAgreesWithChildrenOf(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	self := os.Getpid()
	a, b := childrenOf(self), childrenByStat(self)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Contains(a, c.Process.Pid) || !slices.Equal(a, b) {
		t.Fatalf("childrenOf = %v, childrenByStat = %v; want the same, with %d", a, b, c.Process.Pid)
	}
}

// TestStopJobBelowOnlyLeavesWhatIsNotBelow: with BelowOnly, a process
// carrying the request id that is not below this one (orphaned to another
// reaper) is not the job's and keeps running; one below carrying nothing is
// stopped.
func TestStopJobBelowOnlyLeavesWhatIsNotBelow(t *testing.T) {
	id := "req_below_only_test"
	out, err := exec.Command("sh", "-c", JobEnv+"="+id+" sleep 30 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	away, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(away, unix.SIGKILL) })
	if ReadStat(away).PPID == os.Getpid() {
		t.Fatalf("process %d is still this one's child", away)
	}
	below := exec.Command("env", "-u", JobEnv, "sleep", "30")
	if err := below.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = below.Process.Kill(); _ = below.Wait() })
	if got := StopJob(context.Background(), id, 0, 5*time.Second, BelowOnly()); !slices.Equal(got.PIDs, []int{below.Process.Pid}) || got.Killed {
		t.Fatalf("StopJob with BelowOnly = %+v, want only [%d] (below) stopped, not %d (not below, carrying the id)", got, below.Process.Pid, away)
	}
	if err := unix.Kill(away, 0); err != nil {
		t.Fatalf("process %d, not below this one, was stopped: %v", away, err)
	}
}
