package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestArchivePruneVerifyThroughTheCLI: archive below a checkpoint, prune,
// and the ledger still verifies, plain and with the archive; a wrong
// boundary, an archive pruned twice and an edited archive are refused.
func TestArchivePruneVerifyThroughTheCLI(t *testing.T) {
	t.Parallel()
	archivePruneVerify(t, []string{"LOCKLEDGER_CHECKPOINT_EVERY=4"}, "after VACUUM")
}

// TestArchivePruneVerifyThroughTheCLIOnPostgres: the same on PostgreSQL,
// where prune reports the events table's size and leaves VACUUM FULL to
// the operator.
func TestArchivePruneVerifyThroughTheCLIOnPostgres(t *testing.T) {
	t.Parallel()
	archivePruneVerify(t, []string{"LOCKLEDGER_CHECKPOINT_EVERY=4", "LOCKLEDGER_DATABASE_URL=" + pgtest.NewDatabase(t)}, "VACUUM FULL events")
}

func archivePruneVerify(t *testing.T, env []string, sizes string) {
	root := t.TempDir()
	run := func(want int, args ...string) clitest.Result {
		t.Helper()
		return clitest.MustWith(t, want, root, env, args...)
	}
	pid := strconv.Itoa(os.Getpid())
	for i := range 6 {
		req := "r" + strconv.Itoa(i)
		run(0, "acquire", "app", "--actor", "tester", "--request-id", req, "--pid", pid)
		run(0, "release", "app", "--request-id", req)
	}
	dir := t.TempDir()
	arch := filepath.Join(dir, "old.jsonl")

	r := run(2, "archive", "--below", "3", "-o", arch)
	if !strings.Contains(r.Stderr, "--below") || !strings.Contains(r.Stderr, "nearest boundaries") {
		t.Fatalf("a seq off the checkpoints: %s", r.Stderr)
	}
	if _, err := os.Stat(arch); err == nil {
		t.Fatal("a refused archive left a file")
	}
	r = run(0, "archive", "--before", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", arch)
	m := regexp.MustCompile(`archived seq 1-(\d+) `).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("archive said: %s", r.Stdout)
	}
	last, _ := strconv.ParseInt(m[1], 10, 64)
	if last < 4 {
		t.Fatalf("archived up to seq %d", last)
	}
	run(0, "verify", "--file", arch)

	// A proof of an event the prune archives, made before it, against the
	// head the trust store keeps now.
	id := clitest.DecodeVerify(t, run(0, "verify", "--json")).LedgerID
	cp := filepath.Join(dir, "head-before.checkpoint")
	copyFile(t, keptHead(root, id), cp)
	proof := filepath.Join(dir, "proof.json")
	if err := os.WriteFile(proof, []byte(run(0, "prove", "event", "2", "--checkpoint", cp).Stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	r = run(0, "prune", "--archive", arch)
	if !strings.Contains(r.Stdout, "recorded: ledger_pruned") || !strings.Contains(r.Stdout, "bytes before") || !strings.Contains(r.Stdout, sizes) {
		t.Fatalf("prune said: %s", r.Stdout)
	}
	v := clitest.DecodeVerify(t, run(0, "verify", "--json"))
	if v.FirstSeq != last+1 || !v.OK {
		t.Fatalf("plain verify after the prune: ok %v, first seq %d, want %d", v.OK, v.FirstSeq, last+1)
	}
	r = run(0, "verify")
	if !strings.Contains(r.Stdout, "archived below seq "+strconv.FormatInt(last+1, 10)) {
		t.Fatalf("plain verify does not name the boundary: %s", r.Stdout)
	}
	v = clitest.DecodeVerify(t, run(0, "verify", "--json", "--archive", arch))
	if !v.OK || !strings.Contains(strings.Join(v.Notes, " "), "one log") {
		t.Fatalf("verify --archive: ok %v, notes %q", v.OK, v.Notes)
	}
	run(0, "verify-proof", proof)
	r = run(1, "prove", "event", "2", "--checkpoint", cp)
	if !strings.Contains(r.Stderr, "archived") {
		t.Fatalf("prove of an archived event: %s", r.Stderr)
	}
	now := filepath.Join(dir, "head-after.checkpoint")
	copyFile(t, keptHead(root, id), now)
	run(0, "prove", "extends", cp, now)
	r = run(2, "prune", "--archive", arch)
	if !strings.Contains(r.Stderr, "--archive") {
		t.Fatalf("a second prune of the same archive: %s", r.Stderr)
	}
	r = run(0, "who", "app")
	if !strings.Contains(r.Stderr, "archived") {
		t.Fatalf("who over a pruned ledger says nothing of the archive: %s", r.Stderr)
	}

	data, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "edited.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(data), `"actor":"tester"`, `"actor":"mallory"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := clitest.DecodeVerify(t, run(1, "verify", "--json", "--archive", bad)); v.OK {
		t.Fatal("verify --archive took an edited archive")
	}
	// The writers go on from the head.
	run(0, "acquire", "app", "--actor", "tester", "--request-id", "after", "--pid", pid)
	run(0, "verify")

	// Undo: only the archive the prune recorded; then the whole log verifies
	// from the genesis again, and project works.
	run(2, "unprune", "--archive", bad)
	r = run(0, "unprune", "--archive", arch)
	if !strings.Contains(r.Stdout, "recorded: ledger_unpruned") {
		t.Fatalf("unprune said: %s", r.Stdout)
	}
	if v := clitest.DecodeVerify(t, run(0, "verify", "--json")); v.FirstSeq != 1 || !v.Replayed {
		t.Fatalf("verify after the unprune: first seq %d, replayed %v", v.FirstSeq, v.Replayed)
	}
	run(0, "project")
	run(2, "unprune", "--archive", arch)
}
