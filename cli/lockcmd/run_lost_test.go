package lockcmd_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// Past the lease's deadline (2s − 500ms after the send), well within
	// the busy timeout the acquire waits for the database.
	time.Sleep(2500 * time.Millisecond)
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
}
