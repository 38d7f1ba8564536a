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
