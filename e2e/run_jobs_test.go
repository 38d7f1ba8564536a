package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// marks reads the lines jobs appended to a shared file, in the order written.
func marks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// seqOf is the seq of the last event of type typ for request req.
func seqOf(t *testing.T, root, typ, req string) int64 {
	t.Helper()
	var seq int64
	if err := clitest.DB(t, root).QueryRow(`SELECT seq FROM events WHERE type = ? AND request_id = ? ORDER BY seq DESC LIMIT 1`,
		typ, req).Scan(&seq); err != nil {
		t.Fatalf("no %s event of %s: %v", typ, req, err)
	}
	return seq
}

func pidsOf(body map[string]any) []int {
	var out []int
	for _, p := range body["pids"].([]any) {
		out = append(out, int(p.(float64)))
	}
	return out
}

// checkDaemon checks what a run did with the daemon its command started
// outside its process group, whose pid the command printed (then, with
// withRequest, LOCKLEDGER_REQUEST_ID, the holding's request id): the
// daemon, killed when the test ends, is gone unless action is
// left_running, and the last job_processes records action for it (for
// that request, and before the release, with withRequest).
func checkDaemon(t *testing.T, root, stdout, action string, withRequest bool) {
	t.Helper()
	printed := strings.Fields(stdout)
	if len(printed) == 0 {
		t.Fatalf("the command printed no daemon: %q", stdout)
	}
	daemon, err := strconv.Atoi(printed[0])
	if err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
	if withRequest != (len(printed) == 2) || len(printed) > 2 {
		t.Fatalf("the command printed %q: want the daemon's pid, then, with the request id, LOCKLEDGER_REQUEST_ID", stdout)
	}
	if stopped := action != "left_running"; gone(daemon) != stopped {
		t.Fatalf("the daemon %d after run exited: gone %v, want %v (%s)", daemon, !stopped, stopped, action)
	}
	jp := lastBody(t, root, "job_processes")
	if jp["action"] != action || !slices.Contains(pidsOf(jp), daemon) {
		t.Fatalf("job_processes %v: want daemon %d %s", jp, daemon, action)
	}
	if !withRequest {
		return
	}
	req := printed[1]
	if jp["job_request_id"] != req {
		t.Fatalf("job_processes %v: want %s's", jp, req)
	}
	if jpSeq, rel := seqOf(t, root, "job_processes", req), seqOf(t, root, "lock_released", req); jpSeq > rel {
		t.Fatalf("job_processes at seq %d after the release at %d", jpSeq, rel)
	}
}

// waitKilled waits for c and reports whether SIGKILL ended it.
func waitKilled(t *testing.T, c *exec.Cmd) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return false
		}
		ws, ok := ee.Sys().(syscall.WaitStatus)
		return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
	case <-time.After(60 * time.Second):
		t.Fatal("run did not exit")
	}
	return false
}

// TestSupersedingRunStartsAfterTheOlderJobHasStopped: the older job takes
// two seconds to finish after TERM; the newer run's command starts only
// after its last write, so the shared file shows the two jobs in sequence.
func TestSupersedingRunStartsAfterTheOlderJobHasStopped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "marks")
	older, lines := startRun(t, root, "issue-7", "--ttl", "60", "--kill-grace", "30s", "--", "sh", "-c",
		`trap 'echo old-term >> "$1"; sleep 2; echo old-end >> "$1"; exit 0' TERM
		echo old-start >> "$1"; echo started; while :; do sleep 0.1; done`, "sh", file)
	line(t, lines)
	clitest.Must(t, 0, root, "run", "issue-7", "--supersede", "--kill-grace", "30s", "--",
		"sh", "-c", `echo new-start >> "$1"`, "sh", file)
	if code := exitOf(t, older); code != 5 {
		t.Fatalf("superseded runner exit %d, want 5", code)
	}
	want := []string{"old-start", "old-term", "old-end", "new-start"}
	if got := marks(t, file); !slices.Equal(got, want) {
		t.Fatalf("the jobs wrote %q, want %q: the newer job must start after the older one's last write", got, want)
	}
	if n := clitest.Strings(t, root, `SELECT type FROM events WHERE type = 'job_processes'`); len(n) != 0 {
		t.Fatalf("an older job that stopped within the grace recorded %d job_processes", len(n))
	}
	assertChain(t, root)
}

