package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/ledger"
)

// TestFaultBusyLedgerFailsCleanly: while another process holds the writer
// lock (the flock on ROOT/writer.flock) or the database itself (sqlite3 in
// BEGIN EXCLUSIVE) past the busy timeout, a lock command fails with exit 1
// and says the ledger is busy or locked, and nothing is written: no event,
// no lock file. Read-only commands answer at once meanwhile. Afterwards the
// same acquire succeeds. And `run`, whose command ends while the writer
// lock is held for longer than the busy timeout, must still record its
// release. The three cases spend most of their time waiting out the 10 s
// busy timeout, so they run at the same time.
func TestFaultBusyLedgerFailsCleanly(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	type outcome struct {
		name string
		errs []string
		bug  string
	}
	holdFlock := func(root string) (func(), error) {
		f, err := os.OpenFile(filepath.Join(root, "writer.flock"), os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		return func() { f.Close() }, nil
	}
	holdExclusive := func(root string) (func(), error) {
		c := exec.Command("sqlite3", "-batch", filepath.Join(root, "ledger.db"))
		in, err := c.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := c.StdoutPipe()
		if err != nil {
			return nil, err
		}
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return nil, err
		}
		io.WriteString(in, "BEGIN EXCLUSIVE;\nINSERT INTO meta (key, value) VALUES ('busy-test', 'x');\nSELECT 'holding';\n")
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "holding" {
			_ = c.Process.Kill()
			_ = c.Wait()
			return nil, fmt.Errorf("sqlite3 did not take the lock: %q %v", line, err)
		}
		return func() {
			io.WriteString(in, "ROLLBACK;\n.quit\n")
			in.Close()
			_ = c.Wait()
		}, nil
	}
	blockedAcquire := func(t *testing.T, name string, hold func(string) (func(), error)) outcome {
		o := outcome{name: name}
		fail := func(format string, a ...any) { o.errs = append(o.errs, fmt.Sprintf(format, a...)) }
		root := t.TempDir()
		clitest.Must(t, 0, root, "acquire", "held", "--pid", self)
		before := snapLedger(t, root)
		release, err := hold(root)
		if err != nil {
			fail("%v", err)
			return o
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var got clitest.Result
		var gotErr error
		var took time.Duration
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			got, gotErr = clitest.Output(clitest.Command(ctx, root, "acquire", "blocked", "--pid", self))
			took = time.Since(start)
		}()
		// Readers never wait for the writer.
		start := time.Now()
		if r := clitest.Run(t, root, "status", "held"); r.Code != 0 {
			fail("status while the ledger is busy: exit %d: %s", r.Code, r.Stderr)
		}
		if d := time.Since(start); d > 9*time.Second {
			fail("status took %s while the ledger was busy; readers must not wait", d)
		}
		wg.Wait()
		release()
		if gotErr != nil {
			fail("acquire on a busy ledger: %v", gotErr)
		}
		if got.Code != 1 || !strings.Contains(got.Stderr, "busy") && !strings.Contains(got.Stderr, "locked") {
			fail("acquire on a busy ledger: exit %d after %s, want 1 saying busy or locked\nstderr: %s", got.Code, took, got.Stderr)
		}
		if took < time.Second {
			fail("gave up after %s: the busy timeout was not waited for", took)
		}
		if after := snapLedger(t, root); after != before {
			fail("a busy failure wrote something: %s -> %s", before, after)
		}
		if _, err := os.Lstat(filepath.Join(root, "locks", "blocked.lock")); err == nil {
			fail("a lock file was left by the failed acquire")
		}
		if r := clitest.Run(t, root, "acquire", "blocked", "--pid", self); r.Code != 0 {
			fail("acquire once the ledger is free again: exit %d: %s", r.Code, r.Stderr)
		}
		return o
	}
	runRelease := func(t *testing.T) outcome {
		o := outcome{name: "run's release while the writer lock is held"}
		fail := func(format string, a ...any) { o.errs = append(o.errs, fmt.Sprintf(format, a...)) }
		root := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const busy = 2 * time.Second
		c := clitest.Command(ctx, root, "run", "job", "--", "sh", "-c", "echo started; sleep 0.3")
		c.Env = append(c.Env, invocation.EnvBusyTimeout+"="+busy.String())
		out, err := c.StdoutPipe()
		if err != nil {
			fail("%v", err)
			return o
		}
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			fail("%v", err)
			return o
		}
		exited := make(chan struct{})
		go func() { _ = c.Wait(); close(exited) }()
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "started\n" {
			fail("run's command did not start: %q %v", line, err)
			return o
		}
		release, err := holdFlock(root)
		if err != nil {
			fail("%v", err)
			return o
		}
		// Past the busy timeout, then let go whatever run is doing.
		select {
		case <-exited:
		case <-time.After(busy + 2*time.Second):
		}
		release()
		<-exited
		var n int
		if err := clitest.DB(t, root).QueryRow(`SELECT count(*) FROM events WHERE type = 'lock_released'
			AND request_id = (SELECT request_id FROM events WHERE type = 'lock_acquired')`).Scan(&n); err != nil {
			fail("%v", err)
		} else if n != 1 {
			o.bug = fmt.Sprintf("run exited %d after its release met a writer lock held past the busy timeout, and no "+
				"lock_released was ever recorded: the job's result is lost and the lock is left for the next acquire to "+
				"take over as holder_dead.\nrun's stderr: %s", c.ProcessState.ExitCode(), strings.TrimSpace(errb.String()))
		}
		return o
	}
	cases := map[string]func(t *testing.T) outcome{
		"writer flock held": func(t *testing.T) outcome { return blockedAcquire(t, "writer flock held", holdFlock) },
		"run's release":     runRelease,
	}
	if _, err := exec.LookPath("sqlite3"); err == nil {
		cases["sqlite3 BEGIN EXCLUSIVE"] = func(t *testing.T) outcome { return blockedAcquire(t, "sqlite3 BEGIN EXCLUSIVE", holdExclusive) }
	} else {
		t.Log("sqlite3 is not installed: the BEGIN EXCLUSIVE case is not run")
	}
	var mu sync.Mutex
	var bugs []string
	t.Run("busy", func(t *testing.T) {
		for name, run := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				o := run(t)
				for _, e := range o.errs {
					t.Errorf("%s: %s", o.name, e)
				}
				if o.bug != "" {
					mu.Lock()
					bugs = append(bugs, o.name+": "+o.bug)
					mu.Unlock()
				}
			})
		}
	})
	for _, b := range bugs {
		t.Error(b)
	}
}

