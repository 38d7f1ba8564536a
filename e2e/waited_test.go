package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
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
