package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/proc"
)

// run on a terminal, in its foreground (as a user types it, or a script
// run from it does), gives the terminal to the command it runs, as flock
// does by running the command in its own process group: a command that
// asks on the terminal (read, a password or "continue? [y/N]" prompt,
// an editor) gets the answer typed, where a command in a process group
// of its own that the terminal does not know is stopped by SIGTTIN, and
// run holds the lock for it forever. Once the command has exited the
// terminal is run's again, and so the next command of the script that ran
// run reads from it too.
func TestRunGivesItsTerminalToTheCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `"$0" "$@"; echo "run-exit-$?"; read after; echo "script-read-$after"`,
		"run", "prompted", "--", "sh", "-c", `read answer; echo "command-read-$answer"`)
	s.typed("yes")
	s.await("command-read-yes")
	s.await("run-exit-0")
	s.typed("next")
	s.await("script-read-next")
	s.exit()
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "success" {
		t.Fatalf("released with %v, want success", rel)
	}
}

// A run whose standard input is not the terminal (a script's "run ... &"
// without job control reads /dev/null) gives the terminal to no one: the
// script, still in the terminal's foreground, reads from it meanwhile.
func TestRunWithoutTheTerminalAsInputKeepsItsScriptsTerminal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `"$0" "$@" </dev/null & read line; echo "script-read-$line"; wait; echo "run-exit-$?"`,
		"run", "background", "--", "sh", "-c", `echo command-started; sleep 2`)
	s.await("command-started")
	s.typed("meanwhile")
	s.await("script-read-meanwhile")
	s.await("run-exit-0")
	s.exit()
}

// Ctrl-Z at a job-control shell stops run and its command as one job:
// the command stays stopped until the shell continues the job (fg), which
// hands the terminal on to it again. run follows the command's stop by
// stopping its own group; a run that handed the terminal back to the
// command and continued it before its own stop took effect left the
// command running on while the shell showed the job stopped.
func TestRunStoppedWithCtrlZStaysStoppedUntilFg(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `set -m; "$0" "$@"; echo "job-stopped"; read go; fg; echo "run-exit-$?"`,
		"run", "suspended", "--", "sh", "-c", `echo command-started; sleep 2; read answer; echo "command-read-$answer"`)
	s.await("command-started")
	if _, err := s.control.Write([]byte{0x1a}); err != nil { // Ctrl-Z (VSUSP)
		t.Fatal(err)
	}
	s.await("job-stopped")
	for _, p := range inSession(s.pid) {
		if p.pid != s.pid && p.state != "T" {
			t.Fatalf("the job is stopped, but %d (%s) is in state %s:\n%s", p.pid, p.cmdline, p.state, s.terminal())
		}
	}
	s.typed("go")
	s.typed("yes")
	s.await("command-read-yes")
	s.await("run-exit-0")
	s.exit()
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "success" {
		t.Fatalf("released with %v, want success", rel)
	}
}

// A run started in the background of a job-control shell ("run ... &"),
// whose command reads from the terminal, stops with it as one job, and
// once brought to the foreground (fg) gives the terminal to its command,
// which reads what is typed: without it the command stayed stopped
// (SIGTTIN) and run held the lock for it forever.
func TestRunStartedInTheBackgroundGivesTheTerminalOnFg(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `set -m; "$0" "$@" & read go; fg; echo "run-exit-$?"`,
		"run", "backgrounded", "--", "sh", "-c", `echo command-started; read answer; echo "command-read-$answer"`)
	s.await("command-started")
	s.typed("go")
	s.typed("yes")
	s.await("command-read-yes")
	s.await("run-exit-0")
	s.exit()
}