// TestFaultBusyFirstOpenIsWaitedForWithWait: a command told to --wait also
// waits, within that budget, for a database too busy to open at all (seen
// when 48 `run --wait` processes opened a fresh root at once): here sqlite3
// holds a fresh ledger.db exclusively for longer than the busy timeout
// (2 s here, LOCKLEDGER_BUSY_TIMEOUT).
func TestFaultBusyFirstOpenIsWaitedForWithWait(t *testing.T) {
	clitest.NeedBinary(t, "sqlite3")
	t.Parallel()
	root := t.TempDir()
	c := exec.Command("sqlite3", "-batch", filepath.Join(root, "ledger.db"))
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	io.WriteString(in, "BEGIN EXCLUSIVE;\nCREATE TABLE hold (x);\nSELECT 'holding';\n")
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("sqlite3 did not take the lock: %q %v", line, err)
	}
	start := time.Now()
	const busy = 2 * time.Second
	run := clitest.Command(context.Background(), root, "run", "jobs", "--wait", "60s", "--", "true")
	run.Env = append(run.Env, invocation.EnvBusyTimeout+"="+busy.String())
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("run finished while the database was held: %v\n%s", err, stderr.String())
	case <-time.After(busy + 2*time.Second):
	}
	io.WriteString(in, "ROLLBACK;\n.quit\n")
	in.Close()
	if err := <-done; err != nil {
		t.Fatalf("run --wait after the database was let go: %v (after %s)\n%s", err, time.Since(start).Round(time.Second), stderr.String())
	}
	if got := clitest.Types(t, root); strings.Join(got, " ") != "lock_acquired lock_released" {
		t.Fatalf("events %v, want lock_acquired lock_released", got)
	}
	assertChain(t, root)
}