// TestSupersedingRunKillsAnOlderJobThatOutlivesTheGrace: the older job
// ignores TERM and its runner would wait a minute before KILL; the newer
// run waits its own grace (and the margin for the older runner to
// notice), then kills the job and its runner, records that, and only then
// starts its command.
func TestSupersedingRunKillsAnOlderJobThatOutlivesTheGrace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	file := filepath.Join(t.TempDir(), "marks")
	older, lines := startRun(t, root, "issue-8", "--ttl", "60", "--kill-grace", "60s", "--", "sh", "-c",
		`trap '' TERM; echo $$ "$LOCKLEDGER_REQUEST_ID"; while :; do echo old >> "$1"; sleep 0.1; done`, "sh", file)
	var job int
	var oldReq string
	if _, err := fmt.Sscan(line(t, lines), &job, &oldReq); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(job, syscall.SIGKILL) })
	r := clitest.Must(t, 0, root, "run", "issue-8", "--supersede", "--kill-grace", "1s", "--",
		"sh", "-c", `echo new-start >> "$1"; echo "$LOCKLEDGER_REQUEST_ID"`, "sh", file)
	newReq := strings.TrimSpace(r.Stdout)
	if !waitKilled(t, older) {
		t.Fatal("the superseded runner was not killed")
	}
	got := marks(t, file)
	if len(got) < 2 || got[len(got)-1] != "new-start" || slices.Index(got, "new-start") != len(got)-1 {
		t.Fatalf("the jobs wrote %q: the newer job must start after the older one's last write", got)
	}
	jp := lastBody(t, root, "job_processes")
	pids := pidsOf(jp)
	if jp["job_request_id"] != oldReq || jp["action"] != "killed" || !slices.Contains(pids, job) ||
		!slices.Contains(pids, older.Process.Pid) || !strings.Contains(jp["note"].(string), "outlived the grace") {
		t.Fatalf("job_processes %v: want the older request %s killed, pids with its command %d and runner %d",
			jp, oldReq, job, older.Process.Pid)
	}
	if jpSeq, start := seqOf(t, root, "job_processes", newReq), seqOf(t, root, "lock_stolen", newReq); jpSeq < start {
		t.Fatalf("job_processes at seq %d before the steal at %d", jpSeq, start)
	}
	if !strings.Contains(r.Stderr, "outlived the grace") {
		t.Fatalf("the newer run did not say it killed the older job:\n%s", r.Stderr)
	}
	assertChain(t, root)
}

// leftGroup waits until the background process $! has left the shell's
// process group (setsid has run: its session, field 6 of its stat, is its
// own pid); until then stopping the group would stop it too.
const leftGroup = `until [ "$(cut -d' ' -f6 /proc/$!/stat)" = "$!" ]; do sleep 0.01; done;`

// TestRunStopsProcessesThatLeftItsGroupBeforeTheRelease: a daemon started
// with setsid leaves the command's process group, so stopping the group
// misses it; it still carries LOCKLEDGER_REQUEST_ID, and run stops it after
// the command exits, recording job_processes before the release.
func TestRunStopsProcessesThatLeftItsGroupBeforeTheRelease(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.Must(t, 0, root, "run", "daemonish", "--kill-grace", "5s", "--", "sh", "-c",
		`setsid sleep 300 >/dev/null 2>&1 & `+leftGroup+` echo $! "$LOCKLEDGER_REQUEST_ID"`)
	checkDaemon(t, root, r.Stdout, "terminated", true)
	assertChain(t, root)
}

// TestRunKillsProcessesThatLeftItsGroupAndIgnoreTerm: past the grace, KILL.
func TestRunKillsProcessesThatLeftItsGroupAndIgnoreTerm(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	r := clitest.Must(t, 0, root, "run", "stubborn", "--kill-grace", "1s", "--", "sh", "-c",
		`setsid sh -c 'trap "" TERM; echo > "$1"; while :; do sleep 0.1; done' sh "$1" >/dev/null 2>&1 &
		until [ -s "$1" ]; do sleep 0.01; done; echo $!`, "sh", ready)
	checkDaemon(t, root, r.Stdout, "killed", false)
}

// TestRunLeaveRunningRecordsTheProcessesItLeaves: --leave-running keeps a
// daemon that left the group alive, and says so in the ledger.
func TestRunLeaveRunningRecordsTheProcessesItLeaves(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.Must(t, 0, root, "run", "daemonish", "--leave-running", "--", "sh", "-c",
		`setsid sleep 300 >/dev/null 2>&1 & `+leftGroup+` echo $! "$LOCKLEDGER_REQUEST_ID"`)
	checkDaemon(t, root, r.Stdout, "left_running", true)
}

