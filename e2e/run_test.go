package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
)

func TestRunPropagatesExitCodes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, c := range []struct {
		script string
		code   int
		result string
	}{
		{"exit 0", 0, "success"},
		{"exit 7", 7, "failure"},
		{"kill -9 $$", 137, "failure"},
	} {
		clitest.Must(t, c.code, root, "run", "job", "--", "sh", "-c", c.script)
		rel := lastBody(t, root, "lock_released")
		if rel["result"] != c.result || int(rel["exit_code"].(float64)) != c.code {
			t.Errorf("%s: released with %v/%v, want %s/%d", c.script, rel["result"], rel["exit_code"], c.result, c.code)
		}
	}
	r := clitest.Must(t, 0, root, "run", "env-check", "--", "sh", "-c", `test "$LOCKLEDGER_LOCK" = env-check && test -n "$LOCKLEDGER_REQUEST_ID" && echo "$LOCKLEDGER_FENCING_TOKEN"`)
	if tok, err := strconv.Atoi(strings.TrimSpace(r.Stdout)); err != nil || tok < 1 {
		t.Fatalf("child saw fencing token %q", r.Stdout)
	}
	n := clitest.EventCount(t, root)
	clitest.Must(t, 127, root, "run", "job", "--", "no-such-command-anywhere")
	clitest.Must(t, 2, root, "run", "job")
	clitest.Must(t, 2, root, "run", "job", "--on-lost", "shrug", "--", "true")
	if got := clitest.EventCount(t, root); got != n {
		t.Fatalf("a run that never started wrote %d events", got-n)
	}
	assertChain(t, root)
}

// startRun starts `lockledger run` in the background; its stdout lines arrive on the channel.
func startRun(t *testing.T, root string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	c := clitest.Command(context.Background(), root, append([]string{"run"}, args...)...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c, lines
}

func line(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("run exited before printing")
		}
		return l
	case <-time.After(3 * time.Minute): // a run's open and acquire, by the race-built CLI on a loaded machine
		t.Fatal("timed out waiting for the child's output")
	}
	return ""
}

func exitOf(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatal("run did not exit")
	}
	return -1
}

// gone reports a process that no longer runs (absent, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

func awaitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunStopsTheWholeGroupWhenTheLockIsStolen(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	// A TTL long enough that no heartbeat is late on a loaded machine: the
	// lock is lost to the steal, not to the local deadline.
	runner, lines := startRun(t, root, "deploy", "--ttl", "10", "--kill-grace", "2s", "--",
		"sh", "-c", `sleep 100 & echo $!; wait`)
	grandchild, err := strconv.Atoi(line(t, lines))
	if err != nil {
		t.Fatal(err)
	}
	clitest.Must(t, 0, root, "steal", "deploy", "--active", "--yes", "--reason", "test: take it", "--pid", strconv.Itoa(os.Getpid()))
	if code := exitOf(t, runner); code != 5 {
		t.Fatalf("runner exit %d after its lock was stolen, want 5", code)
	}
	awaitGone(t, grandchild)
	hf := lastBody(t, root, "heartbeat_failed")
	if hf["lock_lost"] != true {
		t.Fatalf("heartbeat_failed: %v, want lock_lost", hf)
	}
}

func TestRunnerKilledTakesItsChildAndIsReaped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runner, lines := startRun(t, root, "batch", "--", "sh", "-c", `echo $$; exec sleep 100`)
	child, err := strconv.Atoi(line(t, lines))
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	awaitGone(t, child)
	r := clitest.Must(t, 0, root, "acquire", "batch", "--json", "--pid", strconv.Itoa(os.Getpid()))
	var o map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || o["reason"] != "holder_dead" {
		t.Fatalf("acquire after the runner died: %v %s", err, r.Stdout)
	}
}

// TestRunnerKilledLeavesItsJobHoldingTheLock: SIGKILL reaches only the
// runner (and, by Pdeathsig, its direct child); a process the command had
// started in the background survives. As with a descriptor inherited from
// flock(1), that process keeps the lock held: the next acquire is refused
// and says which processes hold it, status lists them, and once they exit
// the lock is reaped as holder_dead.
func TestRunnerKilledLeavesItsJobHoldingTheLock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runner, lines := startRun(t, root, "batch", "--ttl", "60", "--", "sh", "-c", `sleep 300 & echo $$ $!; wait`)
	var child, grandchild int
	if _, err := fmt.Sscan(line(t, lines), &child, &grandchild); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	awaitGone(t, child)
	self := strconv.Itoa(os.Getpid())
	r := clitest.Run(t, root, "acquire", "batch", "--pid", self)
	if r.Code != 3 || !strings.Contains(r.Stderr, "processes it started still run") || !strings.Contains(r.Stderr, strconv.Itoa(grandchild)) {
		t.Fatalf("acquire while the killed runner's job still runs: exit %d, want 3 naming pid %d\nstderr: %s", r.Code, grandchild, r.Stderr)
	}
	st := statusJSON(t, root, "batch")
	if st["state"] != "held" || fmt.Sprint(st["job_pids"]) != fmt.Sprintf("[%d]", grandchild) {
		t.Fatalf("status while the job runs: state %v job_pids %v, want held and [%d]", st["state"], st["job_pids"], grandchild)
	}
	if err := syscall.Kill(grandchild, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, grandchild)
	r = clitest.Must(t, 0, root, "acquire", "batch", "--json", "--pid", self)
	var o map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || o["reason"] != "holder_dead" {
		t.Fatalf("acquire once the job is gone: %v %s, want a holder_dead take-over", err, r.Stdout)
	}
}