// TestBusyTimeoutFromTheEnvironment: LOCKLEDGER_BUSY_TIMEOUT sets how long
// a command waits for a busy writer: an acquire while the test holds the
// writer's flock fails busy after about that (1 s), not the default 10 s.
// A value that is not a duration from 1 ms to 24 h is bad input: exit 2
// naming the variable and the rule, the ledger unchanged.
func TestBusyTimeoutFromTheEnvironment(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "held", "--pid", self)
	before := snapLedger(t, root)
	for _, c := range []struct{ value, rule string }{
		{"soon", "must be a duration"}, {"0", "from 1ms to 24h"}, {"500us", "from 1ms to 24h"}, {"25h", "from 1ms to 24h"},
		{"-1s", "must not be negative"},
	} {
		r := clitest.RunWith(t, root, []string{invocation.EnvBusyTimeout + "=" + c.value}, "", "acquire", "other", "--pid", self)
		if r.Code != 2 || !strings.Contains(r.Stderr, invocation.EnvBusyTimeout) || !strings.Contains(r.Stderr, c.rule) {
			t.Errorf("%s=%s: exit %d, want 2 naming the variable and %q\nstderr: %s", invocation.EnvBusyTimeout, c.value, r.Code, c.rule, r.Stderr)
		}
	}
	if after := snapLedger(t, root); after != before {
		t.Errorf("a bad %s changed the ledger: %s -> %s", invocation.EnvBusyTimeout, before, after)
	}
	release := holdWriter(t, root)
	defer release()
	start := time.Now()
	r := clitest.RunWith(t, root, []string{invocation.EnvBusyTimeout + "=1s"}, "", "acquire", "blocked", "--pid", self)
	took := time.Since(start)
	if r.Code != 1 || !strings.Contains(r.Stderr, "busy") {
		t.Fatalf("acquire on a busy ledger: exit %d after %s, want 1 saying busy\nstderr: %s", r.Code, took, r.Stderr)
	}
	if took < time.Second || took >= ledger.DefaultBusyTimeout {
		t.Errorf("acquire with a busy timeout of 1s gave up after %s, want 1s or a little more (the default is %s)", took, ledger.DefaultBusyTimeout)
	}
}

// TestFaultBusyWaitUsedUpByTheOpenStillEndsAtTheWait: a --wait shorter
// than the ledger's open (1 ms here; under load, half a second can be) is
// still a wait. While another process holds the writer lock, acquire and
// run give up about lease.GiveUpFor after it, saying the refusal was not
// recorded, as any wait that ran out does; they do not wait out the busy
// timeout as a command told not to wait would.
func TestFaultBusyWaitUsedUpByTheOpenStillEndsAtTheWait(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"acquire", "blocked", "--holder", "none", "--wait", "1ms"},
		{"run", "blocked", "--wait", "1ms", "--", "true"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			clitest.Must(t, 0, root, "acquire", "held", "--holder", "none")
			before := snapLedger(t, root)
			holdWriter(t, root)
			start := time.Now()
			r := clitest.Run(t, root, args...)
			took := time.Since(start)
			if r.Code != 1 || !strings.Contains(r.Stderr, "NOT recorded") {
				t.Errorf("%v while the writer lock is held: exit %d after %s, want 1 saying the refusal was NOT recorded\nstderr: %s",
					args, r.Code, took.Round(time.Millisecond), r.Stderr)
			}
			if took >= ledger.DefaultBusyTimeout {
				t.Errorf("%v took %s: the busy timeout (%s) was waited out, not the wait and lease.GiveUpFor",
					args, took.Round(time.Millisecond), ledger.DefaultBusyTimeout)
			}
			if after := snapLedger(t, root); after != before {
				t.Errorf("a refused wait wrote something: %s -> %s", before, after)
			}
		})
	}
}