// awaitSteals waits until lock has n lock_stolen events.
func awaitSteals(t *testing.T, root, lock string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM events WHERE type = 'lock_stolen' AND lock_name = ?`,
			lock).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lock_stolen events, want %d", lock, got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitMark waits until the jobs' shared file has the line want.
func awaitMark(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && slices.Contains(strings.Fields(string(b)), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s", want, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChainedSupersedeStartsTheNewestJobAfterEveryOlderJobHasStopped: A
// runs; B supersedes it and waits for A to stop; C supersedes B while B
// still waits. B never started its command, but A still runs: C must wait
// for A too, so the shared file shows A's last write before C's first.
func TestChainedSupersedeStartsTheNewestJobAfterEveryOlderJobHasStopped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := t.TempDir()
	file, gate := filepath.Join(dir, "marks"), filepath.Join(dir, "gate")
	// A stops only once the gate exists, and then takes a while.
	job := `trap 'echo "$2-term" >> "$1"; until [ -e "$3" ]; do sleep 0.05; done; sleep 2; echo "$2-end" >> "$1"; exit 0' TERM
		echo "$2-start" >> "$1"; echo started; while :; do sleep 0.1; done`
	a, aLines := startRun(t, root, "chain", "--ttl", "60", "--kill-grace", "60s", "--", "sh", "-c", job, "sh", file, "A", gate)
	line(t, aLines)
	b, _ := startRun(t, root, "chain", "--supersede", "--ttl", "60", "--kill-grace", "60s", "--", "sh", "-c", job, "sh", file, "B", gate)
	awaitMark(t, file, "A-term")
	c, _ := startRun(t, root, "chain", "--supersede", "--ttl", "60", "--kill-grace", "60s", "--",
		"sh", "-c", `echo C-start >> "$1"`, "sh", file)
	awaitSteals(t, root, "chain", 2)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c); code != 0 {
		t.Fatalf("the newest run exited %d, want 0", code)
	}
	if code := exitOf(t, b); code != 5 {
		t.Fatalf("the run superseded while waiting exited %d, want 5", code)
	}
	if code := exitOf(t, a); code != 5 {
		t.Fatalf("the oldest run exited %d, want 5", code)
	}
	want := []string{"A-start", "A-term", "A-end", "C-start"}
	if got := marks(t, file); !slices.Equal(got, want) {
		t.Fatalf("the jobs wrote %q, want %q: C must start after A's last write, and B never", got, want)
	}
	assertChain(t, root)
}

// TestChainedSupersedeKillsEveryOlderJobThatOutlivesTheGrace: A ignores
// TERM and its runner and B's would wait a minute; C, with a short grace,
// kills A's job as well as the runners, records it against A's request,
// and only then starts its command.
func TestChainedSupersedeKillsEveryOlderJobThatOutlivesTheGrace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "marks")
	a, aLines := startRun(t, root, "chain", "--ttl", "60", "--kill-grace", "60s", "--", "sh", "-c",
		`trap 'echo A-term >> "$1"' TERM; echo $$ "$LOCKLEDGER_REQUEST_ID"; while :; do echo A >> "$1"; sleep 0.1; done`, "sh", file)
	var job int
	var aReq string
	if _, err := fmt.Sscan(line(t, aLines), &job, &aReq); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(job, syscall.SIGKILL) })
	b, _ := startRun(t, root, "chain", "--supersede", "--ttl", "60", "--kill-grace", "60s", "--",
		"sh", "-c", `echo B-start >> "$1"`, "sh", file)
	awaitMark(t, file, "A-term")
	r := clitest.Must(t, 0, root, "run", "chain", "--supersede", "--kill-grace", "1s", "--",
		"sh", "-c", `echo C-start >> "$1"`, "sh", file)
	if !waitKilled(t, a) {
		t.Fatal("the oldest runner was not killed")
	}
	if !waitKilled(t, b) {
		t.Fatal("the runner superseded while waiting was not killed")
	}
	got := marks(t, file)
	if slices.Contains(got, "B-start") || got[len(got)-1] != "C-start" || slices.Index(got, "C-start") != len(got)-1 {
		t.Fatalf("the jobs wrote %q: C must start after A's last write, and B never", got)
	}
	found := false
	for _, body := range clitest.Strings(t, root, `SELECT body FROM events WHERE type = 'job_processes'`) {
		if strings.Contains(body, aReq) && strings.Contains(body, `"killed"`) && strings.Contains(body, strconv.Itoa(job)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no job_processes records A's job %d (%s) killed", job, aReq)
	}
	if !strings.Contains(r.Stderr, "outlived the grace") {
		t.Fatalf("the newest run did not say it killed the older jobs:\n%s", r.Stderr)
	}
	assertChain(t, root)
}
