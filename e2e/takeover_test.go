package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
)

// The test binary started with E2E_TAKEOVER_WRITER=TAG is a job that
// appends "TAG NANOSECONDS" lines to E2E_TAKEOVER_FILE every 2 ms, the
// time read from CLOCK_MONOTONIC (one clock for every process of the
// machine, unlike the wall clock), E2E_TAKEOVER_COUNT lines (0: until
// killed). It says "started PID" on stdout after its first line.
const (
	writerEnv      = "E2E_TAKEOVER_WRITER"
	writerFileEnv  = "E2E_TAKEOVER_FILE"
	writerCountEnv = "E2E_TAKEOVER_COUNT"
)

func init() {
	if tag := os.Getenv(writerEnv); tag != "" {
		os.Exit(writeMarksJob(tag, os.Getenv(writerFileEnv), os.Getenv(writerCountEnv)))
	}
}

func writeMarksJob(tag, path, count string) int {
	n, _ := strconv.Atoi(count)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; n == 0 || i < n; i++ {
		if _, err := fmt.Fprintf(f, "%s %d\n", tag, monotonic()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if i == 0 {
			fmt.Printf("started %d\n", os.Getpid())
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}

// monotonic is CLOCK_MONOTONIC in nanoseconds.
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// writerCommand is the job writing tag's lines to file (count 0: until stopped).
func writerCommand(t *testing.T, tag, file string, count int) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", writerEnv + "=" + tag, writerFileEnv + "=" + file, writerCountEnv + "=" + strconv.Itoa(count), self}
}

// takeover is one trial's outcome.
type takeover struct {
	overlap bool          // an old line was written after the first new line
	gone    time.Duration // from the take-over request to the old job gone
}

// TestForcedTakeOverStopsTheStaleHoldersJobFirst: a run (TTL 4 s) whose job
// writes a line every 2 ms is paused with SIGSTOP (the run alone: a stuck
// runner; or the run and its job's group: a frozen host) past its TTL;
// run --force, acquire --force or steal then takes the lock on this host
// and starts a job writing "new" lines. No old line may follow the first
// new one, by CLOCK_MONOTONIC and by the file's order, even once the
// paused processes are continued (the host wakes up): the old job is gone
// before the take-over returns, its run killed, and that is recorded.
func TestForcedTakeOverStopsTheStaleHoldersJobFirst(t *testing.T) {
	t.Parallel()
	trials := 6
	if stressed() {
		trials = 100
	}
	var mu sync.Mutex
	var results []takeover
	t.Run("trials", func(t *testing.T) {
		for _, frozen := range []bool{false, true} {
			for i := range trials {
				via := []string{"run", "acquire", "steal"}[i%3]
				name := fmt.Sprintf("paused-%s-%d", via, i)
				if frozen {
					name = fmt.Sprintf("frozen-%s-%d", via, i)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					r := takeOverPaused(t, t.TempDir(), name, via, frozen)
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				})
			}
		}
	})
	if len(results) == 0 {
		return
	}
	overlaps := 0
	var gone []time.Duration
	for _, r := range results {
		if r.overlap {
			overlaps++
		}
		gone = append(gone, r.gone)
	}
	slices.Sort(gone)
	pct := func(p int) time.Duration { return gone[min(len(gone)-1, len(gone)*p/100)] }
	t.Logf("%d trials, %d overlaps; take-over request to old job gone: p50 %s, p99 %s, max %s",
		len(results), overlaps, pct(50).Round(time.Millisecond), pct(99).Round(time.Millisecond), gone[len(gone)-1].Round(time.Millisecond))
}

func takeOverPaused(t *testing.T, root, lock, via string, frozen bool) takeover {
	file := filepath.Join(t.TempDir(), "marks")
	var old *exec.Cmd
	var job int
	for attempt := 1; ; attempt++ {
		var lines <-chan string
		old, lines = startRun(t, root, append([]string{lock, "--ttl", "4s", "--"}, writerCommand(t, "old", file, 0)...)...)
		if l, ok := <-lines; ok {
			var err error
			if job, err = strconv.Atoi(strings.TrimPrefix(l, "started ")); err != nil {
				t.Fatal(err)
			}
			break
		}
		// On a loaded machine a heartbeat may miss the run's deadline (3 s)
		// before the job has started: the run gives up; start again.
		if exitOf(t, old); attempt == 3 {
			t.Fatal("the old run exited before its job started, three times")
		}
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	pauseOutsideWrites(t, old.Process.Pid)
	if frozen {
		// The job is its group's leader (run starts it in a group of its own).
		if err := syscall.Kill(-job, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	wake := func() {
		if !gone(job) {
			_ = syscall.Kill(-job, syscall.SIGCONT)
		}
		_ = old.Process.Signal(syscall.SIGCONT) // our child: its pid is not reused before we wait for it
	}
	defer wake()
	awaitStale(t, root, lock)

	var r takeover
	start := monotonic()
	goneAt := make(chan int64, 1)
	go func() {
		deadline := time.Now().Add(90 * time.Second)
		for !gone(job) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		goneAt <- monotonic()
	}()
	newJob := writerCommand(t, "new", file, 25)
	for deadline := time.Now().Add(20 * time.Second); ; {
		var res clitest.Result
		switch via {
		case "run":
			res = clitest.Run(t, root, append([]string{"run", lock, "--force", "--kill-grace", "5s", "--"}, newJob...)...)
		case "acquire":
			res = clitest.Run(t, root, "acquire", lock, "--force", "--ttl", "60s")
		case "steal":
			res = clitest.Run(t, root, "steal", lock, "--reason", "the holder is paused", "--ttl", "60s")
		}
		if res.Code == 3 && time.Now().Before(deadline) {
			// Not stale yet by the ledger's own clock and precision.
			time.Sleep(50 * time.Millisecond)
			start = monotonic()
			continue
		}
		if res.Code != 0 {
			t.Fatalf("%s: exit %d: %s", via, res.Code, res.Stderr)
		}
		break
	}
	if via != "run" {
		c := exec.Command(newJob[0], newJob[1:]...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("new job: %v: %s", err, out)
		}
	}
	// The host wakes up: whatever is left of the old run and job runs again.
	wake()
	r.gone = time.Duration(<-goneAt - start)
	if !gone(job) {
		t.Fatalf("the old job (pid %d) still runs", job)
	}
	exitOf(t, old)

	var oldLast, newFirst int64
	oldAfterNew := 0
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		tag, ts, _ := strings.Cut(s.Text(), " ")
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			t.Fatalf("line %q", s.Text())
		}
		switch {
		case tag == "new" && newFirst == 0:
			newFirst = n
		case tag == "old" && newFirst != 0:
			oldAfterNew++
		}
		if tag == "old" {
			oldLast = max(oldLast, n)
		}
	}
	if newFirst == 0 {
		t.Fatal("the new job wrote nothing")
	}
	r.overlap = oldAfterNew > 0 || oldLast > newFirst
	if r.overlap {
		t.Errorf("the old job wrote %d lines after the new job's first, the last %s after it",
			oldAfterNew, time.Duration(oldLast-newFirst))
	}
	checkJobStopped(t, root, lock)
	return r
}

// pauseOutsideWrites stops pid with SIGSTOP at a moment it holds no
// flock: a run paused inside a write keeps the root's writer mutex and the
// trust store's heads lock, and nobody on this host could take anything
// over before it runs again (a limit of its own, not what this test is
// about).
func pauseOutsideWrites(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		for !stopped(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d did not stop", pid)
			}
			time.Sleep(time.Millisecond)
		}
		if !holdsFlock(t, pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d held a flock at every pause", pid)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopped reports pid in state T (stopped by a signal).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

// holdsFlock reports a flock(2) lock of pid's in /proc/locks.
func holdsFlock(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[1] == "FLOCK" && f[4] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// awaitStale waits until lock's holder has gone a TTL without a heartbeat
// by its lock file (whose times are whole seconds: one more second).
func awaitStale(t *testing.T, root, lock string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "locks", lock+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	var rec events.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	hb, err := time.Parse(events.LockTimeFormat, rec.LastHeartbeatAt)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(hb.Add(time.Duration(rec.TTLSeconds)*time.Second + time.Second + 50*time.Millisecond)))
}

// checkJobStopped: the take-over recorded the old job's processes as
// stopped, its run among them.
func checkJobStopped(t *testing.T, root, lock string) {
	t.Helper()
	var body []byte
	if err := clitest.DB(t, root).QueryRow(`SELECT body FROM events WHERE type = 'job_processes' AND lock_name = ? ORDER BY seq LIMIT 1`,
		lock).Scan(&body); err != nil {
		t.Fatalf("no job_processes on %s: %v", lock, err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m["action"] != events.JobKilled || len(pidsOf(m)) < 2 {
		t.Errorf("job_processes %v, want the run and its job killed", m)
	}
}

// TestRunSignalledDuringTakeOverDoesNotStartItsCommand: a TERM that reaches
// run while its take-over of a paused holder is still stopping that
// holder's job (the wait has the lock, the command has not started) gives
// the run up: exit 143, the command never started, the lock released.
func TestRunSignalledDuringTakeOverDoesNotStartItsCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const lock = "signalled-takeover"
	// The old job ignores TERM, so stopping it takes the new run's grace.
	old, lines := startRun(t, root, lock, "--ttl", "2s", "--", "sh", "-c", `trap "" TERM; echo started; while :; do sleep 0.05; done`)
	if l := line(t, lines); l != "started" {
		t.Fatalf("old run printed %q", l)
	}
	pauseOutsideWrites(t, old.Process.Pid)
	defer func() { _ = old.Process.Signal(syscall.SIGCONT) }()
	awaitStale(t, root, lock)

	marker := filepath.Join(t.TempDir(), "started")
	var contender *exec.Cmd
	for deadline := time.Now().Add(20 * time.Second); ; {
		contender = clitest.Command(context.Background(), root, "run", lock, "--force", "--kill-grace", "4s", "--", "touch", marker)
		contender.Stderr = os.Stderr
		if err := contender.Start(); err != nil {
			t.Fatal(err)
		}
		// The take-over is committed once lock_stolen is in the log; the
		// old job then holds the contender for its grace.
		stolen := false
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
			if n := countEvents(t, root, lock, "lock_stolen"); n > 0 {
				stolen = true
				break
			}
			if contender.ProcessState != nil {
				break
			}
		}
		if stolen {
			break
		}
		if code := exitOf(t, contender); code != 3 || time.Now().After(deadline) {
			t.Fatalf("run --force exited %d before taking the lock over", code)
		}
	}
	if err := contender.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, contender); code != 128+int(syscall.SIGTERM) {
		t.Errorf("run signalled during its take-over: exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command started although run was signalled before it did")
	}
	if st := clitest.Run(t, root, "status", lock, "--json"); !strings.Contains(st.Stdout, `"state": "free"`) && !strings.Contains(st.Stdout, `"state":"free"`) {
		t.Errorf("the lock after the signalled run: %s", st.Stdout)
	}
}

func countEvents(t *testing.T, root, lock, typ string) int {
	t.Helper()
	var n int
	if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM events WHERE type = ? AND lock_name = ?`, typ, lock).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A line saying that another job may run beside the new holder's is an
// error line, which --quiet shows: the stale holder --force took the lock
// from left running (here the test itself, which runs the taker), and the
// job --supersede took it from not awaited (a holder that is no run).
func TestAJobThatMayRunBesideYoursIsSaidEvenQuietly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())

	clitest.Must(t, 0, root, "acquire", "deploy", "--pid", self, "--ttl", "1")
	awaitStale(t, root, "deploy")
	r := clitest.Must(t, 0, root, "acquire", "deploy", "--force", "--quiet")
	if !strings.Contains(r.Stderr, "the stale holder taken over is left running") {
		t.Errorf("acquire --force --quiet does not say the stale holder is left running:\n%s", r.Stderr)
	}

	clitest.Must(t, 0, root, "acquire", "job", "--pid", self)
	r = clitest.Must(t, 0, root, "run", "job", "--supersede", "--quiet", "--", "true")
	if !strings.Contains(r.Stderr, "the superseded job cannot be awaited") {
		t.Errorf("run --supersede --quiet does not say the superseded job cannot be awaited:\n%s", r.Stderr)
	}
}
