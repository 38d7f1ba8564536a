package lockcmd_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestRunStartsNoCommandUnderALeaseLostAtItsAcquire: a run whose acquire
// was answered after the lease's deadline (counted from when the request
// was sent: here another program's write kept the ledger busy past
// ttl − margin) has lost the lock before its command starts, and must
// not start it: the command would run when another may hold the lock.
// Before the fix the command started, and was stopped at once ("lock lost;
// stopping the command", command_exit=143).
func TestRunStartsNoCommandUnderALeaseLostAtItsAcquire(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	clitest.Must(t, 0, root, "run", "slow", "--", "true") // the root and its ledger
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(root, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "started")
	c := clitest.Command(ctx, root, "run", "slow", "--ttl", "2s", "--", "touch", marker)
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Past the lease's deadline (2s − 500ms after the send, which a loaded
	// machine may make a few seconds after the start), well within the
	// busy timeout (10 s) the acquire waits for the database.
	time.Sleep(6 * time.Second)
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 5 {
		t.Errorf("run under a lease lost at its acquire exited %d, want 5:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil { // touch may be stopped before it runs: the log says it started
		t.Errorf("run started its command under a lease lost at its acquire:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "stopping the command") || !strings.Contains(stderr.String(), "lock lost before the command started") {
		t.Errorf("run does not say the command was not started:\n%s", stderr.String())
	}
	// The loss's recorder outlives run, and writes in the root until it
	// has recorded it: awaited before the root is removed.
	if m := regexp.MustCompile(`recorder_pid=(\d+)`).FindStringSubmatch(stderr.String()); m != nil {
		pid, _ := strconv.Atoi(m[1])
		deadline := time.Now().Add(30 * time.Second)
		for unix.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("the loss's recorder (pid %d) is still running 30 s after run exited", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
