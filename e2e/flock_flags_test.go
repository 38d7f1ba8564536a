package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestRunWithoutDashDash: run NAME CMD ARGS... needs no "--": CMD starts
// at the first argument after NAME that is not one of run's flags, and
// what follows is CMD's own, flags included. "--" still works, and is
// what a CMD starting with "-" needs.
func TestRunWithoutDashDash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Must(t, 0, root, "run", "l", "true")
	if r := clitest.Must(t, 0, root, "run", "l", "-w", "1", "-s", "echo", "-n", "-w", "x"); r.Stdout != "-w x" {
		t.Fatalf("echo's flags were not echo's: stdout %q", r.Stdout)
	}
	if r := clitest.Must(t, 0, root, "--quiet", "run", "--ttl", "60", "l", "--", "echo", "old"); r.Stdout != "old\n" {
		t.Fatalf("run with --: stdout %q", r.Stdout)
	}
	clitest.Must(t, 3, root, "run", "l", "sh", "-c", "exit 3")
	r := clitest.Must(t, 2, root, "run", "l", "-z")
	if !strings.Contains(r.Stderr, "-z") {
		t.Fatalf("a CMD starting with - without --: %s", r.Stderr)
	}
	codes := clitest.Strings(t, root, `SELECT json_extract(body, '$.exit_code') FROM events WHERE type = 'lock_released' ORDER BY seq`)
	if strings.Join(codes, " ") != "0 0 0 3" {
		t.Fatalf("released with exit codes %v, want 0 0 0 3", codes)
	}
}

// TestRunDashC: run NAME -c 'COMMAND' runs COMMAND through sh -c, as
// flock -c does; -c and CMD together are refused.
func TestRunDashC(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	clitest.Must(t, 4, root, "run", "l", "-c", `echo "$LOCKLEDGER_LOCK" > `+marker+`; exit 4`)
	if b, err := os.ReadFile(marker); err != nil || string(b) != "l\n" {
		t.Fatalf("the -c command did not run under the lock: %q %v", b, err)
	}
	n := clitest.EventCount(t, root)
	r := clitest.Must(t, 2, root, "run", "l", "-c", "true", "false")
	if !strings.Contains(r.Stderr, "-c") {
		t.Fatalf("-c with a CMD: %s", r.Stderr)
	}
	if clitest.EventCount(t, root) != n {
		t.Fatal("a refused run changed the ledger")
	}
}