func TestRunForwardsTermAndReleasesAsCancelled(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	runner, lines := startRun(t, root, "svc", "--", "sh", "-c",
		`trap 'echo got-term; exit 143' TERM; echo ready; while :; do sleep 0.05; done`)
	if got := line(t, lines); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	if err := runner.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := line(t, lines); got != "got-term" {
		t.Fatalf("child said %q after TERM, want got-term", got)
	}
	if code := exitOf(t, runner); code != 143 {
		t.Fatalf("runner exit %d, want the child's 143", code)
	}
	rel := lastBody(t, root, "lock_released")
	if rel["result"] != "cancelled" || rel["exit_code"].(float64) != 143 {
		t.Fatalf("release after TERM: %v, want cancelled/143", rel)
	}
}

// A run started with HUP and INT ignored (nohup; an asynchronous command
// of a script without job control, which sh starts with INT ignored)
// leaves them ignored, its command's too, as flock does: a run that
// handled them forwarded the terminal's hang-up to the command nohup was
// for and released its lock as cancelled, and started the command with
// both back at their default.
func TestRunStartedWithSignalsIgnoredKeepsThemIgnored(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	c := clitest.Command(context.Background(), root, "run", "nohup", "--", "sh", "-c",
		`echo "$(grep SigIgn /proc/$$/status)"; while [ ! -e "$0/go" ]; do sleep 0.02; done; echo done`, dir)
	c.Args = append([]string{"sh", "-c", `trap "" HUP INT; exec "$0" "$@"`, c.Path}, c.Args[1:]...)
	c.Path = "/bin/sh"
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill() })
	lines := bufio.NewScanner(out)
	// SigIgn's bits: 1<<(N-1) for signal N, HUP 1 and INT 2.
	const hupINT = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1)
	ignored := func(who, status string) {
		t.Helper()
		_, hex, _ := strings.Cut(status, "SigIgn:")
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil || mask&hupINT != hupINT {
			t.Fatalf("%s: %q, want HUP and INT ignored (%x)", who, status, hupINT)
		}
	}
	if !lines.Scan() {
		t.Fatal("the command said nothing")
	}
	ignored("the command", lines.Text())
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	_, runs, _ := strings.Cut(string(b), "SigIgn:")
	runs, _, _ = strings.Cut(runs, "\n")
	ignored("run", "SigIgn:"+runs)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if err := c.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() || lines.Text() != "done" {
		t.Fatalf("the command ended before it was done (%q)", lines.Text())
	}
	if code := exitOf(t, c); code != 0 {
		t.Fatalf("run exit %d, want 0", code)
	}
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "success" {
		t.Fatalf("release after HUP and INT: %v, want success", rel)
	}
}

func TestRunWaitersNeverOverlap(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "intervals")
	script := `echo "start $(date +%s%N)" >> "$LOG"; sleep 0.3; echo "end $(date +%s%N)" >> "$LOG"`
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clitest.Command(context.Background(), root, "run", "serial", "--wait", "60s", "--", "sh", "-c", script)
			c.Env = append(c.Env, "LOG="+log)
			if err := c.Run(); err != nil {
				codes[i] = -1
			}
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("runner %d failed", i)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 12 {
		t.Fatalf("interval log: %q", data)
	}
	// Lines alternate start/end when no two children overlapped.
	var prevEnd int64
	for i := 0; i < len(fields); i += 4 {
		if fields[i] != "start" || fields[i+2] != "end" {
			t.Fatalf("overlap: %q", data)
		}
		s, _ := strconv.ParseInt(fields[i+1], 10, 64)
		e, _ := strconv.ParseInt(fields[i+3], 10, 64)
		if s < prevEnd || e < s {
			t.Fatalf("overlapping intervals: %q", data)
		}
		prevEnd = e
	}
}