// Ctrl-C at the terminal reaches the command in its foreground, and the
// script that ran run too, as it did before the command's group was the
// foreground and as it does around flock(1): sh (without job control) dies
// of it instead of going on to its next command. The lock is released as
// cancelled.
func TestRunCtrlCStopsTheScriptThatRanIt(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `"$0" "$@"; echo "after-run-$?"`,
		"run", "interrupted", "--", "sh", "-c", `echo command-started; sleep 60`)
	s.await("command-started")
	if _, err := s.control.Write([]byte{0x03}); err != nil { // Ctrl-C (VINTR)
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Fatalf("the script ended with %v, want killed by SIGINT:\n%s", err, s.terminal())
		}
	case <-s.ctx.Done():
		t.Fatal("the script did not exit")
	}
	// run releases after its script has gone.
	for len(inSession(s.pid)) > 0 {
		select {
		case <-s.ctx.Done():
			t.Fatalf("still running: %v", inSession(s.pid))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if strings.Contains(s.terminal(), "after-run") {
		t.Fatalf("the script went on after Ctrl-C:\n%s", s.terminal())
	}
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "cancelled" {
		t.Fatalf("released with %v, want cancelled", rel)
	}
}

// TestRunCtrlCStopsABashScriptAndAnOuterRun: Ctrl-C that kills run's
// command in the terminal's foreground stops a bash script that ran run,
// and a script running `run outer -- lockledger run inner -- CMD`, as
// around flock(1): bash goes on after a child that exits 130 (it takes
// that the child handled the signal), and so does an outer run, which
// the terminal did not send it to; run dies of the signal instead. As a
// container's first process (a PID namespace's init), which no signal of
// its own ends, run exits 130 as before.
func TestRunCtrlCStopsABashScriptAndAnOuterRun(t *testing.T) {
	t.Parallel()
	cmd := []string{"sh", "-c", `echo command-started; sleep 60`}
	for _, c := range []struct {
		name, script string
		args         []string
		locks        []string
		init         bool // the script goes on, and shows run's exit code
	}{
		{"a bash script", `exec bash -c '"$0" "$@"; echo "after-run-$?"' "$0" "$@"`,
			append([]string{"run", "interrupted", "--"}, cmd...), []string{"interrupted"}, false},
		{"run inside run", `"$0" "$@"; echo "after-run-$?"`,
			append([]string{"run", "outer", "--", clitest.Bin(), "run", "inner", "--"}, cmd...), []string{"outer", "inner"}, false},
		{"run as a PID namespace's init", `unshare --pid --fork --mount-proc --kill-child "$0" "$@"; echo "after-run-$?"`,
			append([]string{"run", "interrupted", "--"}, cmd...), []string{"interrupted"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.init {
				needPIDNamespaces(t)
			}
			root := t.TempDir()
			s := onTerminal(t, root, c.script, c.args...)
			s.await("command-started")
			if _, err := s.control.Write([]byte{0x03}); err != nil { // Ctrl-C (VINTR)
				t.Fatal(err)
			}
			select {
			case err := <-s.exited:
				var exit *exec.ExitError
				switch {
				case c.init && err != nil:
					t.Fatalf("the script ended with %v, want it to go on:\n%s", err, s.terminal())
				case c.init:
					s.exitErr, s.gone = err, time.Now()
					s.await("after-run-") // the script's last line may still be on its way
					if !strings.Contains(s.terminal(), "after-run-130") {
						t.Fatalf("run as a PID namespace's init did not exit 130:\n%s", s.terminal())
					}
				case !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT:
					t.Fatalf("the script ended with %v, want killed by SIGINT:\n%s", err, s.terminal())
				case strings.Contains(s.terminal(), "after-run"):
					t.Fatalf("the script went on after Ctrl-C:\n%s", s.terminal())
				}
			case <-s.ctx.Done():
				t.Fatal("the script did not exit")
			}
			for len(inSession(s.pid)) > 0 {
				select {
				case <-s.ctx.Done():
					t.Fatalf("still running: %v", inSession(s.pid))
				case <-time.After(20 * time.Millisecond):
				}
			}
			for _, lock := range c.locks {
				var result string
				if err := clitest.DB(t, root).QueryRow(`SELECT body->>'result' FROM events WHERE type = 'lock_released' AND lock_name = ?`, lock).Scan(&result); err != nil || result != "cancelled" {
					t.Errorf("%s released with %q (%v), want cancelled", lock, result, err)
				}
			}
		})
	}
}

// A run left in the background by a shell that has gone (its group
// orphaned: nothing can bring it to the foreground) whose command reads
// from the terminal leaves the command stopped, as the job of a shell
// that has gone: continued, it stopped again at once (SIGTTIN), and run
// burnt a core continuing it over and over. A TERM sent to run ends the
// stopped command, continued to receive it, and the lock is released as
// cancelled.
func TestRunOrphanedInTheBackgroundLeavesItsCommandStopped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := onTerminal(t, root, `sh -c 'set -m; "$0" "$@" &' "$0" "$@"; read done; echo "script-read-$done"`,
		"run", "orphaned", "--", "sh", "-c", `echo command-started; read answer; echo "command-read-$answer"`)
	s.await("command-started")
	var runner, command sessionProcess
	for deadline := time.Now().Add(time.Minute); command.state != "T"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command never stopped at the terminal: %v", inSession(s.pid))
		}
		for _, p := range inSession(s.pid) {
			switch {
			case strings.Contains(p.cmdline, " run orphaned "):
				runner = p
			case strings.HasPrefix(p.cmdline, "sh -c echo command-started"):
				command = p
			}
		}
	}
	t.Cleanup(func() {
		if t.Failed() { // run, left behind, would hold the lock for ever
			_ = syscall.Kill(runner.pid, syscall.SIGKILL)
		}
	})
	// Measured over a second of the command stopped: continuing it over
	// and over took a whole core (about 100 ticks).
	before := cpuTicks(t, runner.pid)
	time.Sleep(time.Second)
	if used := cpuTicks(t, runner.pid) - before; used > 20 {
		t.Fatalf("run used %d clock ticks of CPU in 1 s while its command stood stopped", used)
	}
	if err := syscall.Kill(runner.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(runner.pid, 0) == nil && !strings.HasPrefix(readStatState(runner.pid), "Z") {
		select {
		case <-s.ctx.Done():
			t.Fatalf("run did not end on TERM: %v", inSession(s.pid))
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.typed("done")
	s.await("script-read-done")
	s.exit()
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "cancelled" {
		t.Fatalf("released with %v, want cancelled", rel)
	}
}

// cpuTicks is the CPU time process pid has used (utime and stime of
// /proc/PID/stat), in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[11] and fields[12] are utime and stime (fields 14 and 15).
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return utime + stime
}

// readStatState is process pid's state (field 3 of /proc/PID/stat), "" when
// it is gone.
func readStatState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// terminalScript is a shell script that runs on a pseudo-terminal as its
// session's leader (the terminal's foreground, as a script run from it).
type terminalScript struct {
	t       *testing.T
	ctx     context.Context
	control *os.File
	pid     int
	exited  chan error
	mu      sync.Mutex
	shown   bytes.Buffer
	exitErr error
	gone    time.Time // when the script exited, if it did
}

// onTerminal starts script on a new pseudo-terminal, with "$0" "$@" the
// CLI and args.
func onTerminal(t *testing.T, root, script string, args ...string) *terminalScript {
	t.Helper()
	control, term := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := clitest.Command(ctx, root, args...)
	c.Args = append([]string{"sh", "-c", script, c.Path}, c.Args[1:]...)
	c.Path = "/bin/sh"
	c.Stdin, c.Stdout, c.Stderr = term, term, term
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := &terminalScript{t: t, ctx: ctx, control: control, pid: c.Process.Pid, exited: make(chan error, 1)}
	go func() { s.exited <- c.Wait() }()
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := control.Read(b)
			s.mu.Lock()
			s.shown.Write(b[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// echoing says whether the terminal echoes what is typed (its modes, read
// through the control side, as the kernel keeps them for both).
func (s *terminalScript) echoing() bool {
	s.t.Helper()
	t, err := unix.IoctlGetTermios(int(s.control.Fd()), unix.TCGETS)
	if err != nil {
		s.t.Fatal(err)
	}
	return t.Lflag&unix.ECHO != 0
}

// typed types line on the terminal.
func (s *terminalScript) typed(line string) {
	s.t.Helper()
	if _, err := s.control.WriteString(line + "\n"); err != nil {
		s.t.Fatal(err)
	}
}

// await waits until the terminal shows want, failing when a process of
// the session stays stopped (the terminal refused it), or soon after the
// script exited (its last output still on its way).
func (s *terminalScript) await(want string) {
	s.t.Helper()
	var stoppedSince time.Time
	for {
		s.mu.Lock()
		shown := s.shown.String()
		s.mu.Unlock()
		if strings.Contains(shown, want) {
			return
		}
		// A job stopped and continued (Ctrl-Z, fg) is stopped for a
		// moment; one that stays stopped was refused by the terminal.
		if stopped := stoppedInSession(s.pid); len(stopped) == 0 {
			stoppedSince = time.Time{}
		} else if stoppedSince.IsZero() {
			stoppedSince = time.Now()
		} else if time.Since(stoppedSince) > 2*time.Second {
			s.t.Fatalf("waiting for %q, stopped by the terminal: %s\nthe session: %v\nthe terminal shows:\n%s", want, strings.Join(stopped, "; "), inSession(s.pid), shown)
		}
		if !s.gone.IsZero() && time.Since(s.gone) > 5*time.Second {
			s.t.Fatalf("the script exited (%v) before the terminal showed %q:\n%s", s.exitErr, want, shown)
		}
		select {
		case s.exitErr = <-s.exited:
			s.gone = time.Now()
		case <-s.ctx.Done():
			s.t.Fatalf("the terminal never showed %q:\n%s", want, shown)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// exit waits for the script to exit, and fails unless it exited 0.
func (s *terminalScript) exit() {
	s.t.Helper()
	if s.gone.IsZero() {
		select {
		case s.exitErr = <-s.exited:
		case <-s.ctx.Done():
			s.t.Fatal("the script did not exit")
		}
	}
	if s.exitErr != nil {
		s.t.Fatalf("the script: %v", s.exitErr)
	}
}

// terminal is what the terminal has shown.
func (s *terminalScript) terminal() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown.String()
}

// stoppedInSession lists the processes of session sid that are stopped
// (state T), each with its command line.
func stoppedInSession(sid int) []string {
	var stopped []string
	for _, p := range inSession(sid) {
		if p.state == "T" {
			stopped = append(stopped, strconv.Itoa(p.pid)+" "+p.cmdline)
		}
	}
	return stopped
}

// sessionProcess is a process of a session, as internal/proc reads it.
type sessionProcess struct {
	pid            int
	state, cmdline string
}

// inSession lists the processes of session sid.
func inSession(sid int) []sessionProcess {
	var ps []sessionProcess
	proc.Each(func(pid int, st proc.Stat) {
		if got, err := unix.Getsid(pid); err != nil || got != sid {
			return
		}
		ps = append(ps, sessionProcess{pid, st.State, strings.Join(proc.Args(pid), " ")})
	})
	return ps
}
