package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// startWaiter starts c, a command told to wait for a held lock, and
// returns once it says on stderr that it waits: it logs that once, after
// its first attempt was refused. The scanner reads the rest of its stderr;
// c is killed when the test ends.
func startWaiter(t *testing.T, c *exec.Cmd) *bufio.Scanner {
	t.Helper()
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	lines := bufio.NewScanner(stderr)
	var said []string
	for waiting := false; !waiting; {
		if !lines.Scan() {
			t.Fatalf("the waiter ended without saying it waits (%v):\n%s", lines.Err(), strings.Join(said, "\n"))
		}
		said = append(said, lines.Text())
		waiting = strings.Contains(lines.Text(), "waiting for lock")
	}
	return lines
}

// TestWaitInterruptedBySignalExitsLikeAShell: a real `acquire --wait` or
// `run --wait` blocked on a held lock, then sent SIGINT or SIGTERM, gives
// up the wait at once and exits 128+N as a shell reports a command killed
// by signal N (130, 143), not 3 ("held"). Giving up is recorded as
// acquire_blocked, as a wait that runs out is; the holder keeps the lock
// and run's command never starts.
func TestWaitInterruptedBySignalExitsLikeAShell(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sig  syscall.Signal
		run  bool
	}{
		{"acquire SIGINT", syscall.SIGINT, false},
		{"acquire SIGTERM", syscall.SIGTERM, false},
		{"run SIGINT", syscall.SIGINT, true},
		{"run SIGTERM", syscall.SIGTERM, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			_, holder := startHolder(t, root, "deploy")
			marker := filepath.Join(t.TempDir(), "ran")
			args := []string{"acquire", "deploy", "--wait", "10m"}
			if tc.run {
				args = []string{"run", "deploy", "--wait", "10m", "--", "touch", marker}
			}
			c := clitest.Command(context.Background(), root, args...)
			lines := startWaiter(t, c)
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var rest []string
			for lines.Scan() {
				rest = append(rest, lines.Text())
			}
			if code := exitOf(t, c); code != 128+int(tc.sig) {
				t.Fatalf("%v: exit %d, want %d\nstderr after the signal: %s", args, code, 128+int(tc.sig), strings.Join(rest, "\n"))
			}
			if msg := strings.Join(rest, "\n"); !strings.Contains(msg, "interrupted by "+map[syscall.Signal]string{
				syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tc.sig]) {
				t.Errorf("stderr does not say the wait was interrupted:\n%s", msg)
			}
			types := clitest.Unqueued(t, root)
			if len(types) != 2 || types[1] != "acquire_blocked" {
				t.Fatalf("events %v, want the holder's lock_acquired and the waiter's acquire_blocked", types)
			}
			if st := statusJSON(t, root, "deploy"); st["state"] != "held" || st["request_id"] != holder {
				t.Fatalf("the holder lost its lock: %v", st)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("run's command ran after the wait was interrupted (%v)", err)
			}
		})
	}
}

// TestRunCommandThatCannotStartExitsLikeAShell: 126 for a command that
// exists but cannot be executed, 127 for one that does not exist, with a
// message naming the command and the reason. Found before the lock is
// taken, nothing is taken or recorded; found only by the exec itself (an
// interpreter on the #! line that does not exist), the lock is released at
// once with result failure and that exit code.
func TestRunCommandThatCannotStartExitsLikeAShell(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := t.TempDir()
	plain := filepath.Join(dir, "notes.txt")
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/nonexistent/interpreter\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd    string
		code   int
		reason string
	}{
		{"/etc/passwd", 126, "permission denied"},
		{plain, 126, "permission denied"},
		{dir, 126, "is a directory"},
		{"no-such-command-anywhere", 127, "command not found"},
		{filepath.Join(dir, "missing"), 127, "no such file"},
	} {
		n := clitest.EventCount(t, root)
		r := clitest.Run(t, root, "run", "job", "--", c.cmd, "arg")
		if r.Code != c.code || !strings.Contains(r.Stderr, c.cmd+": ") || !strings.Contains(r.Stderr, c.reason) {
			t.Errorf("run -- %s: exit %d, want %d, and a message naming it and %q\nstderr: %s", c.cmd, r.Code, c.code, c.reason, r.Stderr)
		}
		if got := clitest.EventCount(t, root); got != n {
			t.Errorf("run -- %s wrote %d events", c.cmd, got-n)
		}
	}

	r := clitest.Run(t, root, "run", "job", "--", script)
	if r.Code != 126 || !strings.Contains(r.Stderr, script+": ") || !strings.Contains(r.Stderr, "interpreter") {
		t.Fatalf("run -- %s: exit %d, want 126 naming it and its interpreter\nstderr: %s", script, r.Code, r.Stderr)
	}
	rel := lastBody(t, root, "lock_released")
	if rel["result"] != "failure" || rel["exit_code"] != float64(126) || rel["failure_step"] != "exec" {
		t.Fatalf("released with %v", rel)
	}
	if st := statusJSON(t, root, "job"); st["state"] != "free" {
		t.Fatalf("after a command that could not start: %v", st)
	}
	clitest.Must(t, 0, root, "run", "job", "--", "true")
	assertChain(t, root)
}
