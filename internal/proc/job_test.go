package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestJobProcessesNeverAnswersNoneFromAnOldScan: a process started with a
// job's LOCKLEDGER_REQUEST_ID right after a scan that found none is found
// at once; an answer of "none" from that earlier scan could let a waiter
// judge a killed runner dead while its job still runs.
func TestJobProcessesNeverAnswersNoneFromAnOldScan(t *testing.T) {
	id := fmt.Sprintf("req_jobprobe_%d_%d", os.Getpid(), time.Now().UnixNano())
	p := &Local{}
	if got := p.JobProcesses(id); len(got) != 0 {
		t.Fatalf("job processes of a fresh request id: %v", got)
	}
	pid := startJob(t, id, -1)
	if got := p.JobProcesses(id); !slices.Contains(got, pid) {
		t.Fatalf("job processes right after one started: %v, want %d", got, pid)
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
	pid := startJob(t, id, -1)
	if got := scanJobs(0)[id]; len(got) != 1 || got[0] != pid {
		t.Fatalf("scanJobs(0)[%q] = %v, want [%d]", id, got, pid)
	}
	if got := scanJobs(pid)[id]; len(got) != 0 {
		t.Fatalf("scanJobs(%d)[%q] = %v, want none (at or below the floor)", pid, id, got)
	}
}

// startJob starts a shell carrying requestID, as uid (-1: this
// process's), and returns its pid once the shell says it has started:
// Start returns as soon as the kernel has begun the exec, before the new
// program's environment is readable in /proc.
func startJob(t *testing.T, requestID string, uid int) int {
	t.Helper()
	c := exec.Command("sh", "-c", "echo started; read x")
	c.Env = append(os.Environ(), JobEnv+"="+requestID)
	if uid >= 0 {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = c.Process.Kill(); _ = c.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		t.Fatalf("the job's first line: %q, %v", line, err)
	}
	return c.Process.Pid
}

// nobody is the uid of the user "nobody".
const nobody = 65534

// TestJobScanIgnoresAnotherUsersProcess: anyone can start a process
// carrying a run's request id. One of another user is not the job's: it
// does not keep the run's lock held, and is neither awaited nor stopped as
// the job's.
func TestJobScanIgnoresAnotherUsersProcess(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("starting a process of another user takes root")
	}
	id := fmt.Sprintf("req_otheruser_%d_%d", os.Getpid(), time.Now().UnixNano())
	mine := startJob(t, id, -1)
	theirs := startJob(t, id, nobody)
	if uid, ok := UID(theirs); !ok || uid != nobody {
		t.Fatalf("UID(%d) = %d, %v; want %d", theirs, uid, ok, nobody)
	}
	want := []int{mine}
	if got := JobPIDs(id); !slices.Equal(got, want) {
		t.Errorf("JobPIDs = %v, want %v (not %d, another user's)", got, want, theirs)
	}
	if got := (&Local{}).JobProcesses(id); !slices.Equal(got, want) {
		t.Errorf("JobProcesses = %v, want %v (not %d, another user's)", got, want, theirs)
	}
	stopped := StopJob(context.Background(), id, 0, time.Second)
	if !slices.Equal(stopped.PIDs, want) || stopped.Killed {
		t.Errorf("StopJob = %+v, want %v stopped with TERM", stopped, want)
	}
	if !Running(theirs, "") {
		t.Errorf("StopJob stopped another user's process %d", theirs)
	}
	if got := JobPIDs(id); len(got) != 0 {
		t.Errorf("JobPIDs once the job is stopped = %v, want none", got)
	}
}
