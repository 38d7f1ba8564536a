package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/lease"
	"github.com/lockledger/lockledger/ledger"
)

// A waiter that gets the lock records how long it waited in its
// lock_acquired, and the timeline shows it; an acquire that did not wait
// records nothing of the kind.
func TestAWaiterRecordsHowLongItWaited(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--actor", "alice").Stdout)
	if b := lastBody(t, root, "lock_acquired"); b["waited_seconds"] != nil {
		t.Fatalf("an acquire that did not wait records waited_seconds %v", b["waited_seconds"])
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := time.Now()
	waiter := clitest.Command(ctx, root, "acquire", "deploy", "--wait", "50s", "--actor", "bob")
	stderr, err := waiter.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	for !strings.Contains(lines.Text(), "waiting for lock") {
		if !lines.Scan() {
			t.Fatalf("the waiter ended without waiting: %v", waiter.Wait())
		}
	}
	seen := time.Now()
	for time.Since(seen) < 500*time.Millisecond {
		clitest.Must(t, 0, root, "heartbeat", "deploy", "--request-id", rid) // the holder works on
	}
	released := time.Now()
	clitest.Must(t, 0, root, "release", "deploy", "--request-id", rid)
	for lines.Scan() {
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	b := lastBody(t, root, "lock_acquired")
	w, _ := b["waited_seconds"].(float64)
	if b["actor"] != "bob" || w < released.Sub(seen).Seconds() || w > time.Since(started).Seconds() {
		t.Fatalf("the waiter's lock_acquired: actor %v, waited_seconds %v; want bob, between %.3f and %.3f", b["actor"],
			b["waited_seconds"], released.Sub(seen).Seconds(), time.Since(started).Seconds())
	}
	tl := clitest.Must(t, 0, root, "timeline", "--lock", "deploy", "--wide").Stdout
	var line string
	for _, l := range strings.Split(tl, "\n") {
		if strings.Contains(l, "lock_acquired") && strings.Contains(l, "bob") {
			line = l
		}
	}
	if !strings.Contains(line, ", waited ") {
		t.Fatalf("the timeline does not show how long bob waited:\n%s", tl)
	}
	// The page draws the wait, from its recorded length alone: a span that
	// ends at bob's bar.
	svg := clitest.Must(t, 0, root, "timeline", "--lock", "deploy", "--format", "svg").Stdout
	if want := fmt.Sprintf(`<g class="waited" data-seq="%v"`, b["seq"]); strings.Count(svg, `class="waited"`) != 1 || !strings.Contains(svg, want) {
		t.Errorf("the picture does not draw bob's wait (%s):\n%s", want, svg)
	}
	clitest.Verify(t, 0, root)
}

// holdWriter takes ROOT/writer.flock, the writer mutex every lockledger
// process of the root takes to write, and keeps it until the returned
// func is called: a writer that holds on without committing.
func holdWriter(t *testing.T, root string) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, ledger.WriterMux), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { f.Close() }) }
	t.Cleanup(release)
	return release
}

// A wait ends at about its --wait, not a busy timeout (10 s) or more after
// it, while other processes keep the ledger's writer: every attempt before
// the last is cut at the wait's end, and the last one, which records
// acquire_blocked, is given lease.GiveUpFor. With a holder seen, the
// outcome is the holder's exit 3, and stderr says that the wait was NOT
// recorded; with no attempt answered, the ledger was busy (exit 1).
// Nothing is taken either way.
func TestAWaitEndsNearItsEndWhileTheWriterIsBusy(t *testing.T) {
	t.Parallel()
	const wait = 3 * time.Second
	// Well below one busy timeout (10 s) past the wait, or two: what an
	// attempt left to wait for the writer would take.
	const within = wait + lease.GiveUpFor + 4*time.Second
	const (
		keptOnceWaiting = iota // the writer mutex taken once the waiter has seen the lock's holder
		keptFromStart          // the writer mutex taken before the waiter starts
		keptOnceQueued         // the writer mutex taken once the waiter's first attempt has queued it (--quiet says nothing while waiting)
	)
	for _, tc := range []struct {
		name       string
		cmd        []string
		busy       int
		held       bool // the lock has a holder
		code       int
		wantStderr string
	}{
		{"acquire on a held lock", []string{"acquire", "deploy", "--wait", "3s"}, keptOnceWaiting, true, 3, "NOT recorded"},
		{"run on a held lock", []string{"run", "deploy", "--wait", "3", "--", "true"}, keptOnceWaiting, true, 3, "NOT recorded"},
		{"acquire while the writer is kept from the start", []string{"acquire", "deploy", "--wait", "3s"}, keptFromStart, false, 1, "busy"},
		// The lock read without the writer shows its holder: the holder's
		// exit 3, as a wait that saw it.
		{"acquire on a held lock while the writer is kept from the start", []string{"acquire", "deploy", "--wait", "3s"}, keptFromStart, true, 3, "NOT recorded"},
		// --quiet hides chatter, never that the record misses the wait.
		{"quiet acquire on a held lock", []string{"acquire", "deploy", "--wait", "3s", "--quiet"}, keptOnceQueued, true, 3, "NOT recorded"},
		{"quiet run on a held lock", []string{"run", "deploy", "--wait", "3", "--quiet", "--", "true"}, keptOnceQueued, true, 3, "NOT recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			clitest.Must(t, 0, root, "init")
			if tc.held {
				clitest.Must(t, 0, root, "acquire", "deploy", "--actor", "alice", "--holder", "none")
			}
			before := clitest.EventCount(t, root)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := clitest.Command(ctx, root, tc.cmd...)
			var stderr bytes.Buffer
			var release func()
			started := time.Now()
			switch tc.busy {
			case keptOnceWaiting:
				pipe, err := c.StderrPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				lines := bufio.NewScanner(pipe)
				for !strings.Contains(lines.Text(), "waiting for lock") {
					if !lines.Scan() {
						t.Fatalf("the waiter ended without waiting: %v", c.Wait())
					}
					stderr.WriteString(lines.Text() + "\n")
				}
				release = holdWriter(t, root)
				for lines.Scan() {
					stderr.WriteString(lines.Text() + "\n")
				}
			case keptFromStart:
				release = holdWriter(t, root)
				c.Stderr = &stderr
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
			case keptOnceQueued:
				c.Stderr = &stderr
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				awaitCondition(t, "the waiter's acquire_blocked", func() bool { return clitest.EventCount(t, root) > before })
				release = holdWriter(t, root)
			}
			err := c.Wait()
			took := time.Since(started)
			release()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			t.Logf("%v: exit %d after %s", tc.cmd, c.ProcessState.ExitCode(), took)
			if code := c.ProcessState.ExitCode(); code != tc.code || !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("%v: exit %d after %s, want %d saying %q\nstderr: %s", tc.cmd, code, took, tc.code, tc.wantStderr, stderr.String())
			}
			if took > within {
				t.Errorf("%v with the writer busy: returned after %s, want within %s of the start (--wait %s)", tc.cmd, took, within, wait)
			}
			// The first attempt on a held lock queued the waiter (its one
			// acquire_blocked), when it got the writer; the last could not
			// record.
			want := 0
			if tc.held && tc.busy != keptFromStart {
				want = 1
			}
			if n := clitest.EventCount(t, root) - before; n != want {
				t.Errorf("%d events after the wait began, want %d", n, want)
			}
			if st := clitest.Run(t, root, "status", "deploy", "--json").Stdout; tc.held != strings.Contains(st, `"alice"`) {
				t.Errorf("the lock after the wait: %s", st)
			}
			clitest.Verify(t, 0, root)
		})
	}
}