func TestRunWaitGivesUpWithBlockedEvent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "busy", "--pid", strconv.Itoa(os.Getpid()))
	start := time.Now()
	clitest.Must(t, 3, root, "run", "busy", "--wait", "3s", "--", "true")
	took := time.Since(start)
	b := lastBody(t, root, "acquire_blocked")
	waited := b["waited_seconds"].(float64)
	// Starting the command counts against --wait: on a loaded machine the
	// wait itself may be shorter (at a load of 45 the start took 2.5 s),
	// never longer than the whole run.
	if waited < 0.25 || waited > took.Seconds() || took < 2900*time.Millisecond {
		t.Fatalf("gave up after %s with waited_seconds %v, want about 3s", took, waited)
	}
	if got := clitest.Unqueued(t, root); len(got) != 2 {
		t.Fatalf("events %v (without the queue's records): want lock_acquired and one acquire_blocked", got)
	}
}

func TestRunHeartbeatsKeepAShortTTL(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	// Short, but not so short that a loaded machine makes a heartbeat late:
	// 6 s, or ten of this machine's writes now if that is longer.
	ttl := max(6*time.Second, (10 * writePace(t)).Round(time.Second))
	t.Logf("ttl %s", ttl)
	runner, lines := startRun(t, root, "long", "--ttl", ttl.String(), "--", "sh", "-c",
		fmt.Sprintf(`echo started; sleep %d; echo done`, int(2*ttl.Seconds())))
	line(t, lines)
	// Past the TTL of the first heartbeat-less window, the lock is still held.
	deadline := time.Now().Add(ttl * 3 / 2)
	for time.Now().Before(deadline) {
		if st := statusJSON(t, root, "long")["state"]; st != "held" {
			t.Fatalf("lock %v while its job runs, want held", st)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if code := exitOf(t, runner); code != 0 {
		t.Fatalf("runner exit %d", code)
	}
	counts := map[string]int{}
	for _, ty := range clitest.Types(t, root) {
		counts[ty]++
	}
	if counts["lock_heartbeat"] < 3 || counts["lock_stolen"] != 0 || counts["heartbeat_failed"] != 0 {
		t.Fatalf("events of a %s job with a %s ttl: %v, want >= 3 heartbeats and no loss", 2*ttl, ttl, counts)
	}
}

// writePace is how long a write by the race-built CLI takes on this
// machine now: the slowest of three acquires, each with its release, on a
// root of their own. Tests whose deadlines are the CLI's own (a TTL that
// heartbeats must keep) scale them by it, so that a loaded machine makes
// them slower, not wrong.
func writePace(t *testing.T) time.Duration {
	t.Helper()
	root := t.TempDir()
	clitest.Race(t, root)
	var slowest time.Duration
	for range 3 {
		began := time.Now()
		rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "pace", "--pid", strconv.Itoa(os.Getpid())).Stdout)
		clitest.Must(t, 0, root, "release", "pace", "--request-id", rid)
		slowest = max(slowest, time.Since(began)/2)
	}
	return slowest
}

// While another process holds the ledger's writer mutex, run's heartbeats
// hang (the busy timeout outlasts the TTL, as with a database behind a cut
// network). run must not wait for them: at its local deadline, ahead of the
// TTL, it stops the command's group and exits 5, before anyone else could
// take the lock. Once the ledger answers again, the lock is taken over with
// a higher fencing token.
func TestRunStopsItsCommandAtTheLocalDeadlineWhenHeartbeatsHang(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	// An 8 s TTL: the local deadline's margin (a quarter of it) covers
	// stopping the group and exiting on a loaded machine.
	runner, lines := startRun(t, root, "deploy", "--ttl", "8s", "--",
		"sh", "-c", `echo "$$ $LOCKLEDGER_FENCING_TOKEN"; exec sleep 60`)
	var child int
	var token int64
	if _, err := fmt.Sscan(line(t, lines), &child, &token); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, root)
	code := exitOf(t, runner)
	exited := time.Now()
	if code != 5 {
		t.Fatalf("run exited %d when no heartbeat got through, want 5", code)
	}
	if !gone(child) || unix.Kill(-child, 0) == nil {
		t.Fatalf("the command (pid %d) or its group outlived run", child)
	}
	// Nothing can have been written since the mutex was taken: the row
	// holds run's last successful heartbeat.
	var hb string
	if err := clitest.DB(t, root).QueryRow(`SELECT heartbeat_at FROM lock_holders WHERE lock_name = 'deploy' AND exclusive = 1`).Scan(&hb); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, hb)
	if err != nil {
		t.Fatal(err)
	}
	if expires := at.Add(8 * time.Second); !exited.Before(expires) {
		t.Fatalf("run exited at %s, not before its lock's TTL ran out (%s)", exited, expires)
	}
	release()
	r := clitest.Must(t, 0, root, "acquire", "deploy", "--json", "--pid", strconv.Itoa(os.Getpid()))
	var o struct {
		FencingToken int64 `json:"fencing_token"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || o.FencingToken <= token {
		t.Fatalf("acquire after the ledger answered again: %v, token %d after run's %d: %s", err, o.FencingToken, token, r.Stdout)
	}
	awaitLossRecorded(t, root, clitest.Strings(t, root, `SELECT request_id FROM events WHERE type = 'lock_acquired'`)[0])
	assertChain(t, root)
}
