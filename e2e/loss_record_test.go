package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// run loses its lock at its deadline while the ledger's writer is held
// elsewhere (the database away): it exits 5 at once, without the loss in
// the ledger, and the loss is recorded as soon as the writer is free again.
func TestRunRecordsItsLossOnceTheLedgerAnswersAgain(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clitest.Race(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := clitest.Command(ctx, root, "run", "deploy", "--ttl", "3s", "--", "sh", "-c", `echo "$LOCKLEDGER_REQUEST_ID"; exec sleep 60`)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("run printed nothing: %v", c.Wait())
	}
	rid := lines.Text()
	release := holdWriter(t, root)
	for lines.Scan() {
	}
	if code := exitOf(t, c); code != 5 {
		t.Fatalf("run exited %d when no heartbeat got through, want 5\n%s", code, stderr.String())
	}
	lost := func() int {
		return len(clitest.Strings(t, root, fmt.Sprintf(
			`SELECT seq FROM events WHERE type = 'heartbeat_failed' AND request_id = '%s' AND CAST(body AS TEXT) LIKE '%%"lock_lost":true%%'`, rid)))
	}
	if n := lost(); n != 0 {
		t.Fatalf("%d losses recorded while the writer was held", n)
	}

	release()
	awaitLossRecorded(t, root, rid)
	m := regexp.MustCompile(`recorder_pid=(\d+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("run does not say that its loss is recorded later:\n%s", stderr.String())
	}
	recorder, _ := strconv.Atoi(m[1])
	awaitGone(t, recorder)
	if n := lost(); n != 1 {
		t.Fatalf("the loss recorded %d times, want once", n)
	}
	// As a heartbeat that found the loss records it: the envelope is the
	// run's holding, recorded_by the process that wrote it.
	var pid, byPID int
	if err := clitest.DB(t, root).QueryRow(`SELECT json_extract(body, '$.pid'), json_extract(body, '$.recorded_by.pid')
		FROM events WHERE type = 'heartbeat_failed' AND request_id = ?`, rid).Scan(&pid, &byPID); err != nil {
		t.Fatal(err)
	}
	if pid != c.Process.Pid || byPID != recorder {
		t.Fatalf("the loss is recorded under pid %d, recorded_by pid %d; want the run's pid %d, recorded_by the recorder's (%d)",
			pid, byPID, c.Process.Pid, recorder)
	}
	assertChain(t, root)
}

// awaitLossRecorded waits until the loss of request rid is in the ledger
// and the process run left to record it has exited, so that nothing writes
// under root any more.
func awaitLossRecorded(t *testing.T, root, rid string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		recorded := len(clitest.Strings(t, root, fmt.Sprintf(
			`SELECT seq FROM events WHERE type = 'heartbeat_failed' AND request_id = '%s' AND CAST(body AS TEXT) LIKE '%%"lock_lost":true%%'`, rid))) > 0
		if recorded && len(recorders(rid)) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loss of %s recorded: %v; its recorders still running: %v", rid, recorded, recorders(rid))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recorders are the running processes recording the loss of request rid.
func recorders(rid string) []int {
	dirs, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("__record-loss\x00")) && bytes.Contains(b, []byte("\x00"+rid+"\x00")) && !gone(pid) {
			out = append(out, pid)
		}
	}
	return out
}