// TestNonblockAndConflictExitCode: -n on a held lock fails at once with
// the conflict code: 3, or -E's. run -E 0 skips its command quietly,
// and with -q silently.
func TestNonblockAndConflictExitCode(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	startHolder(t, root, "deploy")
	marker := filepath.Join(t.TempDir(), "ran")
	clitest.Must(t, 3, root, "acquire", "deploy", "-n")
	clitest.Must(t, 7, root, "acquire", "deploy", "-n", "-E", "7")
	clitest.Must(t, 7, root, "--json", "acquire", "deploy", "--conflict-exit-code", "7")
	clitest.Must(t, 7, root, "run", "-n", "-E", "7", "deploy", "touch", marker)
	clitest.Must(t, 0, root, "run", "-E", "0", "deploy", "touch", marker)
	// With -q the skip prints nothing at all, as flock -n -E 0 does.
	if r := clitest.Must(t, 0, root, "run", "-q", "-n", "-E", "0", "deploy", "touch", marker); r.Stdout != "" || r.Stderr != "" {
		t.Errorf("run -q -n -E 0 on a held lock printed stdout %q, stderr %q; want nothing", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("run's command ran without the lock (%v)", err)
	}
	types := clitest.Types(t, root)
	if strings.Join(types, " ") != "lock_acquired acquire_blocked acquire_blocked acquire_blocked acquire_blocked acquire_blocked acquire_blocked" {
		t.Fatalf("events %v, want the holder's acquire and six blocked", types)
	}
}

// TestWaitTakesFractionsOfASecond: -w 0.5 (and 1.5s) waits that long: the
// acquire_blocked it records when it gives up says so (less the time the
// ledger took to open, which the wait includes).
func TestWaitTakesFractionsOfASecond(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	startHolder(t, root, "deploy")
	// The open counts against --wait, so the wait recorded is shorter by
	// as long as an open takes: this machine's pace, a status run now.
	began := time.Now()
	clitest.Must(t, 0, root, "status", "deploy")
	pace := time.Since(began).Seconds()
	clitest.Must(t, 3, root, "acquire", "deploy", "-w", "0.5")
	clitest.Must(t, 9, root, "run", "deploy", "--wait=1.5s", "-E", "9", "true")
	waited := clitest.Strings(t, root, `SELECT json_extract(body, '$.waited_seconds') FROM events WHERE type = 'acquire_blocked' AND json_extract(body, '$.until') IS NULL ORDER BY seq`)
	if len(waited) != 2 {
		t.Fatalf("waited %v, want two acquire_blocked", waited)
	}
	for i, min := range []float64{0.5, 1.5} {
		w, err := strconv.ParseFloat(waited[i], 64)
		if err != nil || w < min-0.25-pace || w > min+30 {
			t.Errorf("acquire_blocked %d waited %q, want %gs or a little more (or less by %.3fs, a status run's time)", i, waited[i], min, pace)
		}
	}
}

// TestWaitForever: --wait forever waits until the holder lets go.
func TestWaitForever(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	holder, _ := startHolder(t, root, "deploy")
	c := clitest.Command(context.Background(), root, "acquire", "deploy", "-w", "forever")
	lines := startWaiter(t, c)
	_ = holder.Process.Kill() // the holder is gone: its lock is free to take
	_ = holder.Wait()
	for lines.Scan() {
	}
	if code := exitOf(t, c); code != 0 {
		t.Fatalf("acquire -w forever: exit %d after the holder died", code)
	}
	if types := clitest.Unqueued(t, root); len(types) != 2 || types[1] != "lock_stolen" {
		t.Fatalf("events %v, want the waiter to take the dead holder's lock", types)
	}
}

// TestSharedShortFlag: -s is --shared on acquire, run and steal.
func TestSharedShortFlag(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	clitest.Must(t, 0, root, "acquire", "-s", "reports", "--pid", self)
	clitest.Must(t, 0, root, "acquire", "reports", "-s", "--pid", self)
	clitest.Must(t, 0, root, "run", "reports", "-s", "true")
	clitest.Must(t, 3, root, "acquire", "reports", "-n")
	if r := clitest.Must(t, 0, root, "steal", "--help"); !strings.Contains(r.Stdout, "-s, --shared") {
		t.Fatalf("steal has no -s:\n%s", r.Stdout)
	}
}

// TestFlockFlagsRefuseBadValues: exit 2 naming the flag and the rule, the
// ledger unchanged.
func TestFlockFlagsRefuseBadValues(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	startHolder(t, root, "deploy")
	n := clitest.EventCount(t, root)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"acquire", "x", "-w", "soon"}, `--wait "soon": must be seconds`},
		{[]string{"acquire", "x", "-w", "-1"}, `--wait "-1": must not be negative`},
		{[]string{"acquire", "x", "--wait", "1e3"}, `--wait "1e3"`},
		{[]string{"run", "x", "-w", "0.5.1", "true"}, `--wait "0.5.1"`},
		{[]string{"acquire", "x", "--wait", ""}, `--wait: must be seconds`},
		{[]string{"run", "x", "--wait=", "true"}, `--wait: must be seconds`},
		{[]string{"acquire", "x", "-n", "-w", "5"}, "--nonblock: cannot be combined with --wait"},
		{[]string{"acquire", "x", "-E", "4"}, `--conflict-exit-code "4": must be 0 (run only), 3 or 7-125`},
		{[]string{"run", "x", "-E", "1", "true"}, `--conflict-exit-code "1"`},
		{[]string{"acquire", "x", "-E", "6"}, `6 no ledger`},
		{[]string{"acquire", "x", "-E", "256"}, `--conflict-exit-code "256"`},
		{[]string{"acquire", "x", "-E", "-1"}, `--conflict-exit-code "-1"`},
		{[]string{"run", "x", "-E", "143", "true"}, `--conflict-exit-code "143"`},
		{[]string{"acquire", "x", "-E", "0"}, `--conflict-exit-code "0": must not be 0 for acquire`},
		{[]string{"acquire", "x", "-E", "seven"}, `"-E, --conflict-exit-code"`},
		{[]string{"acquire", "x", "--ttl", "0"}, `--ttl "0": must be at least 1s`},
		{[]string{"run", "x", "--ttl", "0.5", "true"}, `--ttl "0.5"`},
	} {
		r := clitest.Run(t, root, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("lockledger %s: exit %d, stderr %q; want 2 saying %q", strings.Join(c.args, " "), r.Code, r.Stderr, c.says)
		}
	}
	if got := clitest.EventCount(t, root); got != n {
		t.Fatalf("bad input changed the ledger: %d events, want %d", got, n)
	}
}
