package ledger

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestJobProcessesNeverAnswersNoneFromAnOldScan: a process started with a
// job's LOCKLEDGER_REQUEST_ID right after a scan that found none is found
// at once; an answer of "none" from that earlier scan could let a waiter
// judge a killed runner dead while its job still runs.
func TestJobProcessesNeverAnswersNoneFromAnOldScan(t *testing.T) {
	id := fmt.Sprintf("req_jobprobe_%d_%d", os.Getpid(), time.Now().UnixNano())
	p := &procProbe{}
	if got := p.JobProcesses(id); len(got) != 0 {
		t.Fatalf("job processes of a fresh request id: %v", got)
	}
	c := exec.Command("sleep", "30")
	c.Env = append(os.Environ(), JobEnv+"="+id)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	if got := p.JobProcesses(id); !slices.Contains(got, c.Process.Pid) {
		t.Fatalf("job processes right after one started: %v, want %d", got, c.Process.Pid)
	}
	if got := p.JobProcesses("req_other_" + id); len(got) != 0 {
		t.Fatalf("job processes of another request id: %v", got)
	}
}

func TestEnvValue(t *testing.T) {
	key := []byte("\x00" + JobEnv + "=")
	for _, c := range []struct {
		env  string
		want string
		ok   bool
	}{
		{JobEnv + "=req_a\x00PATH=/bin\x00", "req_a", true},
		{"PATH=/bin\x00" + JobEnv + "=req_b\x00HOME=/\x00", "req_b", true},
		{"PATH=/bin\x00" + JobEnv + "=req_c", "req_c", true},
		{"PATH=/bin\x00X" + JobEnv + "=req_d\x00", "", false},
		{"PATH=/bin\x00" + JobEnv + "=\x00", "", true},
		{"", "", false},
		{JobEnv + "=req_e\x00" + JobEnv + "=req_f\x00", "req_e", true},
	} {
		got, ok := envValue([]byte(c.env), key)
		if got != c.want || ok != c.ok {
			t.Errorf("envValue(%q) = %q, %v; want %q, %v", c.env, got, ok, c.want, c.ok)
		}
	}
}

func TestScanJobsFindsAChild(t *testing.T) {
	id := "req_scanjobs_test"
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), JobEnv+"="+id)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := scanJobs(0)[id]; len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("scanJobs(0)[%q] = %v, want [%d]", id, got, cmd.Process.Pid)
	}
	if got := scanJobs(cmd.Process.Pid)[id]; len(got) != 0 {
		t.Fatalf("scanJobs(%d)[%q] = %v, want none (at or below the floor)", cmd.Process.Pid, id, got)
	}
}

// TestForkMarkFloor: a process started after the mark lies above its
// floor; a mark that cannot rule out a wrap-around of pids gives none.
func TestForkMarkFloor(t *testing.T) {
	m := MarkForks()
	if m.lastPID == 0 {
		t.Skip("/proc does not tell the fork count and the last pid here")
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), JobEnv+"=req_forkmark_test")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	f := m.floor()
	if f == 0 || cmd.Process.Pid <= f {
		t.Fatalf("floor %d (mark %+v), child pid %d: want a floor below the child", f, m, cmd.Process.Pid)
	}
	if got := scanJobs(f)["req_forkmark_test"]; len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("scanJobs(floor %d) = %v, want [%d]", f, got, cmd.Process.Pid)
	}
	// One pid below pid_max, and a fork (the child's) since: the next pid
	// may have wrapped around to the bottom.
	nearMax := ForkMark{forks: m.forks, lastPID: pidMax() - 1}
	if f := nearMax.floor(); f != 0 {
		t.Fatalf("floor of a mark one pid below pid_max, a fork ago = %d, want 0", f)
	}
	if f := (ForkMark{}).floor(); f != 0 {
		t.Fatalf("floor of no mark = %d, want 0", f)
	}
}
