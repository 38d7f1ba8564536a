package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/clitest"
)

// startGatedHolder starts a run that holds lock until the file gate exists.
func startGatedHolder(t *testing.T, ctx context.Context, root, lock, gate string) *exec.Cmd {
	t.Helper()
	h := clitest.Command(ctx, root, "run", lock, "--ttl", "60", "--actor", "holder", "--",
		"sh", "-c", `until [ -e "$GATE" ]; do sleep 0.05; done`)
	h.Env = append(h.Env, "GATE="+gate)
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Process.Kill(); h.Wait() })
	awaitRunning(t, root, lock)
	return h
}

// startQueuedWaiter starts `run --wait 60s` as actor (with env added to
// its environment), appending its actor name to $ORDER when it runs, and
// returns once its acquire_blocked (which queues it) is in the log.
func startQueuedWaiter(t *testing.T, ctx context.Context, root, lock, actor, order string, env ...string) *exec.Cmd {
	t.Helper()
	c := clitest.Command(ctx, root, "run", lock, "--wait", "60s", "--ttl", "30", "--actor", actor, "--",
		"sh", "-c", `echo "$ACTOR" >> "$ORDER"`)
	c.Env = append(c.Env, "ORDER="+order, "ACTOR="+actor)
	c.Env = append(c.Env, env...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	query := fmt.Sprintf(`SELECT request_id FROM events WHERE type = 'acquire_blocked' AND actor = '%s' AND CAST(body AS TEXT) LIKE '%%"until":%%'`, actor)
	for deadline := time.Now().Add(30 * time.Second); len(clitest.Strings(t, root, query)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not queued after 30s; events %v; its stderr:\n%s", actor,
				clitest.Strings(t, root, `SELECT type || ' ' || actor FROM events ORDER BY seq`), stderr.String())
		}
	}
	return c
}

