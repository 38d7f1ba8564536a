package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestAPrunedLedgerRestoredFromABackupIsNoDeadEnd: a pruned SQLite ledger
// restored from a backup is refused by this host's writers; project
// --accept-rollback alone says which archive its replay needs, and with
// it goes on from the restored ledger, which stays pruned, verifies, and
// takes writes again.
func TestAPrunedLedgerRestoredFromABackupIsNoDeadEnd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := []string{"LOCKLEDGER_CHECKPOINT_EVERY=4"}
	run := func(want int, args ...string) clitest.Result {
		t.Helper()
		return clitest.MustWith(t, want, root, env, args...)
	}
	pid := strconv.Itoa(os.Getpid())
	run(0, "acquire", "kept", "--actor", "tester", "--pid", pid)
	for i := range 6 {
		req := "r" + strconv.Itoa(i)
		run(0, "acquire", "app", "--actor", "tester", "--request-id", req, "--pid", pid)
		run(0, "release", "app", "--request-id", req)
	}
	arch := filepath.Join(t.TempDir(), "old.jsonl")
	run(0, "archive", "--before", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", arch)
	run(0, "prune", "--archive", arch)
	restore := restoreLedgerFile(t, root)
	for i := range 2 {
		req := "later" + strconv.Itoa(i)
		run(0, "acquire", "app", "--actor", "tester", "--request-id", req, "--pid", pid)
		run(0, "release", "app", "--request-id", req)
	}
	restore()

	if r := run(1, "acquire", "other", "--pid", pid); !strings.Contains(r.Stderr, "an older state of it") {
		t.Errorf("a writer on the restored ledger: %s", r.Stderr)
	}
	r := run(1, "project", "--accept-rollback")
	if !strings.Contains(r.Stderr, "--archive") {
		t.Errorf("project --accept-rollback of the pruned ledger does not say what it needs: %s", r.Stderr)
	}
	if r := run(2, "project", "--accept-rollback", "--archive", arch, "--archive", arch); !strings.Contains(r.Stderr, "--archive") {
		t.Errorf("archives that are not the ledger's log from seq 1 are not refused as bad input: %s", r.Stderr)
	}
	r = run(0, "project", "--accept-rollback", "--archive", arch, "--json")
	if !strings.Contains(r.Stdout, `"rollback_accepted"`) || !strings.Contains(r.Stdout, `"held":1`) {
		t.Errorf("project --accept-rollback --archive: %s", r.Stdout)
	}
	run(0, "acquire", "other", "--pid", pid)
	run(0, "verify")
	if r := run(1, "project"); !strings.Contains(r.Stderr, "pruned") {
		t.Errorf("the ledger does not stay pruned: %s", r.Stderr)
	}
}

// TestAPrunedLedgerRestoredBetweenTwoPrunesGoesOnFromTheArchiveItRecorded:
// a backup taken between two prunes records the first prune as its last:
// its replay needs that prune's archive alone. Given with the second
// prune's archive too (which runs past where the restored live log
// starts), or given only the second's, or another ledger's archive, the
// run is refused as bad input (exit 2) and accepts nothing; given the
// first alone, it goes on from the restore, and writes follow.
func TestAPrunedLedgerRestoredBetweenTwoPrunesGoesOnFromTheArchiveItRecorded(t *testing.T) {
	t.Parallel()
	env := []string{"LOCKLEDGER_CHECKPOINT_EVERY=4"}
	pid := strconv.Itoa(os.Getpid())
	before := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	// pruned writes n cycles to a ledger at root, archives them into a new
	// file and prunes it; it returns the file.
	pruned := func(root string, from, n int) string {
		t.Helper()
		for i := from; i < from+n; i++ {
			req := "r" + strconv.Itoa(i)
			clitest.MustWith(t, 0, root, env, "acquire", "app", "--actor", "tester", "--request-id", req, "--pid", pid)
			clitest.MustWith(t, 0, root, env, "release", "app", "--request-id", req)
		}
		arch := filepath.Join(t.TempDir(), "archive.jsonl")
		clitest.MustWith(t, 0, root, env, "archive", "--before", before, "-o", arch)
		clitest.MustWith(t, 0, root, env, "prune", "--archive", arch)
		return arch
	}
	root := t.TempDir()
	clitest.MustWith(t, 0, root, env, "acquire", "kept", "--actor", "tester", "--pid", pid)
	first := pruned(root, 0, 6)
	restore := restoreLedgerFile(t, root)
	second := pruned(root, 6, 6)
	other := pruned(t.TempDir(), 0, 6)
	restore()

	for _, archives := range [][]string{{first, second}, {second}, {other}} {
		args := []string{"project", "--accept-rollback"}
		for _, a := range archives {
			args = append(args, "--archive", a)
		}
		if r := clitest.MustWith(t, 2, root, env, args...); !strings.Contains(r.Stderr, "--archive") {
			t.Errorf("%v: the refusal does not name --archive: %s", archives, r.Stderr)
		}
	}
	clitest.MustWith(t, 1, root, env, "acquire", "other", "--pid", pid) // nothing was accepted
	r := clitest.MustWith(t, 0, root, env, "project", "--accept-rollback", "--archive", first, "--json")
	if !strings.Contains(r.Stdout, `"rollback_accepted"`) || !strings.Contains(r.Stdout, `"held":1`) {
		t.Errorf("project --accept-rollback --archive with the archive the restore recorded: %s", r.Stdout)
	}
	clitest.MustWith(t, 0, root, env, "acquire", "other", "--pid", pid)
	clitest.MustWith(t, 0, root, env, "verify", "--archive", first)
}
