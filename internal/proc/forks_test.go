package proc

import (
	"testing"
)

// TestForkMarkFloor: a process started after the mark lies above its
// floor; a mark that cannot rule out a wrap-around of pids gives none.
func TestForkMarkFloor(t *testing.T) {
	m := MarkForks()
	if m.lastPID == 0 {
		t.Skip("/proc does not tell the fork count and the last pid here")
	}
	pid := startJob(t, "req_forkmark_test", -1)
	f := m.floor()
	if f == 0 || pid <= f {
		t.Fatalf("floor %d (mark %+v), child pid %d: want a floor below the child", f, m, pid)
	}
	if got := scanJobs(f)["req_forkmark_test"]; len(got) != 1 || got[0] != pid {
		t.Fatalf("scanJobs(floor %d) = %v, want [%d]", f, got, pid)
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