// queueActors is status --json's queue of lock, as actors, next first.
func queueActors(t *testing.T, root, lock string) []string {
	t.Helper()
	var st struct {
		Queue []struct {
			Position int    `json:"position"`
			Actor    string `json:"actor"`
			PID      int    `json:"pid"`
		} `json:"queue"`
	}
	r := clitest.Must(t, 0, root, "status", lock, "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	var out []string
	for i, w := range st.Queue {
		if w.Position != i+1 || w.PID <= 0 {
			t.Errorf("queue entry %d: %+v", i, w)
		}
		out = append(out, w.Actor)
	}
	return out
}

// Eight `run --wait` processes (sixteen under LOCKLEDGER_STRESS=1), each
// started once the one before is queued, run in the order they queued, and
// every one runs.
func TestQueueRunWaitersAreServedInArrivalOrder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	gate, order := filepath.Join(t.TempDir(), "go"), filepath.Join(t.TempDir(), "order")
	holder := startGatedHolder(t, ctx, root, "fifo", gate)
	var want []string
	var waiters []*exec.Cmd
	n := 8
	if stressed() {
		n = 16
	}
	for i := range n {
		actor := fmt.Sprintf("waiter-%02d", i)
		waiters = append(waiters, startQueuedWaiter(t, ctx, root, "fifo", actor, order))
		want = append(want, actor)
	}
	if got := queueActors(t, root, "fifo"); !slices.Equal(got, want) {
		t.Fatalf("status --json queue: got %v, want %v", got, want)
	}
	text := clitest.Must(t, 0, root, "status", "fifo").Stdout
	if !strings.Contains(text, fmt.Sprintf("queue: %d waiters, next first", n)) || !strings.Contains(text, "1.  ") {
		t.Errorf("status does not show the queue:\n%s", text)
	}
	list := clitest.Must(t, 0, root, "list", "--json").Stdout
	if strings.Count(list, `"position"`) != n {
		t.Errorf("list --json does not show the queue of %d:\n%s", n, list)
	}
	who := clitest.Must(t, 0, root, "who", "fifo", "--json").Stdout
	if strings.Count(who, `"position"`) != n {
		t.Errorf("who --json does not show the queue of %d:\n%s", n, who)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	for i, w := range waiters {
		if err := w.Wait(); err != nil {
			t.Errorf("waiter %d: %v", i, err)
		}
	}
	var joins, renewals int
	if err := clitest.DB(t, root).QueryRow(`SELECT
		count(*) FILTER (WHERE json_extract(body, '$.until') IS NOT NULL AND json_extract(body, '$.queued_seq') IS NULL),
		count(*) FILTER (WHERE json_extract(body, '$.queued_seq') IS NOT NULL)
		FROM events WHERE type = 'acquire_blocked'`).Scan(&joins, &renewals); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d waiters served %s after the gate opened; %d joins of the queue, %d renewals of a place", n, time.Since(freed).Round(time.Millisecond), joins, renewals)
	if joins != n {
		t.Errorf("%d joins of the queue, want one per waiter (none lost its place)", joins)
	}
	data, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); !slices.Equal(got, want) {
		t.Fatalf("the waiters ran in the order %v, want the order they queued %v", got, want)
	}
	acquirers := clitest.Strings(t, root, `SELECT actor FROM events WHERE type = 'lock_acquired' ORDER BY seq`)
	if !slices.Equal(acquirers, append([]string{"holder"}, want...)) {
		t.Errorf("lock_acquired actors: %v", acquirers)
	}
	if r := clitest.Run(t, root, "verify"); r.Code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A queued waiter killed with SIGKILL records nothing, and leaves the
// queue all the same: its process is gone. The next one is served.
func TestQueueKilledWaiterLeavesTheQueue(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gate, order := filepath.Join(t.TempDir(), "go"), filepath.Join(t.TempDir(), "order")
	holder := startGatedHolder(t, ctx, root, "k", gate)
	first := startQueuedWaiter(t, ctx, root, "k", "first", order)
	second := startQueuedWaiter(t, ctx, root, "k", "second", order)
	if got := queueActors(t, root, "k"); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("queue: got %v", got)
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	if got := queueActors(t, root, "k"); !slices.Equal(got, []string{"second"}) {
		t.Fatalf("queue after SIGKILL of the first waiter: got %v, want [second]", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("the second waiter: %v", err)
	}
	data, _ := os.ReadFile(order)
	if got := strings.Fields(string(data)); !slices.Equal(got, []string{"second"}) {
		t.Fatalf("ran: %v, want [second]", got)
	}
}

// A waiter on another host, first in line, is killed with SIGKILL: no
// process probe from here can tell, so it leaves the queue when its place
// is not renewed, within events.WaiterTTL, not at the end of its wait. The
// next waiter gets the lock then.
func TestQueueWaiterKilledOnAnotherHostLeavesWithinItsLease(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gate, order := filepath.Join(t.TempDir(), "go"), filepath.Join(t.TempDir(), "order")
	holder := startGatedHolder(t, ctx, root, "far", gate)
	// Both wait far longer than the test: only the lease can let the
	// second one through.
	far := clitest.Command(ctx, root, "run", "far", "--wait", "10m", "--ttl", "30", "--actor", "far-away", "--",
		"sh", "-c", `echo far-away >> "$ORDER"`)
	far.Env = append(far.Env, "ORDER="+order, "LOCKLEDGER_HOST_ID=far-host")
	if err := far.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { far.Process.Kill(); far.Wait() })
	query := `SELECT request_id FROM events WHERE type = 'acquire_blocked' AND actor = 'far-away' AND CAST(body AS TEXT) LIKE '%"until":%'`
	for deadline := time.Now().Add(30 * time.Second); len(clitest.Strings(t, root, query)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter on far-host is not queued after 30s")
		}
	}
	near := clitest.Command(ctx, root, "run", "far", "--wait", "10m", "--ttl", "30", "--actor", "near", "--",
		"sh", "-c", `echo near >> "$ORDER"`)
	near.Env = append(near.Env, "ORDER="+order)
	if err := near.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { near.Process.Kill(); near.Wait() })
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(queueActors(t, root, "far"), []string{"far-away", "near"}); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queue: got %v, want [far-away near]", queueActors(t, root, "far"))
		}
	}
	if err := far.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	far.Wait()
	// Seen from here, far-host's waiter may still be alive: it stays first.
	if got := queueActors(t, root, "far"); !slices.Equal(got, []string{"far-away", "near"}) {
		t.Fatalf("queue right after SIGKILL of the waiter on another host: got %v, want [far-away near]", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	freed := time.Now()
	// Free, with the dead waiter still first in line: an acquire that does
	// not wait is refused (exit 3, as for a held lock) and told whose turn
	// it is, unless near has already got the lock.
	farID := clitest.Strings(t, root, query)[0]
	r := clitest.Run(t, root, "acquire", "far", "--actor", "impatient")
	if r.Code != 3 {
		t.Fatalf("acquire without --wait on the lock with a queue: exit %d, want 3\n%s", r.Code, r.Stderr)
	}
	t.Logf("acquire without --wait: %s", strings.TrimSpace(r.Stderr))
	refusedBy := clitest.Strings(t, root, `SELECT COALESCE(json_extract(body, '$.reason'), 'holder') FROM events WHERE type = 'acquire_blocked' AND actor = 'impatient'`)
	nearFirst := clitest.Strings(t, root, `SELECT seq FROM events WHERE type = 'lock_acquired' AND actor = 'near'
		AND seq < (SELECT seq FROM events WHERE type = 'acquire_blocked' AND actor = 'impatient')`)
	if len(nearFirst) == 0 && (!slices.Equal(refusedBy, []string{"queue"}) || !strings.Contains(r.Stderr, farID)) {
		t.Errorf("acquire refused by %v with %q, want reason queue naming the head of the queue, %s", refusedBy, r.Stderr, farID)
	}
	done := make(chan error, 1)
	go func() { done <- near.Wait() }()
	// Generous against a busy machine, and far below the waits of 10m.
	bound := events.WaiterTTL + 45*time.Second
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("near: %v", err)
		}
	case <-time.After(bound):
		near.Process.Kill()
		<-done
		t.Fatalf("the waiter behind a dead one on another host did not run within %s of the lock's release (WaiterTTL %s); queue %v",
			bound, events.WaiterTTL, queueActors(t, root, "far"))
	}
	t.Logf("near ran %s after the lock was freed (WaiterTTL %s)", time.Since(freed).Round(time.Millisecond), events.WaiterTTL)
	data, _ := os.ReadFile(order)
	if got := strings.Fields(string(data)); !slices.Equal(got, []string{"near"}) {
		t.Fatalf("ran: %v, want [near]", got)
	}
}
