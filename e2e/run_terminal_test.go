package e2e

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
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
	control, term := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := clitest.Command(ctx, root, "run", "prompted", "--", "sh", "-c", `read answer; echo "command-read-$answer"`)
	// A script run from the terminal (the session's leader, which the
	// terminal's foreground is), that runs run and then reads itself.
	c.Args = append([]string{"sh", "-c", `"$0" "$@"; echo "run-exit-$?"; read after; echo "script-read-$after"`, c.Path}, c.Args[1:]...)
	c.Path = "/bin/sh"
	c.Stdin, c.Stdout, c.Stderr = term, term, term
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	var mu sync.Mutex
	var shown bytes.Buffer
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := control.Read(b)
			mu.Lock()
			shown.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// await waits until the terminal shows want, failing at once when a
	// process of the session is stopped (the terminal refused it), or
	// soon after the script exited (its last output still on its way).
	var exitErr error
	var exitedAt time.Time
	await := func(want string) {
		t.Helper()
		for {
			mu.Lock()
			s := shown.String()
			mu.Unlock()
			if strings.Contains(s, want) {
				return
			}
			if stopped := stoppedInSession(c.Process.Pid); len(stopped) > 0 {
				t.Fatalf("waiting for %q, stopped by the terminal: %s\nthe terminal shows:\n%s", want, strings.Join(stopped, "; "), s)
			}
			if !exitedAt.IsZero() && time.Since(exitedAt) > 5*time.Second {
				t.Fatalf("the script exited (%v) before the terminal showed %q:\n%s", exitErr, want, s)
			}
			select {
			case exitErr = <-exited:
				exitedAt = time.Now()
			case <-ctx.Done():
				t.Fatalf("the terminal never showed %q:\n%s", want, s)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if _, err := control.WriteString("yes\n"); err != nil {
		t.Fatal(err)
	}
	await("command-read-yes")
	await("run-exit-0")
	if _, err := control.WriteString("next\n"); err != nil {
		t.Fatal(err)
	}
	await("script-read-next")
	if exitedAt.IsZero() {
		select {
		case exitErr = <-exited:
		case <-ctx.Done():
			t.Fatal("the script did not exit")
		}
	}
	if exitErr != nil {
		t.Fatalf("the script: %v", exitErr)
	}
	if rel := lastBody(t, root, "lock_released"); rel["result"] != "success" {
		t.Fatalf("released with %v, want success", rel)
	}
}

// stoppedInSession lists the processes of session sid that are stopped
// (state T), each with its command line.
func stoppedInSession(sid int) []string {
	entries, _ := os.ReadDir("/proc")
	var stopped []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// fields[0] is the state (field 3), fields[3] the session (field 6).
		if len(fields) < 4 || fields[0] != "T" || fields[3] != strconv.Itoa(sid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		stopped = append(stopped, strconv.Itoa(pid)+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return stopped
}
