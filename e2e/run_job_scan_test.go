package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestAnotherUsersProcessNeverKeepsALockHeld: anyone can start a process
// carrying a run's LOCKLEDGER_REQUEST_ID. Once the run is killed, such a
// process of another user (here nobody's) is not the run's job: the next
// acquire takes the lock over at once as holder_dead, instead of finding
// it held until its TTL.
func TestAnotherUsersProcessNeverKeepsALockHeld(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("starting a process of another user takes root")
	}
	root := t.TempDir()
	runner, lines := startRun(t, root, "batch", "--ttl", "600", "--", "sh", "-c", `echo $$ "$LOCKLEDGER_REQUEST_ID"; exec sleep 300`)
	var child int
	var id string
	if _, err := fmt.Sscan(line(t, lines), &child, &id); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "300")
	other.Env = append(os.Environ(), "LOCKLEDGER_REQUEST_ID="+id)
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	awaitGone(t, child)
	r := clitest.Run(t, root, "acquire", "batch", "--json", "--pid", strconv.Itoa(os.Getpid()))
	var o map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &o); r.Code != 0 || err != nil || o["reason"] != "holder_dead" {
		t.Fatalf("acquire after the runner was killed, with another user's process (pid %d) carrying its request id: exit %d, %s%s; want a holder_dead take-over",
			other.Process.Pid, r.Code, r.Stdout, r.Stderr)
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("the other user's process was stopped: %v", err)
	}
}

// TestRunStopsADaemonThatDroppedItsRequestID: a daemon that left the
// command's process group (setsid) with an environment that no longer
// carries LOCKLEDGER_REQUEST_ID is still below run, its subreaper, once
// the shell that started it has exited: run stops it and records it.
func TestRunStopsADaemonThatDroppedItsRequestID(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := clitest.Must(t, 0, root, "run", "daemonish", "--kill-grace", "5s", "--", "sh", "-c",
		`env -u LOCKLEDGER_REQUEST_ID setsid sleep 300 >/dev/null 2>&1 & `+leftGroup+` echo $!`)
	checkDaemon(t, root, r.Stdout, "terminated", false)
}

// TestRunReapsOrphansWhileItsCommandRuns: an orphan reparented to run (its
// subreaper) that exits is reaped at once, not left a zombie until run
// exits: a command that orphans many short-lived processes must not fill
// the pid table.
func TestRunReapsOrphansWhileItsCommandRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "orphan")
	clitest.Must(t, 0, root, "run", "orphans", "--", "sh", "-c",
		`( sleep 0.1 & echo $! > "$1" ); p=$(cat "$1")
		i=0; while [ -e /proc/$p ]; do i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done`, "sh", pidFile)
}
