package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/jepsen"
	"github.com/lockledger/lockledger/internal/proc"
)

// harnessEnv makes the test binary the harness (run), so that the test
// runs the real one, and its JOB too (JobMain).
const harnessEnv = "JEPSEN_TEST_HARNESS"

func TestMain(m *testing.M) {
	jepsen.JobMain()
	if os.Getenv(harnessEnv) == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// A harness that fails while its trials run (here a TERM, which ends its
// class with an error) stops everything it started before it exits: no
// descendant of it still runs (this test is their subreaper, so that an
// orphan stays one of its children), and its work directory and its
// cluster's are gone.
func TestFailedRunStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and starts a PostgreSQL cluster")
	}
	if err := proc.BecomeSubreaper(); err != nil {
		t.Skip("no child subreaper:", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The harness's temporary directory; the server user (pgtest runs
	// postgres as one when this is root) must be able to enter it.
	work, err := os.MkdirTemp("", "jepsen-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "stderr")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(self, "-store", "postgres", "-faults", "kill-run", "-trials", "1000", "-parallel", "1",
		"-clients", "2", "-seed", "1")
	cmd.Env = append(os.Environ(), harnessEnv+"=1", "TMPDIR="+work)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { stopSurvivors(t) })

	// Its trials run once one of its build's processes (a run) is its
	// child.
	deadline := time.Now().Add(3 * time.Minute)
	for !runsChild(cmd.Process.Pid) {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the harness ended (%v) before its first run:\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no run started within 3 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	log, _ := os.ReadFile(logPath)
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("exit %v, want 2\n%s", err, log)
	}
	for _, pid := range survivors() {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		t.Errorf("still running after the harness exited: %d %q", pid, cmdline)
	}
	// The initdb template is pgtest's cache, kept on purpose.
	left, _ := os.ReadDir(work)
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), "lockledger-pgtest-initdb-") {
			t.Errorf("left behind in TMPDIR: %s", e.Name())
		}
	}
}

// runsChild reports whether one of pid's children is a lockledger
// process (the harness's build, in its work directory).
func runsChild(pid int) bool {
	names, _ := os.ReadDir("/proc")
	for _, e := range names {
		child, err := strconv.Atoi(e.Name())
		if err != nil || proc.ReadStat(child).PPID != pid {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && filepath.Base(exe) == "lockledger" {
			return true
		}
	}
	return false
}

// survivors are this process's children still running: as the subreaper,
// every orphaned descendant of the harness is one.
func survivors() []int {
	proc.ReapExited(0)
	var out []int
	names, _ := os.ReadDir("/proc")
	for _, e := range names {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && proc.ReadStat(pid).PPID == os.Getpid() && proc.Running(pid, "") {
			out = append(out, pid)
		}
	}
	return out
}

// stopSurvivors kills and reaps what survived, so that a failure of this
// test leaves nothing running either.
func stopSurvivors(t *testing.T) {
	for _, pid := range survivors() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			t.Log("reaping", pid, err)
		}
	}
}
