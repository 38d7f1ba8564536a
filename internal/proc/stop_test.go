//go:build linux

package proc

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
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
